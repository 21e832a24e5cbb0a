#!/usr/bin/env python3
"""The per-node figures of docs/reference/fleet.md, measured: run it (as root, holding the test lock:
it starts daemons) and it prints the table and the fleet arithmetic the page quotes.

  flock /tmp/mpd-test.lock tools/fleet-figures.py [--bin bin] [--json]

For each machine shape — a generated sysfs tree (tests/e2e/faketree.py) of 2 and of 8 NUMA nodes
with 2 hugetlb sizes (2M, 1G), and this machine's real kernel (read only) — it starts the daemon as
the DaemonSet runs it (--log-format json, --log-level info, --node-labels-file) and measures:
  series       lines of GET /metrics that are samples (not # HELP/# TYPE), idle and "busy": after
               one grow and one shrink of every pool of every size and node (so that every series
               of the resize histogram exists) and a knob change (generated trees only: the real
               kernel's pools are not touched)
  scrape bytes the body of GET /metrics, in the 0.0.4 text format and in OpenMetrics 1.0 (what
               Prometheus asks for first)
  label bytes  the NFD labels file, and its label count
  log lines    JSON lines the daemon writes per operation (a knob set, a resize job) and per read
               (GET /metrics, GET /v1/health, GET /v1/profile), and their mean size
Then, from those, what a 10,000-node fleet costs at the stated rates (RATES below)."""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

# The stated rates of the fleet arithmetic (docs/reference/fleet.md says why each).
FLEET_NODES = 10000
SCRAPE_S = 30            # the scrape interval
NPD_S = 60               # the NPD plugin's invoke_interval (npd/mempolicyd-drift.json)
OPS_PER_DAY = 24 + 10    # one scheduled resize an hour, ten knob or profile changes a day
BYTES_PER_SAMPLE = 2.0   # Prometheus' storage documentation: 1-2 bytes per sample on disk
OM = "application/openmetrics-text;version=1.0.0"


def sample_lines(text):
    return [l for l in text.splitlines() if l and not l.startswith("#")]


def log_lines(d, since):
    with open(d.log) as f:
        lines = f.read().splitlines()[since:]
    for l in lines:
        json.loads(l)   # --log-format json: every line is one object, or the figure is wrong
    return lines


def count_log(d):
    with open(d.log) as f:
        return len(f.read().splitlines())


def families(lines):
    """Series per metric family (a histogram's _bucket, _sum and _count are one), largest first."""
    by = {}
    for l in lines:
        name = l.split("{", 1)[0].split(" ", 1)[0]
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                name = name[:-len(suffix)]
        by[name] = by.get(name, 0) + 1
    return sorted(by.items(), key=lambda kv: -kv[1])


def scrape(d):
    text = d.get("/metrics").raw
    om = d.request("GET", "/metrics", headers={"Accept": OM}).raw
    lines = sample_lines(text)
    # What a fleet Prometheus keeps when it drops the resize histogram's buckets at scrape
    # (metric_relabel_configs, docs/reference/fleet.md): the series and the bytes without them.
    kept = [l for l in om.splitlines() if not l.startswith("mempolicyd_hugepages_resize_page_latency_seconds_bucket")]
    return {"series": len(lines), "bytes": len(text.encode()), "bytes_om": len(om.encode()),
            "largest": families(lines)[:4], "series_no_buckets": len(sample_lines("\n".join(kept))),
            "bytes_om_no_buckets": len("\n".join(kept).encode()) + 1}


