"""Benchmark 7: placement read of a process with 100 000 mappings: `GET /v1/processes/{pid}` beside
`numastat -p PID` on the same process in the same run (issue 8).

The process is tests/e2e/placement_child.py maps:N: N pages of one mapping whose protection
alternates page by page, so the kernel keeps N VMAs (every other one with a resident page).
vm.max_map_count is raised for it (65530 by default) and put back afterwards."""
import os
import shutil
import subprocess
import sys
import time

import benchlib as bl

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "..", "tests", "e2e", "placement_child.py")
MAX_MAP = "/proc/sys/vm/max_map_count"


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


def run(ctx):
    title = "placement of a process with %d mappings" % ctx.proc_mappings
    numastat = shutil.which("numastat")
    if not numastat:
        return [bl.unavailable("proc.placement", title, "numastat (package numactl) is not installed")]
    d = child = None
    old_max = None
    try:
        with open(MAX_MAP) as f:
            old_max = f.read().strip()
        if int(old_max) < ctx.proc_mappings + 1000:
            with open(MAX_MAP, "w") as f:
                f.write(str(ctx.proc_mappings + 1000))
        child = subprocess.Popen([sys.executable, CHILD, "maps:%d" % ctx.proc_mappings], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        if not child.stdout.readline():
            raise bl.BenchError("placement_child.py maps:%d failed (exit %s)" % (ctx.proc_mappings, child.wait(10)))
        with open("/proc/%d/maps" % child.pid) as f:
            vmas = sum(1 for _ in f)
        if vmas < ctx.proc_mappings:
            raise bl.BenchError("the process has only %d mappings" % vmas)
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("proc"), tcp=False).start()
        short = "/v1/processes/%d?mappings=false" % child.pid
        full = "/v1/processes/%d" % child.pid
        ctl = [os.path.join(ctx.bin_dir, "mempolicyctl"), "--socket", d.socket, "proc", "show", str(child.pid)]
        ref = [numastat, "-p", str(child.pid)]
        for path in (short, full):
            _, status, raw = _get(d, path)
            if status != 200:
                return [bl.unavailable("proc.placement", title, bl.describe(status, raw))]
        _, p = _wall(ref)
        if p.returncode != 0:
            return [bl.unavailable("proc.placement", title, "`numastat -p` exits %d" % p.returncode)]
        ss, fs, cs, ns, sizes = [], [], [], [], []
        for _ in range(ctx.proc_rounds):
            ns.append(_wall(ref)[0])
            t, _, raw = _get(d, short)
            ss.append(t)
            ns.append(_wall(ref)[0])
            t, _, raw = _get(d, full)
            fs.append(t)
            sizes.append(len(raw))
            ns.append(_wall(ref)[0])
            cs.append(_wall(ctl)[0])
        # Each daemon figure is paired with the numastat run just before it.
        n_short, n_full, n_ctl = ns[0::3], ns[1::3], ns[2::3]
        method = ("a process with %d VMAs (placement_child.py maps:N, %d lines in /proc/PID/maps); "
                  "numastat -p PID wall time (fork+exec+wait, stdout to /dev/null) alternating with the "
                  "daemon, %d rounds; GET timed in the harness from connect to the last byte of the body "
                  "over the Unix socket; mempolicyctl proc show wall time like numastat's"
                  % (ctx.proc_mappings, vmas, ctx.proc_rounds))
        goal = "not slower than numastat -p"
        return [
            bl.row("proc.placement", "GET /v1/processes/{pid}?mappings=false, %d mappings" % ctx.proc_mappings, "ms",
                   ss, n_short, "numastat -p", goal=goal, goal_check=lambda _d, r: r is not None and r <= 1.0,
                   method=method),
            bl.row("proc.placement_full", "GET /v1/processes/{pid} with every mapping (%.1f MB of JSON)"
                   % (bl.median(sizes) / 1e6), "ms", fs, n_full, "numastat -p", method=method),
            bl.row("proc.show_cli", "mempolicyctl proc show, %d mappings" % ctx.proc_mappings, "ms", cs, n_ctl,
                   "numastat -p", goal=goal, goal_check=lambda _d, r: r is not None and r <= 1.0, method=method),
        ]
    except (bl.BenchError, OSError) as e:
        return [bl.unavailable("proc.placement", title, str(e))]
    finally:
        if d:
            d.stop()
        if child:
            child.stdin.close()
            child.wait(30)
        if old_max is not None:
            with open(MAX_MAP, "w") as f:
                f.write(old_max)
