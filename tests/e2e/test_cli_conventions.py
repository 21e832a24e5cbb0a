"""mempolicyctl behaves like the tools it imitates (issue 21, "CLI"): a boolean probe parameter is
a JSON boolean; a paging hint is not a result (stderr, so `| wc -l` counts rows); under --json an
error is the problem JSON on stderr; `job cancel` of an ended job is 0 like systemctl's "already
so"; a knob set to the value it has writes and records nothing (unless --force), nor does a pool
resized to its size; `status` names
its transport and says "none" for no cgroup; `proc show` gives a wall-clock start; an unreachable
socket says why in the socket's terms. Against generated trees, except proc show (a real process
needs the real /proc), which only reads."""
import calendar
import json
import os
import re
import subprocess
import time
import unittest

from faketree import FakeTree
from lib import CTL, Daemon, DaemonTest, free_port
from test_process_migrate import wait_job

THP = "sys/kernel/mm/transparent_hugepage"


def untouched_since(tree, rel):
    """Sets the file's mtime to the epoch; written() then tells whether anything wrote it since
    (the daemon writes a choice knob's file and the tree keeps its bracketed text either way)."""
    os.utime(tree.path(rel), ns=(0, 0))
    return lambda: os.stat(tree.path(rel)).st_mtime_ns != 0


def op_count(d):
    return d.sql("SELECT count(*) FROM operations")[0][0]


