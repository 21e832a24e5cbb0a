"""Benchmark 11: GET /metrics scrape time and size with no history and with 1 million recorded
batches (issue 12). The daemon keeps its counters in memory and seeds them once at start
(server/store/metrics_seed.c), so neither the scrape's time nor its size should follow the history.

The batches are generated into the daemon's schema by b_stats.generate (the statistics row's
method), in two steps: first a tenth of them, then the rest, so that the size can be compared at two
populations with the same label sets (same page size, node and direction): a size that grows with
the history shows there, not only against the empty database, whose answer lacks those series."""
import os
import time

import benchlib as bl
import b_stats

PATH = "/metrics"
GOAL_MS = 5.0


def _scrape(conn):
    """One scrape on a keep-alive connection (a Prometheus server keeps its connection): wall time in
    ms from the request to the last byte, and the body."""
    t0 = time.perf_counter_ns()
    conn.request("GET", PATH)
    r = conn.getresponse()
    body = r.read()
    ms = (time.perf_counter_ns() - t0) / 1e6
    if r.status != 200:
        raise bl.BenchError("GET %s answers %s" % (PATH, bl.describe(r.status, body)))
    return ms, body


def _series(body):
    return sum(1 for ln in body.splitlines() if ln and not ln.startswith(b"#"))


def _started(d):
    """Start the daemon; ms until it answers its health probe (includes the metrics seed scan;
    the harness polls every 50 ms, so this is coarse)."""
    t0 = time.perf_counter_ns()
    d.start(timeout=120)
    return (time.perf_counter_ns() - t0) / 1e6


def _batches_in(d, n):
    """How many batches the scrape says were recorded (the histogram's _count lines summed)."""
    st, _, raw, _ = d.request("GET", PATH)
    total = 0
    for ln in raw.splitlines():
        if ln.startswith(b"mempolicyd_hugepages_resize_page_latency_seconds_count{"):
            total += int(float(ln.rsplit(b" ", 1)[1]))
    if st != 200 or total != n:
        raise bl.BenchError("after generating %d batches the scrape counts %d (schema changed?)" % (n, total))


def run(ctx):
    n_scrapes = 50 if ctx.stats_rows < 1000000 else 200
    title = "GET /metrics, %s batches recorded vs none" % "{:,}".format(ctx.stats_rows)
    empty = full = None
    conns = []
    try:
        # Two daemons at once, one on an empty database (the reference) and one on the history;
        # their scrapes alternate, so the machine's load weighs on both alike.
        empty = bl.Daemon(ctx.bin_dir, ctx.workdir_for("metrics-empty"), tcp=False, args=b_stats.KEEP_ALL)
        full = bl.Daemon(ctx.bin_dir, ctx.workdir_for("metrics-full"), tcp=False, args=b_stats.KEEP_ALL)
        start0 = _started(empty)
        full.start()
        full.stop()
        tenth = max(1, ctx.stats_rows // 10)
        b_stats.generate(full.db, tenth, seed=3)
        full.start(timeout=120)
        _batches_in(full, tenth)
        b1 = _scrape(full.connection())[1]
        full.stop()
        gen_s = b_stats.generate(full.db, ctx.stats_rows - tenth, seed=4)[0]
        start_n = _started(full)
        _batches_in(full, ctx.stats_rows)
        conns = [empty.connection(), full.connection()]
        t0, tn = [], []
        for i in range(5 + n_scrapes):   # the first 5 of each unmeasured
            a, b0 = _scrape(conns[0])
            c, bn = _scrape(conns[1])
            if i >= 5:
                t0.append(a)
                tn.append(c)
    except bl.BenchError as e:
        return [bl.unavailable("metrics.scrape", title, str(e))]
    finally:
        for c in conns:
            c.close()
        for d in (empty, full):
            if d:
                d.stop()
    s0, s1, sn = _series(b0), _series(b1), _series(bn)
    method = ("%d scrapes of each of two daemons, one on an empty database and one on the history, "
              "alternating, each over its own keep-alive Unix-socket connection after 5 unmeasured "
              "ones; wall time from request to the last byte (batches generated with Python's sqlite3 "
              "into the schema, %.1f s for the last %d)" % (n_scrapes, gen_s, ctx.stats_rows - tenth))
    sizes = {"bytes": {"0": len(b0), str(tenth): len(b1), str(ctx.stats_rows): len(bn)},
             "series": {"0": s0, str(tenth): s1, str(ctx.stats_rows): sn},
             "start_ms": {"0": start0, str(ctx.stats_rows): start_n}}
    p99 = lambda xs: b_stats._p(xs, 99)  # noqa: E731
    return [
        bl.row("metrics.scrape_p50", title + " (median)", "ms", tn, t0, ref_name="0 batches",
               goal="< %g ms" % GOAL_MS, goal_check=lambda m, _r: m < GOAL_MS, method=method),
        bl.row("metrics.scrape_p99", title + " (p99)", "ms", [p99(tn)], [p99(t0)], ref_name="0 batches",
               goal="< %g ms" % GOAL_MS, goal_check=lambda m, _r: m < GOAL_MS,
               method=method + "; nearest-rank p99 of the scrapes"),
        bl.row("metrics.size", "GET /metrics size, %s batches vs %s (same label sets)" % (
            "{:,}".format(ctx.stats_rows), "{:,}".format(tenth)), "bytes", [len(bn)], [len(b1)],
               ref_name="%d batches" % tenth, goal="no growth with history",
               # Same series, and at most a few digits more per series (counts grow by 10x).
               goal_check=lambda m, _r: sn == s1 and m - len(b1) <= 2 * sn,
               method="body size of the last scrape; series (sample lines): %d with none, %d and %d with "
                      "batches; %d bytes with none (the resize histogram's series only exist once a "
                      "batch was recorded)" % (s0, s1, sn, len(b0)),
               extra=sizes),
    ]
