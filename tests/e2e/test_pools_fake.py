"""Hugetlb pools on a generated 4-node tree: per-node resizes, a node that grants only part of a
write, a write that fails with an errno, a size the kernel lacks, cancel, SIGKILL mid-resize, and
bad input that must change nothing (tree and database)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from faketree import FakeTree
from lib import CTL, Daemon, DaemonTest, run_on_tty

NODE = "sys/devices/system/node/node%d/hugepages/hugepages-%dkB/%s"
GLOBAL = "sys/kernel/mm/hugepages/hugepages-%dkB/%s"


def wait_job(d, job_id, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = d.get("/v1/jobs/%d" % job_id)
        assert r.status == 200, r
        if r.json["status"] not in ("queued", "running"):
            return r.json
        time.sleep(0.02)
    raise AssertionError("job %d still running: %s" % (job_id, r.json))


def wait_for(pred, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("condition not met within %ss" % timeout)


def as_nobody_curl(d, *args):
    return subprocess.run(["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--",
                           "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", d.socket]
                          + list(args), capture_output=True, text=True, timeout=30)


class PoolsFakeTree(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    def put(self, size, body):
        return self.d.request("PUT", "/v1/hugepages/" + size, body=body)

    def node_nr(self, node, kb=2048):
        return int(self.tree.read(NODE % (node, kb, "nr_hugepages")))

    def test_list_every_size_and_node(self):
        r = self.d.get("/v1/hugepages")
        self.assertEqual(r.status, 200, r.raw)
        sizes = [p["size"] for p in r.json["pools"]]
        self.assertEqual(sizes, ["2M", "1G"])
        for p in r.json["pools"]:
            self.assertEqual([n["node"] for n in p["nodes"]], [0, 1, 2, 3])
            for k in ("nr", "free", "resv", "surplus", "overcommit"):
                self.assertIn(k, p)

    def test_one_size_by_any_spelling(self):
        self.tree.write(GLOBAL % (2048, "free_hugepages"), "3")
        try:
            for name in ("2M", "2048kB", "2MB", "2097152"):
                r = self.d.get("/v1/hugepages/" + name)
                self.assertEqual(r.status, 200, name)
                self.assertEqual(r.json["size_kb"], 2048)
                self.assertEqual(r.json["free"], 3)
            self.assertEqual(self.d.get("/v1/hugepages/1G").json["size_kb"], 1048576)
        finally:
            self.tree.write(GLOBAL % (2048, "free_hugepages"), "0")

    def test_unknown_size_is_404(self):
        for name in ("16M", "abc", "3kB", "0"):
            self.assertProblem(self.d.get("/v1/hugepages/" + name), 404, "hugepages.unknown_size")

    def test_per_node_resize_in_batches(self):
        before = self.d.sql("SELECT count(*) FROM batches")[0][0]
        r = self.put("2M", {"nodes": {"2": 7, "0": 25}, "batch": 10})
        self.assertEqual(r.status, 202, r.raw)
        job_id = r.json["id"]
        self.assertEqual(r.headers["Location"], "/v1/jobs/%d" % job_id)
        self.assertEqual(r.json["kind"], "hugepages.resize")
        job = wait_job(self.d, job_id)
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(self.node_nr(0), 25)
        self.assertEqual(self.node_nr(2), 7)
        self.assertEqual(self.node_nr(1), 0)   # nodes not named keep their size
        rows = self.d.sql("SELECT node, before, written, after, requested, achieved, elapsed_ns, latency_ns "
                          "FROM batches WHERE op_id = ? ORDER BY seq", (job["operation_id"],))
        self.assertEqual([(n, b, w, a) for n, b, w, a, *_ in rows],
                         [(0, 0, 10, 10), (0, 10, 20, 20), (0, 20, 25, 25), (2, 0, 7, 7)])
        for n, b, w, a, req, ach, el, lat in rows:
            self.assertEqual(ach, a - b)
            self.assertEqual(lat, el // ach)
        self.assertEqual(self.d.sql("SELECT count(*) FROM batches")[0][0], before + 4)
        res = {t["node"]: t for t in job["result"]["targets"]}
        self.assertEqual((res[0]["asked"], res[0]["got"], res[0]["batches"]), (25, 25, 3))
        self.assertEqual((res[2]["asked"], res[2]["got"], res[2]["batches"]), (7, 7, 1))
        self.assertEqual(job["progress"]["pages_done"], 32)
        op = self.d.sql("SELECT kind, status, source, actor_uid FROM operations WHERE id = ?", (job["operation_id"],))
        self.assertEqual(op, [("hugepages.resize", "ok", "api", 0)])
        pool = self.d.get("/v1/hugepages/2M").json
        self.assertEqual({n["node"]: n["nr"] for n in pool["nodes"]}, {0: 25, 1: 0, 2: 7, 3: 0})
        # shrink back: batches of 10 going down
        job = wait_job(self.d, self.put("2M", {"nodes": {"0": 0, "2": 0}}).json["id"])
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual((self.node_nr(0), self.node_nr(2)), (0, 0))
        dirs = self.d.sql("SELECT DISTINCT direction FROM batches WHERE op_id = ?", (job["operation_id"],))
        self.assertEqual(dirs, [("shrink",)])

    def test_total_writes_the_global_file(self):
        job = wait_job(self.d, self.put("1G", {"total": 3}).json["id"])
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(int(self.tree.read(GLOBAL % (1048576, "nr_hugepages"))), 3)
        self.assertEqual(self.d.sql("SELECT node, requested FROM batches WHERE op_id = ?", (job["operation_id"],)),
                         [(None, 1), (None, 1), (None, 1)])   # 1G: one page per write by default
        job = wait_job(self.d, self.put("1G", {"total": 0}).json["id"])
        self.assertEqual(job["status"], "ok", job)

    def test_stats_agree_with_the_batches(self):
        job = wait_job(self.d, self.put("2M", {"nodes": {"1": 23}, "batch": 2}).json["id"])
        self.assertEqual(job["status"], "ok", job)
        wait_job(self.d, self.put("2M", {"nodes": {"1": 0}}).json["id"])
        lat = sorted(r[0] for r in self.d.sql(
            "SELECT latency_ns FROM batches WHERE direction = 'grow' AND size_kb = 2048 AND node = 1"))
        r = self.d.get("/v1/history/stats?kind=hugepages.resize&size=2M&node=1")
        self.assertEqual(r.status, 200, r.raw)
        s = r.json
        n = len(lat)
        self.assertEqual(s["count"], n)

        def pct(p):
            return lat[max(1, n * p // 100) - 1]
        self.assertEqual((s["min"], s["max"]), (lat[0], lat[-1]))
        self.assertEqual((s["q1"], s["q2"], s["q3"]), (pct(25), pct(50), pct(75)))
        self.assertAlmostEqual(s["amean"], sum(lat) / n, places=3)
        mean = sum(lat) / n
        self.assertAlmostEqual(s["stddev"], (sum((x - mean) ** 2 for x in lat) / (n - 1)) ** 0.5, places=3)
        # shrink batches are their own population
        r = self.d.get("/v1/history/stats?size=2M&node=1&direction=shrink")
        self.assertEqual(r.json["count"], self.d.sql(
            "SELECT count(*) FROM batches WHERE direction = 'shrink' AND size_kb = 2048 AND node = 1")[0][0])
        self.assertProblem(self.d.get("/v1/history/stats?bogus=1"), 400, "request.unknown_query")
        self.assertProblem(self.d.get("/v1/history/stats?since=yesterday"), 400, "request.bad_query")
        empty = self.d.get("/v1/history/stats?size=2M&node=1&until=1").json
        self.assertEqual(empty["count"], 0)
        self.assertIsNone(empty["min"])

    def test_availability(self):
        self.tree.write(NODE % (0, 2048, "free_hugepages"), "30")
        try:
            r = self.d.get("/v1/hugepages/2M/availability?node=0&count=5")
            self.assertEqual(r.status, 200, r.raw)
            self.assertEqual((r.json["available_now"], r.json["from_free"], r.json["grow_needed"]), (True, 5, 0))
            r = self.d.get("/v1/hugepages/2M/availability?node=0&count=40")
            self.assertEqual((r.json["verdict"], r.json["from_free"], r.json["grow_needed"]), ("grow", 30, 10))
            r = self.d.get("/v1/hugepages/2M/availability?node=3&count=100000")
            self.assertEqual(r.json["verdict"], "insufficient")
        finally:
            self.tree.write(NODE % (0, 2048, "free_hugepages"), "0")
        self.assertProblem(self.d.get("/v1/hugepages/2M/availability?node=9&count=1"), 422, "resize.bad_node")
        self.assertProblem(self.d.get("/v1/hugepages/2M/availability?node=0"), 400)
        self.assertProblem(self.d.get("/v1/hugepages/2M/availability?node=0&count=-1"), 400)
        self.assertProblem(self.d.get("/v1/hugepages/64M/availability?count=1"), 404)

    def test_cpuless_node_with_memory_is_allowed(self):
        # node 3 has no CPUs but 1 GiB of memory: it has a pool, so it may be resized
        job = wait_job(self.d, self.put("2M", {"nodes": {"3": 4}}).json["id"])
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(self.node_nr(3), 4)
        wait_job(self.d, self.put("2M", {"nodes": {"3": 0}}).json["id"])

    def test_bad_input_changes_nothing(self):
        cases = [
            ("16M", {"total": 1}, 404, "hugepages.unknown_size"),
            ("2M", {"total": 1, "nodes": {"0": 1}}, 400, "resize.bad_request"),
            ("2M", {}, 400, "resize.bad_request"),
            ("2M", {"total": -1}, 422, "resize.bad_count"),
            ("2M", {"total": 10 ** 12}, 422, "resize.bad_count"),
            ("2M", {"nodes": {"0": 999999}}, 422, "resize.bad_count"),   # node 0 has 4 GiB: 2048 pages
            ("2M", {"total": "5"}, 400, "resize.bad_request"),
            ("2M", {"total": 1.5}, 400, "resize.bad_request"),
            ("2M", {"nodes": {"9": 1}}, 422, "resize.bad_node"),
            ("2M", {"nodes": {"x": 1}}, 422, "resize.bad_node"),
            ("2M", {"nodes": {"-1": 1}}, 422, "resize.bad_node"),
            ("2M", {"nodes": {}}, 400, "resize.bad_request"),
            ("2M", {"nodes": [1]}, 400, "resize.bad_request"),
            ("2M", {"total": 1, "batch": 0}, 422, "resize.bad_batch"),
            ("2M", {"total": 1, "deadline_ms": -5}, 422, "resize.bad_deadline"),
            ("2M", {"total": 1, "compact": "yes"}, 400, "resize.bad_request"),
            ("2M", {"total": 1, "color": "red"}, 400, "resize.bad_request"),
            ("2M", {"total": 1, "size": "1G"}, 400, "resize.bad_request"),   # the URL names the size
        ]
        tree, db = self.tree.snapshot(), self.d.db_snapshot()
        for size, body, status, code in cases:
            with self.subTest(body=body):
                self.assertProblem(self.put(size, body), status, code)
        self.assertProblem(self.d.request("PUT", "/v1/hugepages/2M", raw=b"{\"total\": 1, \"total\": 2}",
                                          headers={"Content-Type": "application/json"}), 400)
        self.assertEqual(as_nobody_curl(self.d, "-X", "PUT", "-H", "Content-Type: application/json",
                                        "-d", '{"total": 4}', "http://x/v1/hugepages/2M").stdout, "403")
        self.assertEqual(as_nobody_curl(self.d, "-X", "DELETE", "http://x/v1/jobs/1").stdout, "403")
        # dry_run: a plan, no job, nothing written
        r = self.put("2M", {"nodes": {"1": 8}, "dry_run": True})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["targets"], [{"node": 1, "from": 0, "target": 8, "current": 0, "achieved": 0}])
        self.assertEqual(self.tree.snapshot(), tree)
        self.assertEqual(self.d.db_snapshot(), db)

    def test_jobs_resource(self):
        self.assertProblem(self.d.get("/v1/jobs/999999"), 404, "job.not_found")
        self.assertProblem(self.d.get("/v1/jobs/abc"), 404, "job.not_found")
        self.assertProblem(self.d.request("DELETE", "/v1/jobs/999999"), 404, "job.not_found")
        job = wait_job(self.d, self.put("2M", {"nodes": {"1": 2}}).json["id"])
        wait_job(self.d, self.put("2M", {"nodes": {"1": 0}}).json["id"])
        r = self.d.get("/v1/jobs?kind=hugepages.resize&limit=1000")
        self.assertEqual(r.status, 200)
        ids = [j["id"] for j in r.json["jobs"]]
        self.assertIn(job["id"], ids)
        self.assertEqual(ids, sorted(ids, reverse=True))
        self.assertProblem(self.d.request("DELETE", "/v1/jobs/%d" % job["id"]), 409, "job.finished")
        self.assertProblem(self.d.get("/v1/jobs?limit=0"), 400)

    def test_cli(self):
        for n in (1, 2):
            self.addCleanup(self.tree.write, NODE % (n, 2048, "nr_hugepages"), "0")
        p = self.d.ctl("pool", "resize", "2M", "--node", "1=6", "--node", "2=3", "--batch", "4")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^1\s+0\s+6\s+6\s+6\s+6\s+2\s+[0-9.]+ (us|ms|s)\s+target$")
        self.assertRegex(p.stdout, r"(?m)^2\s+0\s+3\s+3\s+3\s+3\s+1\s+")
        self.assertEqual((self.node_nr(1), self.node_nr(2)), (6, 3))
        p = self.d.ctl("pool", "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^SIZE\s+TOTAL\s+FREE\s+RESV\s+SURPLUS\s+OVERCOMMIT\s+NODE0\s+NODE1\s+NODE2\s+NODE3$")
        self.assertRegex(p.stdout, r"(?m)^2M\s+0\s+0\s+0\s+0\s+0\s+0/0\s+6/0\s+3/0\s+0/0$")
        p = self.d.ctl("pool", "avail", "2M", "--node", "1", "--count", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^grow_needed\s+2$")
        p = self.d.ctl("pool", "resize", "2M", "--node", "1=0", "--node", "2=0", "--no-wait")
        self.assertEqual(p.returncode, 0, p.stderr)
        job_id = int(p.stdout.split()[1])
        self.assertEqual(wait_job(self.d, job_id)["status"], "ok")
        p = self.d.ctl("job", "show", str(job_id))
        self.assertRegex(p.stdout, r"(?m)^status\s+ok$")
        self.assertIn(str(job_id), self.d.ctl("job", "list").stdout)
        # an ended job is already what cancel asks for: exit 0 (systemctl's "already so"), said on stderr
        p = self.d.ctl("job", "cancel", str(job_id))
        self.assertEqual((p.returncode, p.stdout), (0, ""))
        self.assertIn("already ended", p.stderr)
        tree = self.tree.snapshot()
        for args, rc in ((("pool", "resize", "2M", "--node", "9=1"), 1), (("pool", "resize", "2M"), 2),
                         (("pool", "resize", "2M", "--total", "1", "--node", "0=1"), 2),
                         (("pool", "resize", "2M", "--total", "-1"), 2), (("pool", "resize", "64M", "--total", "1"), 1),
                         (("pool", "resize", "2M", "--total", "1", "--deadline", "soon"), 2)):
            p = self.d.ctl(*args)
            self.assertEqual(p.returncode, rc, (args, p.stderr))
        self.assertEqual(self.tree.snapshot(), tree)


    def test_progress_bar_on_a_terminal_only(self):
        """pool resize draws a progress bar on stderr when it is a terminal, and never when piped."""
        self.addCleanup(self.tree.write, NODE % (1, 2048, "nr_hugepages"), "0")
        rc, err, out = run_on_tty([CTL, "--socket", self.d.socket, "pool", "resize", "2M", "--node", "1=40",
                                   "--batch", "4"], "stderr")
        self.assertEqual(rc, 0, err)
        # Polls while the job runs may draw none (a fake tree is fast); the closing bar is always drawn.
        bars = re.findall(r"\r(job \d+) \[([#.]{30})\]\s+(\d+)%", err)
        self.assertTrue(bars, err)
        self.assertEqual(bars[-1][1:], ("#" * 30, "100"))
        self.assertTrue(err.endswith("100%\r\n") or err.endswith("100%\n"), repr(err[-20:]))
        pct = [int(b[2]) for b in bars]
        self.assertEqual(pct, sorted(pct))
        self.assertNotIn("[", out.split("\n")[0])   # the outcome table on stdout has no bar
        self.assertEqual(self.node_nr(1), 40)
        # piped: the same command draws nothing on stderr
        p = self.d.ctl("pool", "resize", "2M", "--node", "1=0", "--batch", "4")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("%", p.stderr)
        self.assertNotIn("\r", p.stderr)


class PartialGrant(DaemonTest):
    """Node 1's count file is FakeTree.partial(): every write succeeds and gives one page fewer."""
    @staticmethod
    def tree_factory(root):
        t = FakeTree(root, nodes=4)
        t.partial(NODE % (1, 2048, "nr_hugepages"))
        return t

    def test_short_writes_are_measured_and_end_partial(self):
        start = int(self.d.get("/v1/hugepages/2M").json["nodes"][1]["nr"])
        self.assertEqual(start, 0, "the test process's oom_adj must be 0")
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 5, "1": 12}, "batch": 10})
        job = wait_job(self.d, r.json["id"])
        self.assertEqual(job["status"], "partial", job)
        self.assertEqual(job["reason"], "no_progress")
        # job show says why in one line, from the free blocks the job recorded at its end
        shown = self.d.ctl("job", "show", str(job["id"]))
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertRegex(shown.stdout, r"(?m)^why\s+node 1: 0 free order-9\+ blocks left \(unusable index 1\.00\); "
                         r"compaction: 0 stalls, 0 succeeded$")
        rows = self.d.sql("SELECT node, before, written, after, requested, achieved FROM batches WHERE op_id = ? "
                          "ORDER BY seq", (job["operation_id"],))
        # node 0 is an ordinary file; node 1 gives one page fewer than written, then nothing
        self.assertEqual(rows, [(0, 0, 5, 5, 5, 5), (1, 0, 10, 9, 10, 9), (1, 9, 12, 11, 3, 2),
                                (1, 11, 12, 11, 1, 0)])
        t = {x["node"]: x for x in job["result"]["targets"]}
        self.assertEqual((t[0]["got"], t[0]["stopped"]), (5, "target"))
        self.assertEqual((t[1]["asked"], t[1]["got"], t[1]["stopped"]), (12, 11, "no_progress"))
        pool = self.d.get("/v1/hugepages/2M").json
        self.assertEqual(pool["nodes"][1]["nr"], 11)   # the pool reports what the kernel says
        self.assertEqual(self.d.sql("SELECT status FROM operations WHERE id = ?", (job["operation_id"],)), [("partial",)])
        rc, err, out = run_on_tty([CTL, "--socket", self.d.socket, "pool", "resize", "2M", "--node", "1=14"],
                                  "stderr")
        self.assertEqual(rc, 1)   # partial is not success
        self.assertIn("ended partial: no_progress", err)
        self.assertRegex(out, r"(?m)^1\s+11\s+14\s+3\s+2\s+13\s+2\s+.*no_progress$")
        # 3 asked, 2 got: on a terminal the closing bar stops where the job stopped, short of 100 %
        self.assertRegex(err, r"\[#{20}\.{10}\]\s+67%")
        self.assertNotIn("100%", err)
        # (no shrink back: lowering oom_adj needs CAP_SYS_RESOURCE, and the stand-in ends with the tests)