class CliConventionsFakeTest(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2, cpuless=()))

    def tearDown(self):
        self.tree.write(THP + "/enabled", "always [madvise] never")

    # -- probes -------------------------------------------------------------------------------------
    def test_a_boolean_probe_parameter_is_sent_as_a_boolean(self):
        """Seed 002's line: compare_thp=true is the JSON true the kind takes, not the string."""
        p = self.d.ctl("--json", "probe", "run", "sparse-touch", "threads=2", "size=4M", "passes=1",
                       "compare_thp=true", "--no-wait")
        self.assertEqual(p.returncode, 0, p.stderr)
        job = wait_job(self.d, json.loads(p.stdout)["id"])
        self.assertIs(job["request"]["params"]["compare_thp"], True, job["request"])
        self.assertEqual(job["request"]["params"]["threads"], 2)
        # the daemon says which type each parameter of each kind has
        kinds = {k["kind"]: k["params"] for k in self.d.get("/v1/probes").json["probes"]}
        self.assertEqual(kinds["sparse-touch"]["compare_thp"], "boolean")
        self.assertEqual(kinds["hugetlb-alloc"]["page_size"], "string")

    def test_a_non_boolean_text_stays_text_for_the_daemon_to_refuse(self):
        p = self.d.ctl("probe", "run", "sparse-touch", "compare_thp=yes")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("(request.wrong_type)", p.stderr)

    # -- paging, --json errors, job cancel ------------------------------------------------------------
    def test_the_paging_hint_goes_to_stderr(self):
        for v in ("never", "madvise", "always"):
            self.assertEqual(self.d.ctl("knob", "set", "thp.enabled=" + v).returncode, 0)
        p = self.d.ctl("history", "--limit", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 3, p.stdout)   # the header and two rows
        self.assertNotIn("more:", p.stdout)
        self.assertRegex(p.stderr, r"^more: mempolicyctl history --limit 2 --cursor \S+\n$")
        # the hint pasted gives the next page
        cursor = p.stderr.split()[-1].strip("'")
        q = self.d.ctl("history", "--limit", "2", "--cursor", cursor)
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertGreater(len(q.stdout.splitlines()), 1, q.stdout)

    def test_errors_under_json_are_the_problem_json_on_stderr(self):
        p = self.d.ctl("--json", "knob", "get", "no.such.knob")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")
        problem = json.loads(p.stderr)
        self.assertEqual(problem, self.d.get("/v1/knobs/no.such.knob").json)
        self.assertEqual(problem["code"], "knob.unknown")
        # and when no daemon answers: a problem object too, exit 3
        p = subprocess.run([CTL, "--json", "--socket", self.d.socket + ".gone", "status"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 3)
        self.assertEqual(p.stdout, "")
        problem = json.loads(p.stderr)
        self.assertIn(self.d.socket + ".gone", problem["detail"])

    def test_cancelling_an_ended_job_exits_0_and_says_so(self):
        r = self.d.request("POST", "/v1/probes/touch", {"size": "1M"})
        self.assertEqual(r.status, 202, r.raw)
        job = wait_job(self.d, r.json["id"])
        self.assertEqual(job["status"], "ok", job)
        n = op_count(self.d)
        p = self.d.ctl("job", "cancel", str(job["id"]))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn("already ended", p.stderr)
        self.assertEqual(self.d.get("/v1/jobs/%d" % job["id"]).json["status"], "ok")
        self.assertEqual(op_count(self.d), n)
        # a job that does not exist is still an error
        self.assertEqual(self.d.ctl("job", "cancel", "999999").returncode, 1)

    # -- knob set is idempotent -----------------------------------------------------------------------
    def test_setting_the_value_in_force_writes_and_records_nothing(self):
        written, n = untouched_since(self.tree, THP + "/enabled"), op_count(self.d)
        p = self.d.ctl("knob", "set", "thp.enabled=madvise")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"thp\.enabled\s+madvise\s+madvise\s+unchanged")
        self.assertIn("unchanged", p.stdout.splitlines()[-1])
        self.assertFalse(written())
        self.assertEqual(op_count(self.d), n)
        r = self.d.request("PUT", "/v1/knobs/thp.enabled", {"value": "madvise"})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual((r.json["changed"], r.json["operation_id"], r.json["status"]), (False, None, "unchanged"))
        self.assertEqual(op_count(self.d), n)

    def test_a_real_change_and_force_are_recorded(self):
        n = op_count(self.d)
        p = self.d.ctl("--json", "knob", "set", "thp.enabled=never")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIs(json.loads(p.stdout)["changed"], True)
        self.assertEqual(op_count(self.d), n + 1)
        written = untouched_since(self.tree, THP + "/enabled")
        p = self.d.ctl("knob", "set", "--force", "thp.enabled=never")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"thp\.enabled\s+never\s+never\s+written")
        self.assertTrue(written())
        self.assertEqual(op_count(self.d), n + 2)

    def test_a_patch_writes_only_what_differs(self):
        written, n = untouched_since(self.tree, THP + "/enabled"), op_count(self.d)
        p = self.d.ctl("--json", "knob", "set", "thp.enabled=madvise", "thp.defrag=defer")
        self.assertEqual(p.returncode, 0, p.stderr)
        res = json.loads(p.stdout)
        self.assertEqual([(c["knob"], c["status"]) for c in res["changes"]],
                         [("thp.enabled", "unchanged"), ("thp.defrag", "written")])
        self.assertFalse(written())
        self.assertEqual(op_count(self.d), n + 1)
        self.tree.write(THP + "/defrag", "always defer defer+madvise [madvise] never")

    def test_a_pool_put_to_its_size_makes_no_job_and_records_nothing(self):
        pool = "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"
        size = int(self.tree.read(pool))
        jobs, n = self.d.get("/v1/jobs").json["jobs"], op_count(self.d)
        written = untouched_since(self.tree, pool)
        p = self.d.ctl("pool", "resize", "2M", "--node", "0=%d" % size)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("unchanged", p.stdout.splitlines()[-1])
        self.assertEqual((self.d.get("/v1/jobs").json["jobs"], op_count(self.d)), (jobs, n))
        self.assertFalse(written())
        r = self.d.request("PUT", "/v1/hugepages/2M", {"nodes": {"0": size}})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual((r.json["status"], r.json["changed"]), ("unchanged", False))
        # a real change is a job, as before
        r = self.d.request("PUT", "/v1/hugepages/2M", {"nodes": {"0": size + 1}})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(wait_job(self.d, r.json["id"])["status"], "ok")
        r = self.d.request("PUT", "/v1/hugepages/2M", {"nodes": {"0": size}})
        self.assertEqual(r.status, 202, r.raw)
        wait_job(self.d, r.json["id"])

    # -- status -------------------------------------------------------------------------------------
    def test_status_says_none_for_no_cgroup_and_json_is_the_daemons_answer(self):
        health = self.d.get("/v1/health").json
        self.assertEqual(health["capabilities"]["cgroup_version"], 0)   # the tree has no cgroup fs
        p = self.d.ctl("status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("cgroup=none", p.stdout)
        self.assertNotIn("cgroup=v0", p.stdout)
        p = self.d.ctl("--json", "status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), health)


class CliTransportWordsTest(unittest.TestCase):
    def test_an_unreachable_socket_is_named_with_its_errno(self):
        p = subprocess.run([CTL, "--socket", "/nonexistent/mpd.sock", "status"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 3)
        self.assertNotIn("port 80", p.stderr)
        self.assertIn("/nonexistent/mpd.sock: No such file or directory", p.stderr)

    def test_status_over_a_url_names_the_url(self):
        port = free_port()
        d = Daemon(FakeTree(os.path.join(self.tmp(), "t")), ["--listen-tcp", "127.0.0.1:%d" % port]).start()
        try:
            url = "http://127.0.0.1:%d" % port
            p = subprocess.run([CTL, "--url", url, "status"], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout, r"(?m)^url\s+%s$" % re.escape(url))
            self.assertNotIn("socket", p.stdout)
        finally:
            d.cleanup()

    def tmp(self):
        import shutil
        import tempfile
        t = tempfile.mkdtemp(prefix="mpd-url-")
        os.chmod(t, 0o755)
        self.addCleanup(shutil.rmtree, t, True)
        return t


class CliProcShowTest(DaemonTest):
    """The real /proc: a sleeping child of the test, read only."""

    def test_start_is_a_wall_clock_time_and_no_policy_memory_is_said_plainly(self):
        child = subprocess.Popen(["sleep", "60"])
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        p = self.d.ctl("proc", "show", str(child.pid))
        self.assertEqual(p.returncode, 0, p.stderr)
        first = p.stdout.splitlines()[0]
        m = re.search(r"started at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d{3}Z \(start time (\d+)\)", first)
        self.assertTrue(m, first)
        started = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
        self.assertLess(abs(started - time.time()), 120, first)   # it started moments ago
        self.assertEqual(int(m.group(2)), self.d.get("/v1/processes/%d" % child.pid).json["start_time"])
        self.assertNotIn("of the 0 B", p.stdout)
        self.assertIn("locality: no memory under a policy that names nodes", p.stdout)


if __name__ == "__main__":
    unittest.main()
