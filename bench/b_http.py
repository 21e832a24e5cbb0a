"""Benchmarks 1 and 2: throughput and tail latency of a read endpoint over loopback TCP with wrk,
side by side with nginx serving the same bytes as a static file, and the daemon's RSS idle and
under that load."""
import http.client
import time

import benchlib as bl

METHOD_HTTP = ("wrk -t{threads} -c{conns} -d{dur}s with a Lua done() hook; rps = requests/duration, "
               "p50/p99 from wrk's per-request latency histogram; rounds alternate mempolicyd then nginx "
               "(both running all along, after a {warm}s warm-up each), median of {rounds} rounds; "
               "nginx {workers} workers, access_log off, serving a file holding the daemon's exact body")


# Issue 22's goals, as ratios to nginx: they are set for the knob (bench/run's first endpoint)
# and stated on whatever else --endpoint adds, which is then read against the same bar.
GOALS = {".rps": (">= 1.0x nginx", lambda r: r >= 1.0), ".p50": ("<= 1.2x nginx", lambda r: r <= 1.2),
         ".p99": ("<= 1.5x nginx", lambda r: r <= 1.5)}


def _goal(suffix):
    text, ok = GOALS[suffix]
    return {"goal": text, "goal_check": lambda _d, r: r is not None and ok(r)}


def run(ctx, endpoints):
    """endpoints: [(name, path)]. ctx: bin_dir, workdir, rounds, duration, threads, connections."""
    rows = []
    d = None
    try:
        # wrk's connections all come from 127.0.0.1: the per-address limit (64 by default) must
        # not refuse the load generator's own (plus the harness's one).
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("http"),
                      args=["--max-connections-per-address", str(max(64, ctx.connections) + 8)]).start()
        idle = bl.proc_status_kb(d.pid)
        rows.append(bl.row("rss.idle", "mempolicyd VmRSS idle (after start, one request)", "kB",
                           [idle.get("VmRSS", 0)], method="/proc/PID/status VmRSS once, before any load"))
        for name, path in endpoints:
            rows += _endpoint(ctx, d, name, path)
        time.sleep(1)
        after = bl.proc_status_kb(d.pid)
        rows.append(bl.row("rss.after", "mempolicyd VmRSS idle again (1 s after the last round)", "kB",
                           [after.get("VmRSS", 0)], method="/proc/PID/status VmRSS once"))
        hwm = after.get("VmHWM", 0)
        rows.append(bl.row("rss.hwm", "mempolicyd VmHWM after all HTTP rounds", "kB", [hwm],
                           method="/proc/PID/status VmHWM once, after every wrk round"))
    except bl.BenchError as e:
        rows.append(bl.unavailable("http", "HTTP benchmarks", str(e)))
    finally:
        if d:
            d.stop()
    return rows


def _endpoint(ctx, d, name, path):
    base = "http." + name
    title = "GET %s" % path
    st, hdrs, body, _ = _get_tcp(d.port, path)
    if st != 200:
        why = "GET %s over TCP answers %s" % (path, bl.describe(st, body))
        return [bl.unavailable(base, title, why)]
    ng = bl.Nginx(ctx.workdir_for("nginx-" + name), body, hdrs.get("content-type", "application/json"),
                  workers=ctx.nginx_workers)
    try:
        ng.start()
        st2, _, body2, _ = _get_tcp(ng.port, ng.path)
        if st2 != 200 or body2 != body:
            raise bl.BenchError("nginx does not serve the same body (status %d, %d bytes)" % (st2, len(body2)))
        durl = "http://127.0.0.1:%d%s" % (d.port, path)
        nurl = "http://127.0.0.1:%d%s" % (ng.port, ng.path)
        wd = ctx.workdir_for("wrk")
        kw = dict(threads=ctx.threads, connections=ctx.connections)
        bl.wrk(durl, wd, duration=ctx.warmup, **kw)
        bl.wrk(nurl, wd, duration=ctx.warmup, **kw)
        ds, ns, drss, nrss = [], [], [], []
        for _ in range(ctx.rounds):
            with bl.RssSampler(lambda: [d.pid]) as s:
                ds.append(bl.wrk(durl, wd, duration=ctx.duration, **kw))
            drss.append(s.peak_kb)
            with bl.RssSampler(ng.pids) as s:
                ns.append(bl.wrk(nurl, wd, duration=ctx.duration, **kw))
            nrss.append(s.peak_kb)
    except bl.BenchError as e:
        return [bl.unavailable(base, title, str(e))]
    finally:
        ng.stop()
    method = METHOD_HTTP.format(threads=ctx.threads, conns=ctx.connections, dur=ctx.duration, warm=ctx.warmup,
                                rounds=ctx.rounds, workers=ctx.nginx_workers)
    extra = {"body_bytes": len(body), "errors": {"daemon": [r["errors"] for r in ds],
                                                  "reference": [r["errors"] for r in ns]}}
    return [
        bl.row(base + ".rps", title + " requests/s (%d B body)" % len(body), "req/s", [r["rps"] for r in ds],
               [r["rps"] for r in ns], "nginx", better="higher", method=method, extra=extra, **_goal(".rps")),
        bl.row(base + ".p50", title + " p50 latency", "us", [r["p50_us"] for r in ds], [r["p50_us"] for r in ns],
               "nginx", method=method, **_goal(".p50")),
        bl.row(base + ".p99", title + " p99 latency", "us", [r["p99_us"] for r in ds], [r["p99_us"] for r in ns],
               "nginx", method=method, **_goal(".p99")),
        bl.row("rss.load." + name, "VmRSS peak under wrk load on " + path, "kB", drss, nrss,
               "nginx (master+workers)",
               method="/proc/PID/status VmRSS sampled every 20 ms during each wrk round (nginx: summed over "
                      "master and workers); median over rounds of the per-round peak"),
    ]


def _get_tcp(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        return bl.http_call(c, "GET", path)
    finally:
        c.close()