class ErrnoWrite(DaemonTest):
    """Node 2's count file is FakeTree.einval(): writes above 1000 fail with EINVAL."""
    @staticmethod
    def tree_factory(root):
        t = FakeTree(root, nodes=4)
        t.einval(NODE % (2, 2048, "nr_hugepages"))
        return t

    def test_errno_fails_the_job_and_keeps_what_was_done(self):
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"2": 1020}, "batch": 600})
        self.assertEqual(r.status, 202, r.raw)
        job = wait_job(self.d, r.json["id"])
        self.assertEqual(job["status"], "failed", job)
        self.assertEqual(job["errno"], 22)
        self.assertIn("node 2", job["error"])
        self.assertEqual(self.d.sql("SELECT written, after, achieved FROM batches WHERE op_id = ?",
                                    (job["operation_id"],)), [(600, 600, 600)])
        self.assertEqual(self.d.sql("SELECT status, errno FROM operations WHERE id = ?", (job["operation_id"],)),
                         [("failed", 22)])
        self.assertEqual(self.d.get("/v1/hugepages/2M").json["nodes"][2]["nr"], 600)
        wait_job(self.d, self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"2": 0}}).json["id"])


class MissingSizeAndMemorylessNode(DaemonTest):
    """A kernel with only 2 MiB pages, and node 3 without memory (no hugepages directory)."""
    @staticmethod
    def tree_factory(root):
        t = FakeTree(root, nodes=4, hugetlb_kb=(2048,))
        shutil.rmtree(t.path("sys/devices/system/node/node3/hugepages"))
        return t

    def test_size_the_kernel_lacks(self):
        self.assertProblem(self.d.get("/v1/hugepages/1G"), 404, "hugepages.unknown_size")
        self.assertProblem(self.d.request("PUT", "/v1/hugepages/1G", body={"total": 1}), 404,
                           "hugepages.unknown_size")
        self.assertEqual([p["size"] for p in self.d.get("/v1/hugepages").json["pools"]], ["2M"])

    def test_memoryless_node_is_422(self):
        tree, db = self.tree.snapshot(), self.d.db_snapshot()
        self.assertProblem(self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"3": 1}}), 422,
                           "resize.bad_node")
        self.assertEqual([n["node"] for n in self.d.get("/v1/hugepages/2M").json["nodes"]], [0, 1, 2])
        self.assertEqual(self.tree.snapshot(), tree)
        self.assertEqual(self.d.db_snapshot(), db)


