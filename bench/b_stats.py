"""Benchmark 5: GET /v1/history/stats?kind=hugepages.resize over 1 million recorded batches.
The daemon is started once on a fresh database so that it applies its migrations, stopped, the
batches are generated straight into its schema with SQLite, then the daemon is started again on
that file and the query is timed. Then the same file serves a third row: knob writers on a
generated tree, their latency with and without the statistics query running beside them."""
import http.client
import multiprocessing
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import benchlib as bl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from faketree import FakeTree  # noqa: E402

STATS = "/v1/history/stats?kind=hugepages.resize"
GOAL_MS = 200.0


def run(ctx):
    title = "GET %s over %s batches" % (STATS, "{:,}".format(ctx.stats_rows))
    d = None
    try:
        work = ctx.workdir_for("stats")
        # The population is the bench's to set: retention (1 M batches by default) must not trim it.
        d = bl.Daemon(ctx.bin_dir, work, tcp=False, args=KEEP_ALL).start()
        st, _, raw, _ = d.request("GET", STATS)
        if st != 200:
            return [bl.unavailable("stats", title, "GET %s answers %s" % (STATS, bl.describe(st, raw)))]
        d.stop()
        gen_s, half_ns, half_rows = generate(d.db, ctx.stats_rows)
        d.start()
        conn = d.connection(timeout=120)
        rows = [_timed(ctx, conn, STATS, ctx.stats_rows, title, "stats.query", gen_s, ref_db=d.db)]
        # The same with every filter: size, node and a time window holding the newer half.
        q = "%s&size=2M&node=0&since=%d" % (STATS, half_ns)
        t2 = "GET ...&size=2M&node=0&since=<half> over %s batches (%s match)" % (
            "{:,}".format(ctx.stats_rows), "{:,}".format(half_rows))
        try:
            rows.append(_timed(ctx, conn, q, half_rows, t2, "stats.query_filtered", gen_s))
        except bl.BenchError as e:
            rows.append(bl.unavailable("stats.query_filtered", t2, str(e)))
        conn.close()
        d.stop()
        d = None
        rows += writers_beside_scan(ctx, work, ctx.stats_rows)
        return rows
    except bl.BenchError as e:
        return [bl.unavailable("stats", title, str(e))]
    finally:
        if d:
            d.stop()


KNOB = "/v1/knobs/thp.khugepaged.pages_to_scan"
WRITER_GOAL_MS = 2.0


