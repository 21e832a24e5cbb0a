"""Benchmark 7: placement read of a process with 100 000 mappings: `GET /v1/processes/{pid}` beside
`numastat -p PID` on the same process in the same run (issues 8, 22).

The process is tests/e2e/placement_child.py maps:N: N pages of one mapping whose protection
alternates page by page, so the kernel keeps N VMAs (every other one with a resident page).
vm.max_map_count is raised for it (65530 by default) and put back afterwards.

A second phase (proc.placement_thp, issue 22) sets THP `always` (put back after, also on failure),
starts anon:65536 maps:N (64 MiB of anonymous memory that gets THP only because of `always`, then
the N mappings), checks that its smaps_rollup shows AnonHugePages > 0, and times the summary
(and the full answer) beside numastat the same way."""
import os
import shutil
import subprocess
import sys
import time

import benchlib as bl

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "..", "tests", "e2e", "placement_child.py")
MAX_MAP = "/proc/sys/vm/max_map_count"
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def _wall(cmd):
    t0 = time.perf_counter_ns()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return (time.perf_counter_ns() - t0) / 1e6, p


def _get(d, path):
    """One GET over the daemon's Unix socket, a new connection each time (as a client would):
    ms until the whole body is read, and the answer."""
    t0 = time.perf_counter_ns()
    c = d.connection()
    try:
        c.request("GET", path)
        r = c.getresponse()
        raw = r.read()   # not parsed: the harness's JSON parsing is no part of the daemon's time
    finally:
        c.close()
    return (time.perf_counter_ns() - t0) / 1e6, r.status, raw