def measure(name, tree, numa_nodes, sizes):
    from lib import Daemon
    from test_process_migrate import wait_job

    work = tempfile.mkdtemp(prefix="mpd-fleet-")
    os.chmod(work, 0o755)
    labels = os.path.join(work, "features.d", "mempolicyd")
    os.makedirs(os.path.dirname(labels))
    d = Daemon(tree, ["--log-format", "json", "--log-level", "info", "--node-labels-file", labels])
    row = {"shape": name, "numa_nodes": numa_nodes, "sizes": sizes}
    try:
        d.start()
        deadline = time.monotonic() + 20
        while not os.path.exists(labels) and time.monotonic() < deadline:
            time.sleep(0.02)
        row["idle"] = scrape(d)
        # Reads: the log lines a scrape, a health check and what the NPD plugin's `profile verify`
        # asks (GET /v1/profile) write.
        n = count_log(d)
        for _ in range(20):
            for path in ("/metrics", "/v1/health", "/v1/profile"):
                assert d.get(path).status == 200, path
        row["log_lines_per_read"] = len(log_lines(d, n)) / 60
        if tree:
            n = count_log(d)
            r = d.request("PUT", "/v1/knobs/thp.enabled", {"value": "always"})
            assert r.status == 200, r.raw
            row["log_lines_per_knob_set"] = len(log_lines(d, n))
            n, jobs = count_log(d), 0
            for kb in tree.hugetlb_kb:
                size = "%dG" % (kb // 1048576) if kb >= 1048576 else "%dM" % (kb // 1024)
                for goal in (2, 0):
                    body = {"nodes": {str(i): goal for i in range(numa_nodes)}}
                    r = d.request("PUT", "/v1/hugepages/" + size, body=body)
                    assert r.status in (200, 202), r.raw
                    if r.status == 202:
                        wait_job(d, r.json["id"])
                    jobs += 1
            lines = log_lines(d, n)
            row["log_lines_per_resize_job"] = len(lines) / jobs
            row["log_bytes_per_line"] = sum(len(l) + 1 for l in lines) / max(1, len(lines))
            row["busy"] = scrape(d)
        with open(labels, "rb") as f:
            data = f.read()
        row["labels_text"] = data.decode()
        row["label_bytes"] = len(data)
        row["labels"] = sum(1 for l in data.decode().splitlines() if l and not l.startswith("#"))
    finally:
        rc = d.cleanup()
        shutil.rmtree(work, ignore_errors=True)
        if rc not in (0, None):
            raise RuntimeError("mempolicyd exited %s:\n%s" % (rc, d.last_log))
    return row


def fleet(row):
    s = row.get("busy", row["idle"])
    series = s["series"] * FLEET_NODES
    samples_s = series / SCRAPE_S
    reads_per_day = 86400 / SCRAPE_S + 86400 / NPD_S
    lines_day = OPS_PER_DAY * max(row.get("log_lines_per_resize_job", 1), 1) + reads_per_day * row["log_lines_per_read"]
    return {
        "series": series,
        "samples_per_s": samples_s,
        "tsdb_bytes_per_day": samples_s * 86400 * BYTES_PER_SAMPLE,
        "scrape_bytes_per_s": FLEET_NODES * s["bytes_om"] / SCRAPE_S,
        "label_bytes": FLEET_NODES * row["label_bytes"],
        "log_lines_per_day_node": lines_day,
        "log_lines_per_day": lines_day * FLEET_NODES,
        "log_bytes_per_day": lines_day * FLEET_NODES * row.get("log_bytes_per_line", 300),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "bin"), help="where mempolicyd and mempolicyctl are")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()
    os.environ["MPD_BIN"] = os.path.abspath(a.bin)
    from faketree import FakeTree

    rows = []
    for numa in (2, 8):
        root = tempfile.mkdtemp(prefix="mpd-fleet-tree-")
        os.chmod(root, 0o755)
        try:
            tree = FakeTree(root, nodes=numa, cpuless=(), mem_mb=(4096,), hugetlb_kb=(2048, 1048576))
            rows.append(measure("generated, %d nodes" % numa, tree, numa, 2))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    real_nodes = len([n for n in os.listdir("/sys/devices/system/node") if n.startswith("node") and n[4:].isdigit()])
    real_sizes = len(os.listdir("/sys/kernel/mm/hugepages"))
    rows.append(measure("this machine (real, idle)", None, real_nodes, real_sizes))
    for r in rows:
        r["fleet"] = fleet(r)
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("%-28s %7s %7s %9s %9s %7s %6s %6s %6s %6s" % ("shape", "idle", "busy", "scrape B", "OM B", "label B",
                                                          "labels", "l/read", "l/op", "B/line"))
    for r in rows:
        b = r.get("busy", {})
        print("%-28s %7d %7s %9s %9s %7d %6d %6.2f %6s %6s" % (
            r["shape"], r["idle"]["series"], b.get("series", "-"), b.get("bytes", r["idle"]["bytes"]),
            b.get("bytes_om", r["idle"]["bytes_om"]), r["label_bytes"], r["labels"], r["log_lines_per_read"],
            "%.1f" % r["log_lines_per_resize_job"] if "log_lines_per_resize_job" in r else "-",
            "%.0f" % r["log_bytes_per_line"] if "log_bytes_per_line" in r else "-"))
    print("\nwithout the resize histogram's buckets (busy, or idle): series, OpenMetrics bytes")
    for r in rows:
        s = r.get("busy", r["idle"])
        print("  %-26s %5d %7d" % (r["shape"], s["series_no_buckets"], s["bytes_om_no_buckets"]))
    print("\nlargest families (series):")
    for r in rows:
        s = r.get("busy", r["idle"])
        print("  %-26s %s" % (r["shape"], ", ".join("%s %d" % kv for kv in s["largest"])))
    print("\n%d nodes, scrape every %d s, NPD every %d s, %d operations a day per node:" % (
        FLEET_NODES, SCRAPE_S, NPD_S, OPS_PER_DAY))
    for r in rows:
        f = r["fleet"]
        print("  %-26s %9.0f series  %8.0f samples/s  %6.1f GB/day TSDB  %6.1f MB/s scrapes  %5.1f MB labels  "
              "%6.0f log lines/day/node  %5.2f GB/day logs" % (
                  r["shape"], f["series"], f["samples_per_s"], f["tsdb_bytes_per_day"] / 1e9,
                  f["scrape_bytes_per_s"] / 1e6, f["label_bytes"] / 1e6, f["log_lines_per_day_node"],
                  f["log_bytes_per_day"] / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
