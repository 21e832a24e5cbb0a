"""Benchmark: apply time of a knob-only profile (issue 18) beside the same writes by a shell script.

The profile sets six knobs (THP defrag, khugepaged's defrag, pages_to_scan, scan and alloc sleeps,
vm.compaction_proactiveness) to values other than the kernel's; before every timed run the six are
put back to what they were (untimed, by direct writes), so every run writes all six.
  mempolicyd  POST /v1/profile {"name": "bench"} (validation, the profile.apply job: the knobs'
              transaction through the privileged helper, read back, recorded), over the Unix
              socket; GET /v1/jobs/ID?wait= as well when the 202 carries the job still running
  reference   `sh bench.sh`: six `echo VALUE > FILE` lines
Each side is timed with the least harness Python has, so that the harness is not what is compared
(bench/README.md section 18, 2026-12-02): the request is raw HTTP/1.1 on a new connection that
asks for Connection: close, timed from connect to the daemon's close (benchlib.unix_request, as
knob.put and handoff are), the answer parsed after; the script is posix_spawn + waitpid, stdout to
/dev/null. The former harness (http.client, whose header parsing alone was ~0.3 ms of an apply,
and subprocess.run with a stderr pipe) is measured too, alternating the same way, as a second row
without a goal, so that both figures come from the same run.
Once the profile is in force, the untimed reset is six foreign writes the daemon's drift watcher
records (six drift sightings, on_drift report): before the timer starts, on either side, the bench
waits until the daemon's drift counter (/metrics, mempolicyd_profile_drift_total) has counted all
six, so that neither timed run shares the CPUs with the watcher's handling of the reset.
Rounds alternate (which goes first too), medians and paired ratios as bench/README.md says. The
knobs are restored in a finally (Ctrl-C included). Goal: ratio <= 1.1."""
import json
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

    body = json.dumps({"name": "bench"}).encode()
    post = (b"POST /v1/profile HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)) + body

    def answered(raw):
        """(status, the job) of a raw answer read to the daemon's close."""
        head, _, text = raw.partition(b"\r\n\r\n")
        try:
            return int(head.split(b" ", 2)[1]), json.loads(text)
        except (IndexError, ValueError):
            raise bl.BenchError("POST /v1/profile: an answer that is not HTTP and JSON: %r" % raw[:160])

    def finished(ms, st, job, raw):
        if st == 202 and job.get("status") in ("queued", "running"):
            t0 = time.perf_counter_ns()
            st, _, raw, job = d.request("GET", "/v1/jobs/%d?wait=%d" % (job["id"], WAIT_S))
            ms += (time.perf_counter_ns() - t0) / 1e6
        if st not in (200, 202) or not job or job.get("status") != "ok":
            raise bl.BenchError("the profile.apply job: %s" % (job or bl.describe(st, raw)))
        applied[0] = True
        return ms

    def daemon_once():
        reset()
        ms, raw = bl.unix_request(d.socket, post)
        st, job = answered(raw)
        return finished(ms, st, job, raw)

    def shell_once():
        reset()
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn("/bin/sh", ["sh", script], os.environ,
                             file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
        _, status = os.waitpid(pid, 0)
        ms = (time.perf_counter_ns() - t0) / 1e6
        if os.waitstatus_to_exitcode(status) != 0:
            p = subprocess.run(["sh", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            raise bl.BenchError("sh bench.sh exits %d: %s" % (p.returncode, p.stderr.decode()[:160]))
        return ms

    def daemon_httpclient_once():
        reset()
        t0 = time.perf_counter_ns()
        st, _, raw, job = d.request("POST", "/v1/profile", {"name": "bench"})
        ms = (time.perf_counter_ns() - t0) / 1e6
        if st != 202:
            raise bl.BenchError("POST /v1/profile: %s" % bl.describe(st, raw))
        return finished(ms, st, job, raw)

    def shell_subprocess_once():
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
        hs, ps = bl.alternating(2, ctx.profile_rounds, daemon_httpclient_once, shell_subprocess_once)
        if any(_read(p) != want[p] for p in want):
            raise bl.BenchError("a run left the knobs other than the profile says")
        method = ("%d rounds alternating (which goes first too), 2 unmeasured; before each run the 6 knobs are "
                  "written back to the kernel's values (untimed) and, once the profile is in force, the daemon's "
                  "drift counter is waited for until it has counted those 6 writes. mempolicyd: POST /v1/profile "
                  "(+ GET /v1/jobs/ID?wait= when the answer is not the ended job) on the Unix socket (privilege "
                  "separation: the helper writes), %s; reference: sh with 6 echo lines, %s")
        return [bl.row("profile.apply", title, "ms", ds, ss, "sh script, same writes",
                       method=method % (ctx.profile_rounds, "raw HTTP/1.1 with Connection: close, timed from connect "
                                        "to the daemon's close", "posix_spawn + waitpid"),
                       goal="<= %gx sh" % GOAL_RATIO, goal_check=lambda _m, r: r is not None and r <= GOAL_RATIO),
                bl.row("profile.apply_httpclient", title + ", the former harness", "ms", hs, ps,
                       "sh script, subprocess.run",
                       method=method % (ctx.profile_rounds, "Python's http.client", "subprocess.run with a stderr pipe"))]
    except bl.BenchError as e:
        return [bl.unavailable("profile.apply", title, str(e))]
    finally:
        if d:
            d.stop()
        applied[0] = False   # no daemon to wait for any more
        reset()