def _start_child(ctx, specs):
    child = subprocess.Popen([sys.executable, CHILD] + specs, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    if not child.stdout.readline():
        raise bl.BenchError("placement_child.py %s failed (exit %s)" % (" ".join(specs), child.wait(10)))
    with open("/proc/%d/maps" % child.pid) as f:
        vmas = sum(1 for _ in f)
    if vmas < ctx.proc_mappings:
        child.stdin.close()
        child.wait(30)
        raise bl.BenchError("the process has only %d mappings" % vmas)
    return child, vmas


def _stop_child(child):
    if child:
        child.stdin.close()
        child.wait(30)


def _rollup_thp_kb(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for ln in f:
            if ln.startswith("AnonHugePages:"):
                return int(ln.split()[1])
    return 0


def _rounds(ctx, d, pid, numastat, with_ctl):
    """Alternating rounds: numastat, summary, numastat, full[, numastat, proc show]. The samples,
    or a reason the row is not available."""
    short = "/v1/processes/%d?mappings=false" % pid
    full = "/v1/processes/%d" % pid
    ctl = [os.path.join(ctx.bin_dir, "mempolicyctl"), "--socket", d.socket, "proc", "show", str(pid)]
    ref = [numastat, "-p", str(pid)]
    for path in (short, full):
        _, status, raw = _get(d, path)
        if status != 200:
            return None, bl.describe(status, raw)
    _, p = _wall(ref)
    if p.returncode != 0:
        return None, "`numastat -p` exits %d" % p.returncode
    ss, fs, cs, ns, sizes = [], [], [], [], []
    for _ in range(ctx.proc_rounds):
        ns.append(_wall(ref)[0])
        t, _, raw = _get(d, short)
        ss.append(t)
        ns.append(_wall(ref)[0])
        t, _, raw = _get(d, full)
        fs.append(t)
        sizes.append(len(raw))
        if with_ctl:
            ns.append(_wall(ref)[0])
            cs.append(_wall(ctl)[0])
    k = 3 if with_ctl else 2
    # Each daemon figure is paired with the numastat run just before it.
    return {"short": ss, "full": fs, "ctl": cs, "n_short": ns[0::k], "n_full": ns[1::k],
            "n_ctl": ns[2::k] if with_ctl else [], "sizes": sizes}, None


def _thp_mode():
    with open(THP_ENABLED) as f:
        text = f.read()
    return text[text.index("[") + 1:text.index("]")]


def _set_thp(mode):
    with open(THP_ENABLED, "w") as f:
        f.write(mode)


def _thp_rows(ctx, d, numastat):
    """proc.placement_thp: the same process plus 64 MiB of anonymous memory, with THP `always`."""
    title = "placement of a process using THP (THP always), %d mappings" % ctx.proc_mappings
    old = child = None
    try:
        old = _thp_mode()
        _set_thp("always")
        child, vmas = _start_child(ctx, ["anon:65536", "maps:%d" % ctx.proc_mappings])
        thp_kb = _rollup_thp_kb(child.pid)
        if thp_kb <= 0:
            raise bl.BenchError("the process's smaps_rollup shows AnonHugePages 0 with THP always")
        got, why = _rounds(ctx, d, child.pid, numastat, with_ctl=False)
        if why:
            return [bl.unavailable("proc.placement_thp", title, why)]
        thp_kb_after = _rollup_thp_kb(child.pid)
        if thp_kb_after <= 0:
            raise bl.BenchError("the process's AnonHugePages fell to 0 during the rounds")
        method = ("THP `always` (was `%s`, put back after); the process is placement_child.py anon:65536 "
                  "maps:%d (%d lines in maps; smaps_rollup AnonHugePages %d kB before the rounds, %d kB "
                  "after); numastat -p PID alternating with the daemon, %d rounds, timed as the other rows"
                  % (old, ctx.proc_mappings, vmas, thp_kb, thp_kb_after, ctx.proc_rounds))
        extra = {"anon_huge_kb": [thp_kb, thp_kb_after], "thp_was": old}
        return [
            bl.row("proc.placement_thp", "GET /v1/processes/{pid}?mappings=false, %d mappings, THP in use"
                   % ctx.proc_mappings, "ms", got["short"], got["n_short"], "numastat -p", goal="<= 1.0x numastat -p",
                   goal_check=lambda _d, r: r is not None and r <= 1.0, method=method, extra=extra),
            bl.row("proc.placement_full_thp", "GET /v1/processes/{pid} with every mapping, THP in use (%.1f MB)"
                   % (bl.median(got["sizes"]) / 1e6), "ms", got["full"], got["n_full"], "numastat -p",
                   method=method, extra=extra),
        ]
    except (bl.BenchError, OSError, ValueError) as e:
        return [bl.unavailable("proc.placement_thp", title, str(e))]
    finally:
        _stop_child(child)
        if old is not None:
            _set_thp(old)


def run(ctx):
    title = "placement of a process with %d mappings" % ctx.proc_mappings
    numastat = shutil.which("numastat")
    if not numastat:
        return [bl.unavailable("proc.placement", title, "numastat (package numactl) is not installed")]
    d = child = None
    old_max = None
    rows = []
    try:
        with open(MAX_MAP) as f:
            old_max = f.read().strip()
        if int(old_max) < ctx.proc_mappings + 1000:
            with open(MAX_MAP, "w") as f:
                f.write(str(ctx.proc_mappings + 1000))
        child, vmas = _start_child(ctx, ["maps:%d" % ctx.proc_mappings])
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("proc"), tcp=False).start()
        got, why = _rounds(ctx, d, child.pid, numastat, with_ctl=True)
        if why:
            return [bl.unavailable("proc.placement", title, why)]
        _stop_child(child)
        child = None
        method = ("a process with %d VMAs (placement_child.py maps:N, %d lines in /proc/PID/maps); "
                  "numastat -p PID wall time (fork+exec+wait, stdout to /dev/null) alternating with the "
                  "daemon, %d rounds; GET timed in the harness from connect to the last byte of the body "
                  "over the Unix socket; mempolicyctl proc show wall time like numastat's"
                  % (ctx.proc_mappings, vmas, ctx.proc_rounds))
        goal = "not slower than numastat -p"
        rows = [
            bl.row("proc.placement", "GET /v1/processes/{pid}?mappings=false, %d mappings" % ctx.proc_mappings, "ms",
                   got["short"], got["n_short"], "numastat -p", goal=goal,
                   goal_check=lambda _d, r: r is not None and r <= 1.0, method=method),
            bl.row("proc.placement_full", "GET /v1/processes/{pid} with every mapping (%.1f MB of JSON)"
                   % (bl.median(got["sizes"]) / 1e6), "ms", got["full"], got["n_full"], "numastat -p",
                   goal="<= 2.0x numastat -p", goal_check=lambda _d, r: r is not None and r <= 2.0, method=method),
            bl.row("proc.show_cli", "mempolicyctl proc show, %d mappings" % ctx.proc_mappings, "ms", got["ctl"],
                   got["n_ctl"], "numastat -p", goal=goal, goal_check=lambda _d, r: r is not None and r <= 1.0,
                   method=method),
        ]
        rows += _thp_rows(ctx, d, numastat)
        return rows
    except (bl.BenchError, OSError) as e:
        return rows + [bl.unavailable("proc.placement", title, str(e))]
    finally:
        if d:
            d.stop()
        _stop_child(child)
        if old_max is not None:
            with open(MAX_MAP, "w") as f:
                f.write(old_max)