def _p(xs, pct):
    """Nearest-rank percentile (floor, as mmtests), of unsorted xs."""
    s = sorted(xs)
    return s[max(1, len(s) * pct // 100) - 1]


# Writers and the scanning client are processes, not threads of the harness: as threads they
# shared one interpreter lock, and a writer whose answer had arrived waited for the lock behind the
# others and the scanner, which showed in the writers' p99 as if it were the daemon's.
MP = multiprocessing.get_context("fork")


def _writer(sock, i, deadline, out):
    conn = bl.UnixHTTPConnection(sock)
    mine, n, err = [], 0, None
    try:
        while time.monotonic() < deadline:
            t0 = time.perf_counter_ns()
            st, _, raw, _ = bl.http_call(conn, "PUT", KNOB, {"value": 4096 + (i * 7 + n) % 64})
            mine.append((time.perf_counter_ns() - t0) / 1e6)
            n += 1
            if st != 200:
                err = "PUT %s: %d %s" % (KNOB, st, raw[:120])
                break
    except OSError as e:
        err = "writer: %s" % e
    finally:
        conn.close()
        out.send((mine, err))
        out.close()


def _scanner(d, scan, expect_rows, deadline, out):
    conn = d.connection(timeout=120) if scan == "unix" else http.client.HTTPConnection(
        "127.0.0.1", d.port, timeout=120)
    n, err = 0, None
    try:
        while time.monotonic() < deadline:
            st, _, raw, body = bl.http_call(conn, "GET", STATS)
            if st != 200 or _sample_count(body) != expect_rows:
                err = "GET %s: %d %s" % (STATS, st, raw[:120])
                break
            n += 1
    except OSError as e:
        err = "scanner: %s" % e
    finally:
        conn.close()
        out.send((n, err))
        out.close()


def _write_round(ctx, d, scan, expect_rows):
    """ctx.stats_writers processes PUT a knob in a loop over their own keep-alive connections for
    ctx.stats_write_seconds; with scan ("unix" or "tcp": the listener it uses), one more process GETs
    the statistics in a loop meanwhile. Returns (writer latencies in ms, scans completed, errors)."""
    deadline = time.monotonic() + 0.2 + ctx.stats_write_seconds   # 0.2 s to start them all
    procs, pipes = [], []
    if scan:
        r, w = MP.Pipe(False)
        procs.append(MP.Process(target=_scanner, args=(d, scan, expect_rows, deadline, w)))
        pipes.append(r)
    for i in range(ctx.stats_writers):
        r, w = MP.Pipe(False)
        procs.append(MP.Process(target=_writer, args=(d.socket, i, deadline, w)))
        pipes.append(r)
    for p in procs:
        p.start()
    got = []
    for r in pipes:
        got.append(r.recv() if r.poll(180) else (None, "a benchmark process did not finish"))
    for p in procs:
        p.join(30)
    lat, errors, scans = [], [], 0
    if scan:
        scans, err = got.pop(0)
        if err:
            errors.append(err)
    for mine, err in got:
        lat.extend(mine or [])
        if err:
            errors.append(err)
    return lat, scans or 0, errors


def writers_beside_scan(ctx, work, expect_rows):
    """Writer latency (knob PUTs over the Unix socket, each one history operation with its knob
    change) alone, beside GET /v1/history/stats scanning the batches in a loop over the same
    socket, and beside the same loop over the loopback TCP listener (another libmicrohttpd thread
    pool: what is left is the store and the CPU). Every round runs the three in a rotating order;
    per round the writers' p99 and p50; medians over rounds."""
    kinds = ("none", "unix", "tcp")
    names = {"unix": "the same socket", "tcp": "the TCP listener"}
    title = "knob PUT p99, %d writers, beside a stats scan of %s batches over %%s" % (
        ctx.stats_writers, "{:,}".format(expect_rows))
    # The generated tree on tmpfs, as sysfs is memory: on the scratch directory's disk each knob
    # write truncated a file, and on an ext4 mounted with discard that waited for the device to
    # discard the freed block inside every PUT (perf sched_switch stacks: blkdev_issue_discard
    # under ext4_truncate), which is a cost no real knob has.
    tree_root = tempfile.mkdtemp(prefix="mpd-bench-tree-", dir="/dev/shm" if os.path.isdir("/dev/shm") else work)
    os.chmod(tree_root, 0o755)   # the daemon's unprivileged side reads the tree (privilege separation)
    tree = FakeTree(tree_root, nodes=2, cpuless=())
    d = bl.Daemon(ctx.bin_dir, work, tcp=True, args=["--sysfs-root", tree.sys, "--procfs-root", tree.proc] + KEEP_ALL)
    try:
        d.start()
        st, _, raw, _ = d.request("PUT", KNOB, {"value": 4096})
        if st != 200:
            return [bl.unavailable("stats.writers_p99", title % "the same socket",
                                   "PUT %s answers %s" % (KNOB, bl.describe(st, raw)))]
        _write_round(ctx, d, None, expect_rows)   # unmeasured warm-up
        p99 = {k: [] for k in kinds}
        p50 = {k: [] for k in kinds}
        scans = {k: [] for k in kinds}
        counts = {k: [] for k in kinds}
        for r in range(ctx.stats_write_rounds):
            for k in kinds[r % 3:] + kinds[:r % 3]:
                lat, n, errors = _write_round(ctx, d, None if k == "none" else k, expect_rows)
                if errors:
                    raise bl.BenchError("; ".join(errors[:3]))
                if not lat:
                    raise bl.BenchError("no writer finished a request in a round")
                p99[k].append(_p(lat, 99))
                p50[k].append(_p(lat, 50))
                counts[k].append(len(lat))
                scans[k].append(n)
        base = bl.median(p99["none"])
        rows = []
        for k in ("unix", "tcp"):
            method = ("%d processes PUT %s in a loop over their own keep-alive Unix-socket connections, %g s "
                      "per round; beside them one more process, over %s, GETs %s in a loop (%s scans "
                      "per round); each round also runs the writers alone (the reference), the order "
                      "rotating; per round the nearest-rank percentile of every PUT's wall time; median "
                      "over %d rounds (PUTs per round: %s with the scan, %s alone). Knobs on a generated "
                      "tree on tmpfs." % (ctx.stats_writers, KNOB, ctx.stats_write_seconds, names[k], STATS, scans[k],
                                 ctx.stats_write_rounds, counts[k], counts["none"]))
            rows.append(bl.row("stats.writers_p99_" + k, title % names[k], "ms", p99[k], p99["none"],
                               ref_name="no scan", goal="scan adds < %g ms" % WRITER_GOAL_MS,
                               goal_check=lambda m, _r: m - base < WRITER_GOAL_MS, method=method,
                               extra={"scans_per_round": scans[k]}))
            rows.append(bl.row("stats.writers_p50_" + k, "knob PUT p50, the same rounds", "ms", p50[k],
                               p50["none"], ref_name="no scan", method=method))
        return rows
    except bl.BenchError as e:
        return [bl.unavailable("stats.writers_p99", title % "the same socket", str(e))]
    finally:
        d.stop()
        shutil.rmtree(tree_root, ignore_errors=True)


# The reference of stats.query: SQLite alone walking the same index range (the statement the
# daemon walks, summed instead of returned row by row), from a process started per run: what
# any reader of this schema pays per row, the floor of the row on a busy machine.
REF_SQL = ("SELECT count(*), sum(latency_ns) FROM (SELECT latency_ns FROM batches WHERE kind = 'hugepages.resize' "
           "AND direction = 'grow' ORDER BY latency_ns);")


def _sqlite_walk(db):
    t0 = time.perf_counter_ns()
    p = subprocess.run(["sqlite3", "-readonly", db, REF_SQL], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t = (time.perf_counter_ns() - t0) / 1e6
    if p.returncode != 0:
        raise bl.BenchError("sqlite3: %s" % p.stderr.decode(errors="replace")[:200])
    return t


def _timed(ctx, conn, path, expect, title, id, gen_s, ref_db=None):
    times, refs, body = [], [], None
    for i in range(ctx.stats_queries):
        if ref_db and i % 2:   # alternating which goes first
            refs.append(_sqlite_walk(ref_db))
        t0 = time.perf_counter_ns()
        st, _, raw, body = bl.http_call(conn, "GET", path)
        times.append((time.perf_counter_ns() - t0) / 1e6)
        if st != 200:
            raise bl.BenchError("GET %s answered %d: %s" % (path, st, raw[:200]))
        if ref_db and not i % 2:
            refs.append(_sqlite_walk(ref_db))
    n = _sample_count(body)
    if n != expect:
        raise bl.BenchError("GET %s counts %r samples, %d expected" % (path, n, expect))
    method = ("wall time of GET over one keep-alive Unix-socket connection, median of %d queries "
              "(the first included); rows generated in %.1f s with Python's sqlite3" % (ctx.stats_queries, gen_s))
    if ref_db:
        method += ("; reference, alternating with each query: `sqlite3 -readonly DB '%s'` (the same index range "
                   "walked in latency order by SQLite alone, process start included)" % REF_SQL)
    return bl.row(id, title, "ms", times, refs or None, "sqlite3 walk" if ref_db else None,
                  goal="< %g ms" % GOAL_MS, goal_check=lambda m, _r: m < GOAL_MS, method=method,
                  extra={"response": body})


def _sample_count(body):
    if isinstance(body, dict):
        for k in ("count", "samples", "n"):
            if isinstance(body.get(k), int):
                return body[k]
        for v in body.values():
            n = _sample_count(v)
            if n is not None:
                return n
    return None


BATCHES_PER_OP = 100
# Retention off: the rows a bench generates stay what it measures (docs/DESIGN.md "Every collection
# is bounded").
KEEP_ALL = ["--retain-days", "0", "--retain-operations", "0", "--retain-batches", "0", "--retain-jobs", "0"]


def generate(db, nrows, seed=2):
    """Writes nrows grow batches (BATCHES_PER_OP per operation, 2 MiB pages, node 0) into the
    daemon's operations and batches tables in one transaction. Per-page latencies are log-normal
    around 20 us with a long tail (sigma 1.2), a few batches get fewer pages than asked. Returns
    (seconds it took, the start of the middle operation in ns, how many rows start at or after it)."""
    t0 = time.monotonic()
    rnd = random.Random(seed)
    con = sqlite3.connect(db)
    try:
        cols = {r[1] for r in con.execute("PRAGMA table_info(batches)")}
        if not cols:
            raise bl.BenchError("the daemon's database has no batches table")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("BEGIN")
        nops = (nrows + BATCHES_PER_OP - 1) // BATCHES_PER_OP
        now = time.time_ns()
        first_op = (con.execute("SELECT COALESCE(MAX(id), 0) FROM operations").fetchone()[0]) + 1
        ops = []
        for i in range(nops):
            start = now - (nops - i) * 60 * 10**9
            ops.append((first_op + i, "hugepages.resize", start, start + 30 * 10**9))
        con.executemany("INSERT INTO operations(id, kind, source, started_ns, finished_ns, status) "
                        "VALUES (?, ?, 'api', ?, ?, 'ok')", ops)

        half_ns = ops[nops // 2][2]
        half_rows = max(0, nrows - (nops // 2) * BATCHES_PER_OP)

        def rows():
            n = 0
            for op_id, _kind, start, _fin in ops:
                count = 0
                for seq in range(BATCHES_PER_OP):
                    if n == nrows:
                        return
                    asked = 10
                    got = asked if rnd.random() > 0.02 else rnd.randint(1, asked - 1)
                    lat = max(1000, int(rnd.lognormvariate(9.9, 1.2)))
                    yield (op_id, seq + 1, "hugepages.resize", 2048, 0, "grow", start + seq * 10**6, count,
                           count + asked, count + got, asked, got, lat * got, lat)
                    count += got
                    n += 1
        con.executemany("INSERT INTO batches(op_id, seq, kind, size_kb, node, direction, started_ns, before, "
                        "written, after, requested, achieved, elapsed_ns, latency_ns) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows())
        con.commit()
        con.execute("ANALYZE")
        con.commit()
    except sqlite3.Error as e:
        raise bl.BenchError("generating batches: %s (schema changed?)" % e)
    finally:
        con.close()
    return time.monotonic() - t0, half_ns, half_rows