class StalledResize:
    """A resize that stalls: node 1 stops gaining (partial()), and compact_memory is a FIFO with no
    reader, so "compact once and retry" blocks in open(2) until the test reads it: a job held
    running for as long as the test wants. Mixed into a TestCase (test_jobs_wait.py uses it too)."""

    def make_stall_tree(self, prefix):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=4)
        self.tree.partial(NODE % (1, 2048, "nr_hugepages"))
        self.fifo = self.tree.path("proc/sys/vm/compact_memory")
        os.mkfifo(self.fifo)
        self.reader = None

    def release(self):
        """Opens the FIFO for reading (non-blocking) and keeps it open until the test ends, so the
        blocked compaction write, and any later one, completes into the pipe: no guess at how long
        the writer needs."""
        if self.reader is None:
            self.reader = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)

    def end_stall(self):
        """tearDown's: the compaction released, the daemon stopped, the tree removed."""
        self.release()
        try:
            self.d.cleanup()
        finally:
            os.close(self.reader)
            shutil.rmtree(self.tmp, ignore_errors=True)

    def start_stalled_job(self):
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 3, "1": 5}, "compact": True})
        self.assertEqual(r.status, 202, r.raw)
        job_id = r.json["id"]
        # node 1: write 5 -> 4, write 5 -> 4 (no progress) -> compaction blocks on the FIFO
        wait_for(lambda: self.d.get("/v1/jobs/%d" % job_id).json["progress"].get("batches") == 3, timeout=20)
        return job_id


