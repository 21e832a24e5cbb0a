"""Benchmark: GET /v1/history?limit=1000 (issue 22, `history.page1000`) beside `sqlite3 -json`
printing the same rows from the same file. The daemon runs on a generated tree (no real knob is
touched) and is given 1000 knob changes through its API, so the page is what a real one is
(knobs.set operations, each with its knob_changes row and summary). Rounds alternate the two."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import benchlib as bl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from faketree import FakeTree  # noqa: E402

PAGE = "/v1/history?limit=1000"
KNOB = "/v1/knobs/thp.khugepaged.pages_to_scan"
GOAL_RATIO = 1.0
# The columns the daemon's page reads (server/store/stmts.h, OP_LIST: OP_COLS and the knob
# changes' summary text), the same order and limit: the rows sqlite3 prints are the page's.
REF_SQL = ("SELECT id, kind, source, actor_uid, actor_name, started_ns, finished_ns, status, errno, error, "
           "(SELECT group_concat(knob || ' ' || ifnull(old, '?') || '→' || ifnull(new, '?') || "
           "CASE WHEN status = 'written' THEN '' ELSE ' ' || status END, ', ') FROM "
           "(SELECT knob, old, new, status FROM knob_changes WHERE op_id = operations.id ORDER BY seq)) "
           "AS summary FROM operations ORDER BY id DESC LIMIT 1001;")


def raw_get(sock_path, path):
    """One GET on a new Unix-socket connection, read to the end of the body without parsing it
    (a JSON parse in Python would be most of what is timed). (status, body bytes)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
        chunks = []
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        s.close()
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = 0
    return status, body


def run(ctx):
    title = "GET %s (1000 knob changes) vs sqlite3 -json of the same rows" % PAGE
    if not shutil.which("sqlite3"):
        return [bl.unavailable("history.page1000", title, "sqlite3 (the command) is not installed")]
    work = ctx.workdir_for("history")
    tree_root = tempfile.mkdtemp(prefix="mpd-bench-tree-", dir="/dev/shm" if os.path.isdir("/dev/shm") else work)
    os.chmod(tree_root, 0o755)   # the daemon's unprivileged side reads the tree
    tree = FakeTree(tree_root, nodes=2, cpuless=())
    d = bl.Daemon(ctx.bin_dir, work, tcp=False, args=["--sysfs-root", tree.sys, "--procfs-root", tree.proc])
    try:
        d.start()
        c = d.connection(timeout=60)
        try:
            for i in range(1000):
                st, _, raw, _ = bl.http_call(c, "PUT", KNOB, {"value": 4097 - (i & 1)})   # 4096 at start
                if st != 200:
                    raise bl.BenchError("PUT %s answered %s" % (KNOB, bl.describe(st, raw)))
        finally:
            c.close()
        st, body = raw_get(d.socket, PAGE)
        if st != 200:
            raise bl.BenchError("GET %s answered %d" % (PAGE, st))
        size = len(body)

        def daemon():
            t0 = time.perf_counter_ns()
            st, b = raw_get(d.socket, PAGE)
            t = (time.perf_counter_ns() - t0) / 1e6
            if st != 200 or len(b) != size:
                raise bl.BenchError("GET %s answered %d with %d bytes (%d before)" % (PAGE, st, len(b), size))
            return t

        def sqlite():
            # sqlite3 opens the daemon's file read-only while the daemon runs (WAL allows it).
            t0 = time.perf_counter_ns()
            p = subprocess.run(["sqlite3", "-readonly", "-json", d.db, REF_SQL], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            t = (time.perf_counter_ns() - t0) / 1e6
            if p.returncode != 0 or p.stdout.count(b'"id":') < 1000:
                raise bl.BenchError("sqlite3 -json: %s" % p.stderr.decode(errors="replace")[:200])
            return t

        n = 10 if ctx.rounds <= 2 else 41
        ds, rs = bl.alternating(3, n, daemon, sqlite)
        return [bl.row("history.page1000", title, "ms", ds, rs, "sqlite3 -json",
                       goal="<= %g x sqlite3 -json" % GOAL_RATIO,
                       goal_check=lambda _m, r: r is not None and r <= GOAL_RATIO,
                       method="%d alternating pairs after 3 unmeasured: the GET on a new Unix-socket connection, "
                              "timed to the last byte of the answer (%d bytes), not parsed; the reference "
                              "runs `sqlite3 -readonly -json DB '<the page's SELECT>'` (process start "
                              "included) on the daemon's file while it runs" % (n, size),
                       extra={"bytes": size})]
    except bl.BenchError as e:
        return [bl.unavailable("history.page1000", title, str(e))]
    finally:
        d.stop()
        shutil.rmtree(tree_root, ignore_errors=True)
