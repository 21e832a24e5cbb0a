"""Benchmark 5: GET /v1/history/stats?kind=hugepages.resize over 1 million recorded batches.
The daemon is started once on a fresh database so that it applies its migrations, stopped, the
batches are generated straight into its schema with SQLite, then the daemon is started again on
that file and the query is timed."""
import os
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
        work = bl.mkworkdir("mpd-bench-stats-")
        d = bl.Daemon(ctx.bin_dir, work, tcp=False).start()
        st, _, raw, _ = d.request("GET", STATS)
        if st != 200:
            return [bl.unavailable("stats", title, "GET %s answers %s" % (STATS, bl.describe(st, raw)))]
        d.stop()
        gen_s = generate(d.db, ctx.stats_rows)
        d.start()
        conn = d.connection(timeout=120)
        times, body = [], None
        for _ in range(ctx.stats_queries):
            t0 = time.perf_counter_ns()
            st, _, raw, body = bl.http_call(conn, "GET", STATS)
            times.append((time.perf_counter_ns() - t0) / 1e6)
            if st != 200:
                raise bl.BenchError("GET %s answered %d: %s" % (STATS, st, raw[:200]))
        conn.close()
        n = _sample_count(body)
        if n != ctx.stats_rows:
            raise bl.BenchError("the stats count %r samples, %d were generated" % (n, ctx.stats_rows))
        return [bl.row("stats.query", title, "ms", times, goal="< %g ms" % GOAL_MS,
                       goal_check=lambda m, _r: m < GOAL_MS,
                       method="wall time of GET over one keep-alive Unix-socket connection, median of %d "
                              "queries (first one included: no warm-up other than the start-up); rows "
                              "generated in %.1f s with Python's sqlite3" % (ctx.stats_queries, gen_s),
                       extra={"response": body})]
    except bl.BenchError as e:
        return [bl.unavailable("stats", title, str(e))]
    finally:
        if d:
            d.stop()


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


def generate(db, nrows):
    """Writes nrows batch rows into the daemon's schema. Filled in once schema/002_jobs.sql exists."""
    raise bl.BenchError("the batch table schema is not known yet")
