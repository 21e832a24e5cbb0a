"""Benchmark 13: what the serving side's seccomp filter costs a request (issue 11): two daemons on
private sockets and databases against the real kernel, both with privilege separation, one with
the filter (the default) and one with --no-seccomp (the reference), their requests alternating so
the machine's load weighs on both alike. Each of the serving side's system calls runs the filter's
BPF program once; the rows say what that adds to a request that reads sysfs."""
import http.client
import time

import benchlib as bl

PATHS = [("knob", "/v1/knobs/thp.enabled"), ("pools", "/v1/hugepages")]

METHOD = ("GET {path} over loopback TCP from Python's http.client, one keep-alive connection per daemon, "
          "alternating one request to the daemon with the filter and one to the daemon started with "
          "--no-seccomp (which goes first alternating too); wall time from the request to the last byte; {n} each after {warm} unmeasured")


def _seccomp(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Seccomp:"):
                return line.split()[1]
    return None


def _timed(conn, path):
    t0 = time.perf_counter_ns()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    ms = (time.perf_counter_ns() - t0) / 1e6
    if r.status != 200:
        raise bl.BenchError("GET %s answers %s" % (path, bl.describe(r.status, body)))
    return ms


def _p99(xs):
    s = sorted(xs)
    return s[max(0, -(-len(s) * 99 // 100) - 1)]


def run(ctx):
    n = 300 if ctx.rounds <= 2 else 3000
    warm = 50
    rows = []
    on = off = None
    try:
        on = bl.Daemon(ctx.bin_dir, ctx.workdir_for("seccomp-on")).start()
        off = bl.Daemon(ctx.bin_dir, ctx.workdir_for("seccomp-off"), args=["--no-seccomp"]).start()
        # Only meaningful with privilege separation (root, the mempolicyd user): else neither filters.
        if (_seccomp(on.pid), _seccomp(off.pid)) != ("2", "0"):
            raise bl.BenchError("the daemons show Seccomp %s and %s (want 2 and 0: run as root with the "
                                "mempolicyd user)" % (_seccomp(on.pid), _seccomp(off.pid)))
        for name, path in PATHS:
            con = http.client.HTTPConnection("127.0.0.1", on.port, timeout=30)
            coff = http.client.HTTPConnection("127.0.0.1", off.port, timeout=30)
            a, b = [], []
            try:
                for i in range(warm + n):
                    if i % 2:   # who goes first alternates too: the second of a pair finds caches warm
                        y, x = _timed(coff, path), _timed(con, path)
                    else:
                        x, y = _timed(con, path), _timed(coff, path)
                    if i >= warm:
                        a.append(x)
                        b.append(y)
            finally:
                con.close()
                coff.close()
            m = METHOD.format(path=path, n=n, warm=warm)
            rows.append(bl.row("seccomp.%s.p50" % name, "GET %s with the seccomp filter vs without, median" % path,
                               "ms", a, b, ref_name="--no-seccomp", method=m))
            rows.append(bl.row("seccomp.%s.p99" % name, "... the same, p99 (nearest rank)", "ms", [_p99(a)],
                               [_p99(b)], ref_name="--no-seccomp", method=m))
    except (bl.BenchError, OSError) as e:
        rows.append(bl.unavailable("seccomp", "request latency with the seccomp filter vs without", str(e)))
    finally:
        for d in (on, off):
            if d:
                d.stop()
    return rows
