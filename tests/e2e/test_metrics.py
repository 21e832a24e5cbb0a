"""GET /metrics: the Prometheus text format that promtool accepts, OpenMetrics by Accept, the pool
gauges (reservations and each size's bytes too) and resize-latency histogram after a resize on a
generated tree, the jobs queued and running now, the daemon's start time, counters that survive a
restart (seeded from the database), each schedule's last success (live, seeded, gone with the
schedule), the same answer on the TCP listener, and a real Prometheus (Debian's package)
scraping the daemon and answering queries about it."""
import calendar
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request
import json

from faketree import FakeTree
from lib import Daemon, free_port

NODE = "sys/devices/system/node/node%d/hugepages/hugepages-%dkB/%s"
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")



def wait_job(d, job_id, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = d.get("/v1/jobs/%d" % job_id)
        if r.json["status"] not in ("queued", "running"):
            return r.json
        time.sleep(0.02)
    raise AssertionError("job %d still running" % job_id)


def stop_prometheus(proc):
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def samples(text):
    """{(name, frozenset(labels)): value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, "not a sample line: %r" % line
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(s, name, **labels):
    return s[(name, frozenset((k, str(v)) for k, v in labels.items()))]


class Metrics(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-tree-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=2)
        self.port = free_port()
        self.started = time.time()
        self.d = Daemon(self.tree, ["--listen-tcp", "127.0.0.1:%d" % self.port]).start()

    def tearDown(self):
        rc = self.d.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertIn(rc, (0, None), self.d.last_log)

    def scrape(self, accept=None):
        r = self.d.request("GET", "/metrics", headers={"Accept": accept} if accept else None)
        self.assertEqual(r.status, 200, r.raw)
        return r

    def resize(self, nodes):
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": nodes, "batch": 10})
        self.assertEqual(r.status, 202, r.raw)
        return wait_job(self.d, r.json["id"])

    def test_pools_histogram_and_counters_after_a_resize(self):
        job = self.resize({"0": 25, "1": 7})
        self.assertEqual(job["status"], "ok", job)
        r = self.scrape()
        self.assertEqual(r.headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
        s = samples(r.raw)
        self.assertEqual(value(s, "mempolicyd_hugepages_nr_pages", node=0, size="2M"), 25)
        self.assertEqual(value(s, "mempolicyd_hugepages_nr_pages", node=1, size="2M"), 7)
        self.assertEqual(value(s, "mempolicyd_hugepages_nr_pages", node=1, size="1G"), 0)
        self.assertIn(("mempolicyd_hugepages_free_pages", frozenset({("node", "0"), ("size", "2M")})), s)
        # Three batches on node 0 (10, 10, 5), one on node 1: the histogram counts every write.
        lat = "mempolicyd_hugepages_resize_page_latency_seconds"
        self.assertEqual(value(s, lat + "_count", direction="grow", node=0, size="2M"), 3)
        self.assertEqual(value(s, lat + "_count", direction="grow", node=1, size="2M"), 1)
        self.assertEqual(value(s, lat + "_bucket", direction="grow", node=0, size="2M", le="+Inf"), 3)
        rows = self.d.sql("SELECT sum(latency_ns) FROM batches WHERE node = 0")[0][0]
        self.assertAlmostEqual(value(s, lat + "_sum", direction="grow", node=0, size="2M"), rows / 1e9, places=6)
        self.assertEqual(value(s, "mempolicyd_jobs_total", kind="hugepages.resize", status="ok"), 1)
        self.assertEqual(value(s, "mempolicyd_operations_total", kind="hugepages.resize", status="ok"), 1)
        thp = self.tree.read("sys/kernel/mm/transparent_hugepage/enabled")
        chosen = re.search(r"\[(\w+)\]", thp).group(1)
        self.assertEqual(value(s, "mempolicyd_knob_info", knob="thp.enabled", value=chosen), 1)
        self.assertEqual(value(s, "mempolicyd_build_info", kernel_release="6.12.0-fake",
                               version=open(os.path.join(os.path.dirname(__file__), "../../VERSION")).read().strip()), 1)
        self.assertGreater(value(s, "mempolicyd_store_size_bytes"), 0)

        # Restarted, the daemon finds the same counts in the database, not zero.
        self.d.restart()
        s2 = samples(self.scrape().raw)
        for key in s:
            if key[0].startswith(("mempolicyd_jobs", "mempolicyd_operations", lat)):
                self.assertEqual(s2.get(key), s[key], key)

    @unittest.skipUnless(PROMTOOL, "promtool (Debian package prometheus) is not installed")
    def test_promtool_accepts_both_formats(self):
        self.resize({"0": 4})
        for accept in (None, "application/openmetrics-text; version=1.0.0"):
            text = self.scrape(accept).raw
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True, capture_output=True, timeout=30)
            # promtool parses the 0.0.4 format; lint problems are printed and exit 1.
            if accept is None:
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        r = self.scrape("application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5")
        self.assertTrue(r.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0"))
        text = r.raw
        self.assertTrue(text.endswith("# EOF\n"))
        self.assertIn("# TYPE mempolicyd_jobs counter\n", text)
        self.assertIn("# TYPE mempolicyd_knob info\n", text)

    def test_reservations_page_sizes_jobs_now_and_the_start_time(self):
        self.tree.write("sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "5")
        s = samples(self.scrape().raw)
        self.assertEqual(value(s, "mempolicyd_hugepages_resv_pages", size="2M"), 5)
        self.assertEqual(value(s, "mempolicyd_hugepages_resv_pages", size="1G"), 0)
        # the number PromQL needs to turn a size label's pages into bytes
        self.assertEqual(value(s, "mempolicyd_hugepages_page_size_bytes", size="2M"), 2 << 20)
        self.assertEqual(value(s, "mempolicyd_hugepages_page_size_bytes", size="1G"), 1 << 30)
        # every registered kind has both samples, zero included
        for status in ("queued", "running"):
            self.assertEqual(value(s, "mempolicyd_jobs_active", kind="hugepages.resize", status=status), 0)
            self.assertEqual(value(s, "mempolicyd_jobs_active", kind="probe.touch", status=status), 0)
        start = value(s, "process_start_time_seconds")
        self.assertLessEqual(self.started - 1, start)
        self.assertLessEqual(start, time.time())
        # a probe that holds its memory is a running job until it is cancelled
        r = self.d.request("POST", "/v1/probes/touch", body={"size": "4M", "hold_ms": 60000})
        self.assertEqual(r.status, 202, r.raw)
        job = r.json["id"]
        deadline = time.monotonic() + 20
        while self.d.get("/v1/jobs/%d" % job).json["status"] == "queued":
            self.assertLess(time.monotonic(), deadline, "the probe never started")
            time.sleep(0.02)
        s = samples(self.scrape().raw)
        self.assertEqual(value(s, "mempolicyd_jobs_active", kind="probe.touch", status="running"), 1)
        self.assertEqual(value(s, "mempolicyd_jobs_active", kind="probe.touch", status="queued"), 0)
        self.assertIn(self.d.request("DELETE", "/v1/jobs/%d" % job).status, (200, 202))
        r = self.d.get("/v1/jobs/%d?wait=10" % job)
        self.assertEqual(r.json["status"], "cancelled", r.raw)
        # The runner records the end, then leaves its active list: the gauge follows within moments.
        deadline = time.monotonic() + 10
        while value(samples(self.scrape().raw), "mempolicyd_jobs_active", kind="probe.touch", status="running"):
            self.assertLess(time.monotonic(), deadline, "the cancelled probe is still counted as running")
            time.sleep(0.02)
        s = samples(self.scrape().raw)
        self.assertEqual(value(s, "mempolicyd_jobs_total", kind="probe.touch", status="cancelled"), 1)

    def test_tcp_listener_serves_it_and_bad_query_is_400(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=10) as r:
            self.assertEqual(r.status, 200)
            self.assertIn(b"mempolicyd_build_info", r.read())
        r = self.d.request("GET", "/metrics?x=1")
        self.assertEqual(r.status, 400, r.raw)
        self.assertEqual(r.content_type, "application/problem+json")


class ScheduleLastSuccess(unittest.TestCase):
    """mempolicyd_schedule_last_success_timestamp_seconds{schedule}: on the test clock, a schedule
    fires, its job ends ok, and the series says when (the job's finished_ns); a restart finds it
    in the database; a schedule whose job failed has none; deleting the schedule removes it."""
    NAME = "mempolicyd_schedule_last_success_timestamp_seconds"
    DUE = calendar.timegm((2031, 3, 14, 2, 0, 0))

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-tree-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(self.tmp, nodes=2)
        self.d = Daemon(self.tree, ["--retain-days", "0"], clock_ns=(self.DUE - 30) * 10**9).start()
        self.addCleanup(self.d.cleanup)

    def schedule(self, action):
        tm = time.gmtime(self.DUE)
        r = self.d.request("POST", "/v1/schedules", body={
            "cron": "%d %d %d %d *" % (tm.tm_min, tm.tm_hour, tm.tm_mday, tm.tm_mon), "action": action})
        self.assertEqual(r.status, 201, r.raw)
        return r.json["id"]

    def job_of(self, sid):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rows = self.d.sql("SELECT status, finished_ns FROM jobs WHERE schedule_id = ?", (sid,))
            if rows and rows[0][0] not in ("queued", "running"):
                return rows[0]
            time.sleep(0.02)
        raise AssertionError("no finished job of schedule %d" % sid)

    def series(self):
        return {dict(k[1])["schedule"]: v for k, v in samples(self.d.get("/metrics").raw).items() if k[0] == self.NAME}

    def test_last_success_live_after_restart_and_gone_with_the_schedule(self):
        ok = self.schedule({"hugepages": {"size": "2M", "nodes": {"0": 4}}})
        # node 1's count file gives one page fewer than written: the job ends partial
        bad = self.schedule({"hugepages": {"size": "2M", "nodes": {"1": 3}}})
        self.tree.partial(NODE % (1, 2048, "nr_hugepages"))
        self.assertEqual(self.series(), {})
        self.d.set_clock(self.DUE * 10**9)
        status, finished_ns = self.job_of(ok)
        self.assertEqual(status, "ok")
        self.assertNotEqual(self.job_of(bad)[0], "ok")
        self.assertEqual(self.series(), {str(ok): round(finished_ns / 1e9, 3)})
        self.d.restart()
        self.assertEqual(self.series(), {str(ok): round(finished_ns / 1e9, 3)})
        self.assertEqual(self.d.request("DELETE", "/v1/schedules/%d" % ok).status, 200)
        self.assertEqual(self.series(), {})


@unittest.skipUnless(PROMETHEUS, "prometheus (Debian package) is not installed")
class RealPrometheus(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-prom-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(os.path.join(self.tmp, "tree"), nodes=2)
        self.port = free_port()
        self.d = Daemon(self.tree, ["--listen-tcp", "127.0.0.1:%d" % self.port]).start()
        self.prom_port = free_port()
        cfg = os.path.join(self.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: mempolicyd\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % self.port)
        self.prom_log = open(os.path.join(self.tmp, "prometheus.log"), "w")
        self.prom = subprocess.Popen([PROMETHEUS, "--config.file", cfg, "--storage.tsdb.path",
                                      os.path.join(self.tmp, "data"), "--web.listen-address",
                                      "127.0.0.1:%d" % self.prom_port],
                                     stdout=self.prom_log, stderr=subprocess.STDOUT)

    def tearDown(self):
        stop_prometheus(self.prom)
        self.prom_log.close()
        rc = self.d.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertIn(rc, (0, None), self.d.last_log)

    def query(self, q):
        url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (self.prom_port, urllib.parse.quote(q))
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.load(r)
        self.assertEqual(body["status"], "success", body)
        return {tuple(sorted((k, v) for k, v in x["metric"].items() if k not in ("job", "instance", "__name__"))):
                float(x["value"][1]) for x in body["data"]["result"]}

    def wait_query(self, q, pred, timeout=20):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.query(q)
                if pred(last):
                    return last
            except OSError:
                pass   # Prometheus is still starting
            time.sleep(0.3)
        with open(os.path.join(self.tmp, "prometheus.log")) as f:
            log = f.read()[-3000:]
        raise AssertionError("%s: %r never matched\n%s" % (q, last, log))

    def test_scraped_pool_and_latency_series(self):
        self.wait_query('up{job="mempolicyd"}', lambda r: list(r.values()) == [1.0])
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 12, "1": 3}, "batch": 5})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(wait_job(self.d, r.json["id"])["status"], "ok")
        pools = self.wait_query('mempolicyd_hugepages_nr_pages{size="2M"}',
                                lambda r: r.get((("node", "0"), ("size", "2M"))) == 12)
        self.assertEqual(pools[(("node", "1"), ("size", "2M"))], 3)
        counts = self.wait_query('mempolicyd_hugepages_resize_page_latency_seconds_count',
                                 lambda r: sum(r.values()) == 4)
        # node 0: 5, 5, 2; node 1: 3
        self.assertEqual(counts[(("direction", "grow"), ("node", "0"), ("size", "2M"))], 3)
        self.assertEqual(counts[(("direction", "grow"), ("node", "1"), ("size", "2M"))], 1)
        jobs = self.query('mempolicyd_jobs_total{kind="hugepages.resize"}')
        self.assertEqual(jobs, {(("kind", "hugepages.resize"), ("status", "ok")): 1.0})

    def test_promql_turns_pages_into_bytes_and_sees_jobs_and_uptime(self):
        self.wait_query('up{job="mempolicyd"}', lambda r: list(r.values()) == [1.0])
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 12, "1": 3}})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(wait_job(self.d, r.json["id"])["status"], "ok")
        self.tree.write("sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "2")
        # a dashboard's "bytes in hugetlb pools, per node": the size label joined with its bytes
        q = "sum by (node) (mempolicyd_hugepages_nr_pages * on(size) group_left mempolicyd_hugepages_page_size_bytes)"
        got = self.wait_query(q, lambda r: r.get((("node", "0"),)) == 12 * 2 ** 21)
        self.assertEqual(got[(("node", "1"),)], 3 * 2 ** 21)
        self.wait_query("mempolicyd_hugepages_resv_pages * on(size) group_left mempolicyd_hugepages_page_size_bytes",
                        lambda r: r.get((("size", "2M"),)) == 2 * 2 ** 21)
        up = self.query("time() - process_start_time_seconds")
        self.assertEqual(len(up), 1, up)
        self.assertTrue(0 <= list(up.values())[0] < 600, up)
        r = self.d.request("POST", "/v1/probes/touch", body={"size": "4M", "hold_ms": 60000})
        self.assertEqual(r.status, 202, r.raw)
        self.wait_query('sum(mempolicyd_jobs_active{status="running"})', lambda r: list(r.values()) == [1.0])
        self.assertIn(self.d.request("DELETE", "/v1/jobs/%d" % r.json["id"]).status, (200, 202))
        self.wait_query('sum(mempolicyd_jobs_active{status=~"queued|running"})', lambda r: list(r.values()) == [0.0])


if __name__ == "__main__":
    unittest.main()
