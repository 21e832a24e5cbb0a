"""Benchmark: apply time of a knob-only profile (issue 18) beside the same writes by a shell script.

The profile sets six knobs (THP defrag, khugepaged's defrag, pages_to_scan, scan and alloc sleeps,
vm.compaction_proactiveness) to values other than the kernel's; before every timed run the six are
put back to what they were (untimed, by direct writes), so every run writes all six.
  mempolicyd  POST /v1/profile {"name": "bench"} (validation, the profile.apply job: the knobs'
              transaction through the privileged helper, read back, recorded) and GET
              /v1/jobs/ID?wait= until it ends, over the Unix socket, timed around both
  reference   `sh bench.sh`: six `echo VALUE > FILE` lines, timed around fork+exec+wait
Once the profile is in force, the untimed reset is six foreign writes the daemon's drift watcher
records (six drift sightings, on_drift report): before the timer starts, on either side, the bench
waits until the daemon's drift counter (/metrics, mempolicyd_profile_drift_total) has counted all
six, so that neither timed run shares the CPUs with the watcher's handling of the reset. A daemon
that answers the POST with the job ended (a knob-only apply run within the request) needs no
GET /v1/jobs/ID?wait=; one that answers it queued is waited for so.
Rounds alternate (which goes first too), medians and paired ratios as bench/README.md says. The
knobs are restored in a finally (Ctrl-C included). Goal: ratio <= 1.1."""
import os
import subprocess
import time

import benchlib as bl

GOAL_RATIO = 1.1
WAIT_S = 10
DRIFT_WAIT_S = 5   # the reset's six drifts are recorded within milliseconds where fanotify works
THP = "/sys/kernel/mm/transparent_hugepage/"
KNOBS = [  # (name, file, how to make a value other than v)
    ("thp.defrag", THP + "defrag", lambda v: "defer" if v != "defer" else "madvise"),
    ("thp.khugepaged.defrag", THP + "khugepaged/defrag", lambda v: "0" if v == "1" else "1"),
    ("thp.khugepaged.pages_to_scan", THP + "khugepaged/pages_to_scan", lambda v: str(int(v) + 8)),
    ("thp.khugepaged.scan_sleep_millisecs", THP + "khugepaged/scan_sleep_millisecs", lambda v: str(int(v) + 1)),
    ("thp.khugepaged.alloc_sleep_millisecs", THP + "khugepaged/alloc_sleep_millisecs", lambda v: str(int(v) + 1)),
    ("vm.compaction_proactiveness", "/proc/sys/vm/compaction_proactiveness",
     lambda v: str(int(v) + 1 if int(v) < 100 else int(v) - 1)),
]


def _read(path):
    with open(path) as f:
        t = f.read().strip()
    return t[t.index("[") + 1:t.index("]")] if "[" in t else t


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


def run(ctx):
    title = "apply of a knob-only profile (6 knobs)"
    missing = [f for _, f, _ in KNOBS if not os.path.exists(f)]
    if missing:
        return [bl.unavailable("profile.apply", title, "this kernel lacks %s" % ", ".join(missing))]
    if os.geteuid() != 0:
        return [bl.unavailable("profile.apply", title, "needs root (it writes the real knobs)")]
    orig = {f: _read(f) for _, f, _ in KNOBS}
    want = {f: other(orig[f]) for _, f, other in KNOBS}
    work = ctx.workdir_for("profile")
    pdir = os.path.join(work, "profiles.d")
    os.makedirs(pdir, exist_ok=True)
    os.chmod(work, 0o755)
    os.chmod(pdir, 0o755)
    with open(os.path.join(pdir, "bench.conf"), "w") as f:
        f.write("[knobs]\n" + "".join("%s = %s\n" % (n, want[p]) for n, p, _ in KNOBS))
    script = os.path.join(work, "bench.sh")
    with open(script, "w") as f:
        f.write("".join("echo %s > %s\n" % (want[p], p) for _, p, _ in KNOBS))
    d = None
    applied = [False]   # the profile is in force: the reset's writes are drift the daemon records

    def drift_total():
        st, _, raw, _ = d.request("GET", "/metrics")
        if st != 200:
            raise bl.BenchError("GET /metrics: %s" % bl.describe(st, raw))
        return sum(float(line.rsplit(" ", 1)[1]) for line in raw.decode().splitlines()
                   if line.startswith("mempolicyd_profile_drift_total{"))

    def reset():
        before = drift_total() if applied[0] else 0
        for p, v in orig.items():
            _write(p, v)
        if not applied[0]:
            return
        until = time.monotonic() + DRIFT_WAIT_S
        while (seen := drift_total() - before) < len(KNOBS):
            if time.monotonic() > until:
                raise bl.BenchError("the daemon recorded %d of the reset's %d drifts within %d s"
                                    % (seen, len(KNOBS), DRIFT_WAIT_S))
            time.sleep(0.002)

    def daemon_once():
        reset()
        t0 = time.perf_counter_ns()
        st, _, raw, job = d.request("POST", "/v1/profile", {"name": "bench"})
        if st != 202:
            raise bl.BenchError("POST /v1/profile: %s" % bl.describe(st, raw))
        if job.get("status") in ("queued", "running"):
            st, _, raw, job = d.request("GET", "/v1/jobs/%d?wait=%d" % (job["id"], WAIT_S))
        ms = (time.perf_counter_ns() - t0) / 1e6
        if st not in (200, 202) or job.get("status") != "ok":
            raise bl.BenchError("the profile.apply job: %s" % (job or bl.describe(st, raw)))
        applied[0] = True
        return ms

    def shell_once():
        reset()
        t0 = time.perf_counter_ns()
        p = subprocess.run(["sh", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ms = (time.perf_counter_ns() - t0) / 1e6
        if p.returncode != 0:
            raise bl.BenchError("sh bench.sh exits %d: %s" % (p.returncode, p.stderr.decode()[:160]))
        return ms

    try:
        d = bl.Daemon(ctx.bin_dir, work, tcp=False, args=("--profiles-dir", pdir)).start()
        ds, ss = bl.alternating(2, ctx.profile_rounds, daemon_once, shell_once)
        if any(_read(p) != want[p] for p in want):
            raise bl.BenchError("a run left the knobs other than the profile says")
        method = ("%d rounds alternating (which goes first too), 2 unmeasured; before each run the 6 knobs are "
                  "written back to the kernel's values (untimed) and, once the profile is in force, the daemon's "
                  "drift counter is waited for until it has counted those 6 writes. mempolicyd: POST /v1/profile "
                  "(+ GET /v1/jobs/ID?wait= when the answer is not the ended job) on the Unix socket (privilege "
                  "separation: the helper writes); reference: fork+exec+wait of sh with 6 echo lines"
                  % ctx.profile_rounds)
        return [bl.row("profile.apply", title, "ms", ds, ss, "sh script, same writes", method=method,
                       goal="<= %gx sh" % GOAL_RATIO, goal_check=lambda _m, r: r is not None and r <= GOAL_RATIO)]
    except bl.BenchError as e:
        return [bl.unavailable("profile.apply", title, str(e))]
    finally:
        if d:
            d.stop()
        applied[0] = False   # no daemon to wait for any more
        reset()
