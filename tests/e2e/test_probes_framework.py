"""The probe framework against the real kernel, with the framework's own probe `touch` (map a
region, write every base page, count pages per node with move_pages): POST /v1/probes/{kind} is a
job whose workload runs in a child process under the requested policy and CPU binding; the THP
setting a probe changes is put back when it ends, fails (timeout), is cancelled, and at the next
start after the daemon was killed (a probe.restore operation records that). Bad requests change
nothing: no job, no row, /sys untouched. Every test restores thp.enabled itself as well."""
import json
import os
import pwd
import signal
import subprocess
import time

from lib import Daemon, DaemonTest, bracketed, real_file, real_write

ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def wait_job(d, job_id, until=("ok", "failed", "cancelled", "partial", "interrupted"), timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = d.get("/v1/jobs/%d" % job_id)
        if r.status == 200 and r.json["status"] in until:
            return r.json
        time.sleep(0.05)
    raise AssertionError("job %d not %s within %ds: %s" % (job_id, until, timeout, d.get("/v1/jobs/%d" % job_id).raw))


def wait_for(cond, timeout=30, what="condition"):
    """cond()'s first true value, polled until timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def other_thp(value):
    return "never" if value != "never" else "always"


class ProbeFrameworkTest(DaemonTest):
    def setUp(self):
        self.thp0 = bracketed(real_file(ENABLED))
        self.addCleanup(real_write, ENABLED, self.thp0)

    def start(self, kind, body):
        r = self.d.request("POST", "/v1/probes/" + kind, body)
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(r.headers.get("Location"), "/v1/jobs/%d" % r.json["id"])
        self.assertEqual(r.json["kind"], "probe." + kind)
        return r.json

    def test_list_names_every_kind_with_its_job(self):
        r = self.d.get("/v1/probes")
        self.assertEqual(r.status, 200, r.raw)
        self.assertIn({"kind": "touch", "job": "probe.touch",
                       "params": {"size": "size", "hold_ms": "integer", "thp": "list"}}, r.json["probes"])

    def test_touch_runs_in_a_bound_child_and_is_recorded(self):
        cpu = sorted(os.sched_getaffinity(0))[0]
        job = self.start("touch", {"size": "8M", "cpus": str(cpu), "policy": {"mode": "bind", "nodes": "0"}})
        done = wait_job(self.d, job["id"])
        self.assertEqual(done["status"], "ok", done)
        res = done["result"]
        self.assertEqual(res["probe"], "touch")
        self.assertEqual(len(res["passes"]), 1)
        p = res["passes"][0]["result"]
        self.assertEqual(p["bytes"], 8 << 20)
        self.assertEqual(p["pages"], (8 << 20) // os.sysconf("SC_PAGE_SIZE"))
        # every page placed, all on node 0 (bound there), the counts adding up to the pages touched
        self.assertEqual(p["pages_unplaced"], 0)
        self.assertEqual(sum(p["pages_per_node"].values()), p["pages"])
        self.assertEqual(list(p["pages_per_node"]), ["0"])
        self.assertGreater(p["mib_per_s"], 0)
        self.assertEqual(done["request"]["cpus"], str(cpu))
        op = self.d.get("/v1/history/%d" % done["operation_id"]).json
        self.assertEqual((op["kind"], op["status"]), ("probe.touch", "ok"))
        self.assertEqual(op["result"]["passes"][0]["result"]["pages"], p["pages"])
        self.assertEqual(self.d.sql("SELECT count(*) FROM restores"), [(0,)])
        # the conditions it ran under: kernel, settings, counter deltas, free blocks before/after
        c = res["conditions"]
        self.assertEqual(c["kernel_release"], os.uname().release)
        self.assertEqual(c["settings"]["thp.enabled"], self.thp0)
        self.assertTrue(all(isinstance(v, int) and v != 0 for v in c["vmstat_delta"].values()), c["vmstat_delta"])
        self.assertGreater(c["numastat_delta"]["0"].get("numa_hit", 0), 0)
        for when in ("before", "after"):
            b = c["buddyinfo"][when]["0"]
            self.assertEqual(len(b["free_blocks"]), len(b["unusable_index"]))
            self.assertEqual(b["free_pages"], sum(n << o for o, n in enumerate(b["free_blocks"])))
            self.assertTrue(all(0 <= u <= 1 for u in b["unusable_index"]))
            self.assertTrue(all(f == -1 or 0 <= f <= 1 for f in b["fragmentation_index"]))
            # unusable grows with the order: fewer free blocks are large enough
            self.assertEqual(b["unusable_index"], sorted(b["unusable_index"]))
        self.assertEqual(op["result"]["conditions"]["kernel_release"], os.uname().release)

    def test_a_knob_change_records_its_conditions(self):
        new = other_thp(self.thp0)
        r = self.d.request("PUT", "/v1/knobs/thp.enabled", {"value": new})
        self.assertEqual(r.status, 200, r.raw)
        op = self.d.get("/v1/history/%d" % r.json["operation_id"]).json
        c = op["result"]["conditions"]
        self.assertEqual(c["settings"]["thp.enabled"], new)   # as in force after the change
        self.assertEqual(c["kernel_release"], os.uname().release)
        self.assertIn("0", c["buddyinfo"]["after"])

    def test_thp_passes_set_the_setting_and_put_it_back(self):
        first = other_thp(self.thp0)
        job = self.start("touch", {"size": "4M", "thp": [first, self.thp0]})
        done = wait_job(self.d, job["id"])
        self.assertEqual(done["status"], "ok", done)
        self.assertEqual([p["label"] for p in done["result"]["passes"]], [first, self.thp0])
        self.assertEqual(done["result"]["passes"][0]["settings"], {"thp.enabled": first})
        self.assertEqual(done["result"]["restored"],
                         [{"what": "knob", "target": "thp.enabled", "value": self.thp0, "status": "restored"}])
        self.assertEqual(bracketed(real_file(ENABLED)), self.thp0)
        self.assertEqual(self.d.sql("SELECT count(*) FROM restores"), [(0,)])

    def test_history_compare_lines_runs_up_per_metric(self):
        a = wait_job(self.d, self.start("touch", {"size": "4M"})["id"])
        b = wait_job(self.d, self.start("touch", {"size": "8M"})["id"])
        # an operation of another kind (forced: setting the value in force records nothing otherwise)
        k = self.d.request("PUT", "/v1/knobs/thp.enabled?force=true", {"value": self.thp0})
        self.assertEqual(k.status, 200, k.raw)
        ids = [a["operation_id"], b["operation_id"], k.json["operation_id"]]
        r = self.d.get("/v1/history/compare?ids=%d,%d,%d" % tuple(ids))
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual([x["id"] for x in r.json["runs"]], ids)
        self.assertEqual(r.json["runs"][0]["kernel_release"], os.uname().release)
        rows = {x["metric"]: x for x in r.json["rows"]}
        pa, pb = a["result"]["passes"][0]["result"], b["result"]["passes"][0]["result"]
        self.assertEqual(rows["pages"]["values"], [pa["pages"], pb["pages"], None])
        self.assertEqual(rows["pages"]["change_pct"], [None, 100.0, None])   # twice the pages
        self.assertEqual(rows["mib_per_s"]["values"][:2], [pa["mib_per_s"], pb["mib_per_s"]])
        self.assertAlmostEqual(rows["mib_per_s"]["change_pct"][1],
                               (pb["mib_per_s"] - pa["mib_per_s"]) / pa["mib_per_s"] * 100, places=1)
        self.assertEqual(rows["pages_per_node.0"]["values"][:2], [pa["pages_per_node"]["0"], pb["pages_per_node"]["0"]])
        for name, row in rows.items():   # every row has a column per run; counters come from conditions
            self.assertEqual(len(row["values"]), 3, name)
        vm = {n for n in rows if n.startswith("vmstat.")}
        self.assertTrue(vm, rows.keys())
        # the CLI: one column per run, the change against the first in percent
        p = self.d.ctl("history", "compare", *map(str, ids[:2]))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^pages\s+%d\s+%d \(\+100\.00%%\)$" % (pa["pages"], pb["pages"]))
        j = self.d.ctl("--json", "history", "compare", *map(str, ids[:2]))
        self.assertEqual(json.loads(j.stdout)["runs"][1]["id"], ids[1])
        # refusals
        for q, status, code in [("", 400, "request.missing_query"), ("?ids=%d" % ids[0], 400, "request.bad_query"),
                                ("?ids=1,x", 400, "request.bad_query"), ("?ids=0,1", 400, "request.bad_query"),
                                ("?ids=1,,2", 400, "request.bad_query"), ("?ids=-1,2", 400, "request.bad_query"),
                                ("?ids=" + ",".join(["1"] * 17), 400, "request.bad_query"),
                                ("?ids=1,2&x=1", 400, "request.unknown_query"),
                                ("?ids=%d,999999" % ids[0], 404, "history.not_found")]:
            with self.subTest(q=q):
                self.assertProblem(self.d.get("/v1/history/compare" + q), status, code)

    def held_pass(self, body):
        """Starts a probe whose first pass sets thp.enabled to the other value and holds; returns
        the job once /sys shows the pass's setting."""
        first = other_thp(self.thp0)
        job = self.start("touch", dict(body, size="4M", thp=[first]))
        wait_for(lambda: bracketed(real_file(ENABLED)) == first, what="the pass's THP setting")
        wait_for(lambda: self.d.sql("SELECT count(*) FROM restores") == [(1,)], what="the restore row")
        return job, first

    def test_cancel_kills_the_child_and_restores(self):
        job, _ = self.held_pass({"hold_ms": 60000})
        r = self.d.request("DELETE", "/v1/jobs/%d" % job["id"])
        self.assertIn(r.status, (200, 202), r.raw)
        done = wait_job(self.d, job["id"], timeout=10)
        self.assertEqual(done["status"], "cancelled", done)
        self.assertEqual(done["result"]["passes"][0]["status"], "cancelled")
        self.assertEqual(done["result"]["restored"][0]["status"], "restored")
        self.assertEqual(bracketed(real_file(ENABLED)), self.thp0)
        self.assertEqual(self.d.sql("SELECT count(*) FROM restores"), [(0,)])

    def test_timeout_fails_the_probe_and_restores(self):
        job, _ = self.held_pass({"hold_ms": 60000, "timeout_s": 1})
        done = wait_job(self.d, job["id"], timeout=20)
        self.assertEqual((done["status"], done["reason"]), ("failed", "timeout"), done)
        self.assertEqual(done["result"]["passes"][0]["status"], "timeout")
        self.assertEqual(bracketed(real_file(ENABLED)), self.thp0)
        self.assertEqual(self.d.sql("SELECT count(*) FROM restores"), [(0,)])

    def test_bad_requests_change_nothing(self):
        before = self.d.db_snapshot()
        first = other_thp(self.thp0)
        cases = [
            ("nope", {}, 404, "probe.unknown"),
            ("touch", {"size": 2 << 40}, 422, "probe.bad_param"),
            ("touch", {"size": "64X"}, 422, "probe.bad_param"),
            ("touch", {"size": "1000G"}, 409, "probe.too_large"),
            ("touch", {"size": 4097}, 422, "probe.bad_param"),
            ("touch", {"size": 0}, 422, "probe.bad_param"),
            ("touch", {"size": "8M", "bogus": 1}, 400, "request.unknown_field"),
            ("touch", {"size": "8M", "timeout_s": 0}, 422, "probe.bad_param"),
            ("touch", {"size": "8M", "timeout_s": 100000}, 422, "probe.bad_param"),
            ("touch", {"size": "8M", "timeout_s": "5"}, 400, "request.wrong_type"),
            ("touch", {"size": "8M", "hold_ms": -1}, 422, "probe.bad_param"),
            ("touch", {"size": "8M", "thp": [first, "sometimes"]}, 422, "probe.bad_param"),
            ("touch", {"size": "8M", "policy": {"mode": "bind", "nodes": "4000"}}, 422, "nodes.not_in_topology"),
            ("touch", {"size": "8M", "policy": {"mode": "bind", "nodes": "1-0"}}, 400, "nodes.malformed"),
            ("touch", {"size": "8M", "cpus": "4000"}, 422, "process.bad_cpus"),
            ("touch", {"size": "8M", "policy": {"mode": "sideways"}}, 422, "process.bad_policy"),
        ]
        for kind, body, status, code in cases:
            with self.subTest(kind=kind, body=body):
                self.assertProblem(self.d.request("POST", "/v1/probes/" + kind, body), status, code)
        self.assertEqual(self.d.db_snapshot(), before)
        self.assertEqual(bracketed(real_file(ENABLED)), self.thp0)

    def test_a_caller_without_admin_rights_is_refused(self):
        before = self.d.db_snapshot()
        gid = str(pwd.getpwnam("nobody").pw_gid)
        out = subprocess.run(["setpriv", "--reuid", "nobody", "--regid", gid, "--clear-groups", "--", "curl", "-sS",
                              "--unix-socket", self.d.socket, "-H", "Content-Type: application/json", "-d",
                              '{"size": "4M"}', "http://x/v1/probes/touch"], capture_output=True, text=True, timeout=30)
        self.assertEqual(json.loads(out.stdout)["code"], "auth.forbidden", out)
        self.assertEqual(self.d.db_snapshot(), before)


class ProbeCrashTest(DaemonTest):
    """SIGKILL of the daemon in the middle of a pass: the child dies with it, the THP setting stays
    changed until the next start, which puts it back before serving and records probe.restore."""

    def test_next_start_restores_what_a_killed_probe_changed(self):
        job_id, thp0, first = held_thp_probe(self, self.d)
        children = child_pids(self.d.proc.pid)
        self.d.stop(signal.SIGKILL)
        self.assertEqual(bracketed(real_file(ENABLED)), first)   # nobody put it back yet
        for pid in children:   # the probe child does not outlive the daemon (PR_SET_PDEATHSIG)
            wait_for(lambda: not os.path.exists("/proc/%d" % pid) or zombie(pid), timeout=5, what="child exit")
        self.d.start()
        restored_at_start(self, self.d, thp0)
        self.assertEqual(self.d.get("/v1/jobs/%d" % job_id).json["status"], "interrupted")


def held_thp_probe(test, d):
    """Starts a touch probe whose pass sets thp.enabled to the other value and holds (thp.enabled
    put back at the test's end whatever happens); returns (job id, the value before, the pass's)
    once /sys shows it, its restores row is written and the pass runs."""
    thp0 = bracketed(real_file(ENABLED))
    test.addCleanup(real_write, ENABLED, thp0)
    first = other_thp(thp0)
    r = d.request("POST", "/v1/probes/touch", {"size": "4M", "thp": [first], "hold_ms": 60000})
    test.assertEqual(r.status, 202, r.raw)
    job_id = r.json["id"]
    wait_for(lambda: d.sql("SELECT count(*) FROM restores") == [(1,)], what="the restore row")
    wait_for(lambda: bracketed(real_file(ENABLED)) == first, what="the pass's THP setting")
    wait_for(lambda: d.get("/v1/jobs/%d" % job_id).json["progress"].get("pass") == 1, what="the pass")
    return job_id, thp0, first


def restored_at_start(test, d, thp0):
    """The daemon just started put thp.enabled back to thp0 before serving, and recorded it as its
    one probe.restore operation."""
    test.assertEqual(bracketed(real_file(ENABLED)), thp0)
    test.assertEqual(d.sql("SELECT count(*) FROM restores"), [(0,)])
    ops = d.get("/v1/history?kind=probe.restore").json["operations"]
    test.assertEqual(len(ops), 1, ops)
    op = d.get("/v1/history/%d" % ops[0]["id"]).json
    test.assertEqual((op["status"], op["source"]), ("ok", "daemon"))
    test.assertEqual([(x["target"], x["value"], x["status"]) for x in op["result"]["restored"]],
                     [("thp.enabled", thp0, "restored")])
    # counted like any operation (the store reports the insert: the seed ran before it)
    test.assertIn('mempolicyd_operations_total{kind="probe.restore",status="ok"} 1\n', d.get("/metrics").raw)


def child_pids(pid):
    out = []
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