class BlockedCompaction(StalledResize, unittest.TestCase):
    def setUp(self):
        self.make_stall_tree("mpd-pools-")
        self.d = Daemon(self.tree)
        self.d.start()

    def tearDown(self):
        self.end_stall()

    def test_conflict_then_cancel_between_batches(self):
        job_id = self.start_stalled_job()
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"total": 1})
        self.assertEqual(r.status, 409, r.raw)
        self.assertEqual(r.json["code"], "job.conflict")
        self.assertEqual(r.json["job_id"], job_id)
        # another size is not in conflict
        other = self.d.request("PUT", "/v1/hugepages/1G", body={"nodes": {"0": 1}})
        self.assertEqual(other.status, 202, other.raw)
        self.assertEqual(wait_job(self.d, other.json["id"])["status"], "ok")
        r = self.d.request("DELETE", "/v1/jobs/%d" % job_id)
        self.assertEqual(r.status, 202, r.raw)
        self.assertTrue(r.json["cancel_requested"])
        self.assertEqual(self.d.get("/v1/jobs/%d" % job_id).json["status"], "running")
        self.release()   # the compaction returns; the job sees the cancel before its next batch
        job = wait_job(self.d, job_id)
        self.assertEqual(job["status"], "cancelled", job)
        self.assertEqual(job["reason"], "cancel_requested")
        self.assertEqual(self.d.sql("SELECT count(*) FROM batches WHERE op_id = ?", (job["operation_id"],)), [(3,)])
        self.assertEqual(self.d.sql("SELECT status FROM operations WHERE id = ?", (job["operation_id"],)),
                         [("cancelled",)])

    def test_cli_redraws_the_bar_while_the_job_runs(self):
        """On a terminal, mempolicyctl redraws the bar in place while the job is held running, then
        closes it where the job stopped (7 of 8 pages: partial, not 100 %)."""
        got = {}
        cmd = [CTL, "--socket", self.d.socket, "pool", "resize", "2M", "--node", "0=3", "--node", "1=5", "--compact"]
        t = threading.Thread(target=lambda: got.update(r=run_on_tty(cmd, "stderr", timeout=60)))
        t.start()
        try:
            running = wait_for(lambda: [j for j in self.d.get("/v1/jobs?status=running").json["jobs"]
                                        if j["progress"].get("batches") == 3])
            time.sleep(2.5)   # the client's answers are held a second on a TTY: redrawn each second
        finally:
            self.release()
            t.join(60)
        rc, err, out = got["r"]
        self.assertEqual(rc, 1, err)   # partial
        self.assertIn("job %d ended partial" % running[0]["id"], err)
        bars = re.findall(r"\r(job \d+) \[([#.]{30})\]\s+(\d+)%", err)
        self.assertGreaterEqual(len(bars), 3, err)   # >= 2 redraws while held + the closing one
        self.assertEqual({b[0] for b in bars}, {"job %d" % running[0]["id"]})
        self.assertEqual(bars[-1][2], "88")
        self.assertNotIn("100%", err)
        self.assertEqual(err.count("%\r\n") + err.count("%\n"), 1, repr(err))   # one line, redrawn with \r
        self.assertRegex(out, r"(?m)^1\s+0\s+5\s+5\s+4\s+4\s+")

    def test_sigterm_cancels_the_running_job(self):
        job_id = self.start_stalled_job()
        self.d.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "1 running job cancelled" in self.d.log_text())
        self.release()   # the worker finishes its compaction, sees the cancel, and the daemon exits
        self.assertEqual(self.d.stop(), 0)
        self.d.start()
        job = self.d.get("/v1/jobs/%d" % job_id).json
        self.assertEqual((job["status"], job["reason"]), ("cancelled", "daemon_stopping"), job)

    def test_sigkill_mid_resize_reads_interrupted(self):
        job_id = self.start_stalled_job()
        self.d.stop(signal.SIGKILL)
        self.d.start()
        job = self.d.get("/v1/jobs/%d" % job_id).json
        self.assertEqual(job["status"], "interrupted", job)
        self.assertEqual(self.d.sql("PRAGMA integrity_check"), [("ok",)])
        self.assertEqual(self.d.sql("SELECT status FROM operations WHERE id = ?", (job["operation_id"],)),
                         [("interrupted",)])
        # the batches measured before the stall were recorded before it
        self.assertEqual(self.d.sql("SELECT node, written, after FROM batches WHERE op_id = ? ORDER BY seq",
                                    (job["operation_id"],)), [(0, 3, 3), (1, 5, 4), (1, 5, 4)])
        # the pool reported is the kernel's (the tree's), both now and in the job's result
        pool = self.d.get("/v1/hugepages/2M").json
        files = {n: int(self.tree.read(NODE % (n, 2048, "nr_hugepages"))) for n in (0, 2, 3)}
        files[1] = pool["nodes"][1]["nr"]   # node 1 reads the stand-in's oom_adj (/proc/PID: not a file here)
        self.assertEqual({n["node"]: n["nr"] for n in pool["nodes"]}, files)
        self.assertEqual(files[0], 3)
        self.assertEqual(job["result"]["pool"]["nodes"], pool["nodes"])
        # the size is free again
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 0}})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(wait_job(self.d, r.json["id"])["status"], "ok")


if __name__ == "__main__":
    unittest.main()
