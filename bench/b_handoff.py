"""Benchmark 14: what the accept hand-off costs a request (issue 17, item 2). Under privilege
separation the helper accepts on the Unix socket, records the client and passes the connection to
the serving side, which adds it to libmicrohttpd and reports its close; with --user root the one
process accepts itself, as every daemon did before. Two daemons at once on private sockets and
databases, both without the seccomp filter (so that only the accept path differs: bench 13 is the
filter's cost), a new connection per request, the two alternating."""
import socket
import time

import benchlib as bl

REQUEST = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"

METHOD = ("GET /v1/health over the Unix socket on a new connection each time (connect, send, read to the "
          "daemon's close), from Python's socket module; one request to the daemon with privilege separation "
          "(the helper accepts and hands the connection over) and one to the daemon started with --user root "
          "(it accepts itself), which goes first alternating too, both --no-seccomp; wall time from connect "
          "to EOF; {n} each after {warm} unmeasured")


def _uid(pid):
    uid = bl.proc_status(pid, "Uid")
    return int(uid) if uid is not None else None


def _timed(path):
    ms, got = bl.unix_request(path, REQUEST)
    if not got.startswith(b"HTTP/1.1 200"):
        raise bl.BenchError("GET /v1/health answers %r" % got[:80])
    return ms


def run(ctx):
    n = 300 if ctx.rounds <= 2 else 2000
    warm = 50
    rows = []
    sep = one = None
    try:
        sep = bl.Daemon(ctx.bin_dir, ctx.workdir_for("handoff-sep"), tcp=False, args=["--no-seccomp"]).start()
        one = bl.Daemon(ctx.bin_dir, ctx.workdir_for("handoff-one"), tcp=False,
                        args=["--user", "root", "--no-seccomp"]).start()
        # Only meaningful as root with the mempolicyd user: otherwise neither hands anything over.
        if _uid(sep.pid) in (0, None) or _uid(one.pid) != 0:
            raise bl.BenchError("the daemons serve as uid %s and %s (want mempolicyd's and 0: run as root "
                                "with the mempolicyd user)" % (_uid(sep.pid), _uid(one.pid)))
        a, b = bl.alternating(warm, n, lambda: _timed(sep.socket), lambda: _timed(one.socket))
        m = METHOD.format(n=n, warm=warm)
        rows.append(bl.row("handoff.p50", "a request on a new Unix connection, accepted by the helper and handed "
                           "over vs accepted by the serving process, median", "ms", a, b, ref_name="--user root",
                           goal="<= 1.1x", goal_check=lambda d, r: r is not None and r <= 1.1, method=m))
        rows.append(bl.row("handoff.p99", "... the same, p99 (nearest rank)", "ms", [bl.p99_nearest_rank(a)],
                           [bl.p99_nearest_rank(b)], ref_name="--user root", method=m))
    except (bl.BenchError, OSError) as e:
        rows.append(bl.unavailable("handoff", "a request through the accept hand-off vs accepted in process", str(e)))
    finally:
        for d in (sep, one):
            if d:
                d.stop()
    return rows
