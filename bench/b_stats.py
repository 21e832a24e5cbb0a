"""Benchmark 5: GET /v1/history/stats?kind=hugepages.resize over 1 million recorded batches.
The daemon is started once on a fresh database so that it applies its migrations, stopped, the
batches are generated straight into its schema with SQLite, then the daemon is started again on
that file and the query is timed."""
import random
import sqlite3
import time

import benchlib as bl

STATS = "/v1/history/stats?kind=hugepages.resize"
GOAL_MS = 200.0


def run(ctx):
    title = "GET %s over %s batches" % (STATS, "{:,}".format(ctx.stats_rows))
    d = None
    try:
        work = ctx.workdir_for("stats")
        d = bl.Daemon(ctx.bin_dir, work, tcp=False).start()
        st, _, raw, _ = d.request("GET", STATS)
        if st != 200:
            return [bl.unavailable("stats", title, "GET %s answers %s" % (STATS, bl.describe(st, raw)))]
        d.stop()
        gen_s, half_ns, half_rows = generate(d.db, ctx.stats_rows)
        d.start()
        conn = d.connection(timeout=120)
        rows = [_timed(ctx, conn, STATS, ctx.stats_rows, title, "stats.query", gen_s)]
        # The same with every filter: size, node and a time window holding the newer half.
        q = "%s&size=2M&node=0&since=%d" % (STATS, half_ns)
        t2 = "GET ...&size=2M&node=0&since=<half> over %s batches (%s match)" % (
            "{:,}".format(ctx.stats_rows), "{:,}".format(half_rows))
        try:
            rows.append(_timed(ctx, conn, q, half_rows, t2, "stats.query_filtered", gen_s))
        except bl.BenchError as e:
            rows.append(bl.unavailable("stats.query_filtered", t2, str(e)))
        conn.close()
        return rows
    except bl.BenchError as e:
        return [bl.unavailable("stats", title, str(e))]
    finally:
        if d:
            d.stop()


def _timed(ctx, conn, path, expect, title, id, gen_s):
    times, body = [], None
    for _ in range(ctx.stats_queries):
        t0 = time.perf_counter_ns()
        st, _, raw, body = bl.http_call(conn, "GET", path)
        times.append((time.perf_counter_ns() - t0) / 1e6)
        if st != 200:
            raise bl.BenchError("GET %s answered %d: %s" % (path, st, raw[:200]))
    n = _sample_count(body)
    if n != expect:
        raise bl.BenchError("GET %s counts %r samples, %d expected" % (path, n, expect))
    return bl.row(id, title, "ms", times, goal="< %g ms" % GOAL_MS, goal_check=lambda m, _r: m < GOAL_MS,
                  method="wall time of GET over one keep-alive Unix-socket connection, median of %d queries "
                         "(the first included); rows generated in %.1f s with Python's sqlite3"
                         % (ctx.stats_queries, gen_s),
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
