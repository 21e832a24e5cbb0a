"""Benchmark: one knob change on an idle daemon (issue 22, `knob.put`). What `mempolicyctl knob set`
costs once the client is running: a new Unix-socket connection, PUT
/v1/knobs/thp.khugepaged.pages_to_scan with the value it has plus or minus one, the whole answer
read; beside the write itself as the daemon's helper makes it (open, read the old value, write the
new one, read it back, close). Rounds alternate change, write; the knob is restored at the end."""
import os
import time

import benchlib as bl

KNOB = "thp.khugepaged.pages_to_scan"
KNOB_FILE = "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"
GOAL_MS = 0.5
ROUNDS = 40
WARMUP = 5


def _put(sock_path, value):
    """One PUT on a new connection: the wall time in ms to the answer's last byte, its status line."""
    body = b'{"value":%d}' % value
    req = (b"PUT /v1/knobs/" + KNOB.encode() + b" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)) + body
    ms, got = bl.unix_request(sock_path, req)
    return ms, got.split(b"\r\n", 1)[0]


def _write(value):
    """The write by itself, as knob_write does it with its read-back."""
    t0 = time.perf_counter_ns()
    fd = os.open(KNOB_FILE, os.O_RDWR)
    try:
        os.pread(fd, 64, 0)
        os.write(fd, b"%d" % value)
        os.pread(fd, 64, 0)
    finally:
        os.close(fd)
    return (time.perf_counter_ns() - t0) / 1e6


def run(ctx):
    title = "one knob PUT on an idle daemon, new Unix connection"
    if not os.access(KNOB_FILE, os.W_OK):
        return [bl.unavailable("knob.put", title, KNOB_FILE + " is not writable here")]
    with open(KNOB_FILE) as f:
        orig = int(f.read())
    base = max(orig - 1, 1)   # the knob's minimum is 1 here: base and base + 1 stay in range
    d = None
    try:
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("knobput"), tcp=False).start()
        ds, ws = [], []
        for i in range(WARMUP + ROUNDS):
            ms, status = _put(d.socket, base + (i & 1))
            if b" 200 " not in status + b" ":
                raise bl.BenchError("PUT /v1/knobs/%s answered %r" % (KNOB, status))
            wms = _write(base + (i & 1))
            if i >= WARMUP:
                ds.append(ms)
                ws.append(wms)
        method = ("%d rounds (after %d unmeasured), alternating: a new Unix connection, a raw PUT "
                  "/v1/knobs/%s {\"value\": v} with Connection: close, timed from connect to the "
                  "daemon's close; then the write itself from the harness (open, pread, write, pread, "
                  "close of %s); v alternates between two values; the daemon records each change in "
                  "its database (on the same disk as the scratch directory)" % (ROUNDS, WARMUP, KNOB, KNOB_FILE))
        return [bl.row("knob.put", title, "ms", ds, ws, "the write itself", goal="<= %g ms" % GOAL_MS,
                       goal_check=lambda dm, _r: dm <= GOAL_MS, method=method)]
    except (bl.BenchError, OSError) as e:
        return [bl.unavailable("knob.put", title, str(e))]
    finally:
        if d:
            d.stop()
        with open(KNOB_FILE, "w") as f:
            f.write(str(orig))
