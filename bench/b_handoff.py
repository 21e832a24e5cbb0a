"""Benchmark 14: what privilege separation costs a request on the Unix socket, and what a launch's
identity check costs (issue 17, item 2). The default daemon (privilege separation: the serving
process accepts on the Unix socket with libmicrohttpd, the helper is asked only for privileged
acts) against one started with --user root (one process): two daemons at once on private sockets
and databases, both without the seccomp filter (so that only the separation differs: bench 13 is
the filter's cost), a new connection per request, the two alternating. Then the check the helper
makes for every launch (server/priv/identity.c: is the connection it carries a live one of the API
socket, asked of the kernel with unix_diag), timed alone in a small C program built here, beside a
whole launch through the separated daemon."""
import json
import os
import subprocess

import benchlib as bl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REQUEST = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
LAUNCH = json.dumps({"argv": ["/bin/true"], "cwd": "/"}).encode()
LAUNCH_REQUEST = (b"POST /v1/processes HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(LAUNCH), LAUNCH))
IDENT_SOURCES = ("bench/ident_bench.c", "server/priv/identity.c")

METHOD = ("GET /v1/health over the Unix socket on a new connection each time (connect, send, read to the "
          "daemon's close), from Python's socket module; one request to the default daemon (privilege separation: "
          "the serving process accepts, the helper is not on the path) and one to the daemon started with --user root "
          "(one process), which goes first alternating too, both --no-seccomp; wall time from connect to EOF; {n} "
          "each after {warm} unmeasured")
IDENT_METHOD = ("priv_identity (server/priv/identity.c) on a live connection accepted on a listener of its own, "
                "{n} calls after 100 unmeasured, in bench/ident_bench.c built here with cc -O2 (the check the "
                "helper runs for every PRIV_SPAWN: socket type and options, a unix_diag round trip on "
                "NETLINK_SOCK_DIAG, SO_PEERCRED, a poll, SO_PEERGROUPS; 'diag_us' is the round trip alone); the "
                "reference is a whole launch of /bin/true through the separated daemon (POST /v1/processes on a "
                "new Unix connection, to the 201), {launches} of them")


def _uid(pid):
    uid = bl.proc_status(pid, "Uid")
    return int(uid) if uid is not None else None


def _timed(path, raw=REQUEST, want=b"HTTP/1.1 200"):
    ms, got = bl.unix_request(path, raw)
    if not got.startswith(want):
        raise bl.BenchError("the daemon answers %r" % got[:120])
    return ms


def _identity_us(workdir, n):
    exe = os.path.join(workdir, "ident_bench")
    p = subprocess.run(["cc", "-O2", "-std=gnu11", "-D_GNU_SOURCE", "-I", ROOT, "-o", exe] +
                       [os.path.join(ROOT, s) for s in IDENT_SOURCES] + ["-lpthread"], capture_output=True, text=True)
    if p.returncode != 0:
        raise bl.BenchError("building ident_bench failed: %s" % p.stderr[-300:])
    p = subprocess.run([exe, workdir, str(n)], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise bl.BenchError("ident_bench exited %d: %s" % (p.returncode, p.stderr[-300:]))
    return json.loads(p.stdout)


def run(ctx):
    n = 300 if ctx.rounds <= 2 else 2000
    launches = 20 if ctx.rounds <= 2 else 60
    warm = 50
    rows = []
    sep = one = None
    try:
        sep = bl.Daemon(ctx.bin_dir, ctx.workdir_for("handoff-sep"), tcp=False, args=["--no-seccomp"]).start()
        one = bl.Daemon(ctx.bin_dir, ctx.workdir_for("handoff-one"), tcp=False,
                        args=["--user", "root", "--no-seccomp"]).start()
        # Only meaningful as root with the mempolicyd user: otherwise neither is separated.
        if _uid(sep.pid) in (0, None) or _uid(one.pid) != 0:
            raise bl.BenchError("the daemons serve as uid %s and %s (want mempolicyd's and 0: run as root "
                                "with the mempolicyd user)" % (_uid(sep.pid), _uid(one.pid)))
        a, b = bl.alternating(warm, n, lambda: _timed(sep.socket), lambda: _timed(one.socket))
        m = METHOD.format(n=n, warm=warm)
        rows.append(bl.row("handoff.p50", "a request on a new Unix connection to the default (separated) daemon vs "
                           "--user root, median", "ms", a, b, ref_name="--user root",
                           goal="<= 1.1x", goal_check=lambda d, r: r is not None and r <= 1.1, method=m))
        rows.append(bl.row("handoff.p99", "... the same, p99 (nearest rank)", "ms", [bl.p99_nearest_rank(a)],
                           [bl.p99_nearest_rank(b)], ref_name="--user root", method=m))
        got = _identity_us(ctx.workdir_for("handoff-ident"), n)
        launch_us = [_timed(sep.socket, LAUNCH_REQUEST, b"HTTP/1.1 201") * 1e3 for _ in range(launches)]
        rows.append(bl.row("handoff.identity", "what a launch's identity check costs the helper (unix_diag and the "
                           "socket's credentials), median, against a whole launch", "us", got["check_us"], launch_us,
                           ref_name="a launch of /bin/true through the helper",
                           method=IDENT_METHOD.format(n=n, launches=launches),
                           extra={"diag_us": bl.median(got["diag_us"]),
                                  "check_p99_us": bl.p99_nearest_rank(got["check_us"])}))
    except (bl.BenchError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        rows.append(bl.unavailable("handoff", "a request to the separated daemon vs --user root", str(e)))
    finally:
        for d in (sep, one):
            if d:
                d.stop()
    return rows
