"""Schedules: POST/GET/DELETE /v1/schedules and `mempolicyctl schedule`, refusals that change
nothing, a schedule that comes due and runs as a resize job, persistence across a restart, and
the missed-run policy (daemon down across a due time). Every daemon here runs on a generated tree,
so no real pool is touched."""
import calendar
import json
import os
import shutil
import tempfile
import time

from faketree import FakeTree
from lib import Daemon, DaemonTest

NS = 10**9
POOL2M = "sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages"


def tree4(root):
    return FakeTree(root, nodes=4)


def body(cron="0 2 * * *", action=None, **extra):
    if action is None:
        action = {"hugepages": {"size": "2M", "nodes": {"0": 16}}}
    b = {"cron": cron, "action": action}
    b.update(extra)
    return b


def next_daily(now_s, hour, minute, offset_s=0):
    """The next local hour:minute strictly after now_s, in a zone offset_s east of UTC, as UTC s."""
    local = now_s + offset_s
    day = local - local % 86400
    t = day + hour * 3600 + minute * 60
    if t <= local:
        t += 86400
    return t - offset_s


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


class ScheduleApiTest(DaemonTest):
    tree_factory = staticmethod(tree4)

    def create(self, b):
        r = self.d.request("POST", "/v1/schedules", body=b)
        self.assertEqual(r.status, 201, r.raw)
        self.addCleanup(self.d.request, "DELETE", "/v1/schedules/%d" % r.json["id"])
        return r

    def assertRefused(self, b, status, code, detail_has=(), method="POST", path="/v1/schedules", raw=None):
        db0, tree0 = self.d.db_snapshot(), self.tree.snapshot()
        if raw is not None:
            r = self.d.request(method, path, raw=raw, headers={"Content-Type": "application/json"})
        else:
            r = self.d.request(method, path, body=b)
        self.assertProblem(r, status, code)
        for s in detail_has:
            self.assertIn(s, r.json["detail"])
        self.assertEqual(self.d.db_snapshot(), db0, "a refused request changed the database")
        self.assertEqual(self.tree.snapshot(), tree0, "a refused request changed the tree")
        return r

    # -- create / read / delete ---------------------------------------------------------------------
    def test_create_is_201_with_location_and_next_run(self):
        before = int(time.time())
        r = self.create(body(misfire_grace_s=120))
        after = int(time.time())
        s = r.json
        self.assertEqual(r.headers.get("Location"), "/v1/schedules/%d" % s["id"])
        self.assertEqual(s["cron"], "0 2 * * *")
        self.assertEqual(s["timezone"], "UTC")
        self.assertEqual(s["action"], {"hugepages": {"size": "2M", "nodes": {"0": 16}}})
        self.assertTrue(s["enabled"])
        self.assertEqual(s["misfire_grace_s"], 120)
        self.assertIn(s["next_run_ns"], {next_daily(before, 2, 0) * NS, next_daily(after, 2, 0) * NS})
        self.assertEqual(s["next_run_at"], time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s["next_run_ns"] // NS))
                         + ".%09dZ" % (s["next_run_ns"] % NS))
        self.assertEqual(s["created_by"], {"uid": 0, "name": "root"})
        self.assertIsNone(s["last_run_ns"])
        self.assertIsNone(s["last_job_id"])
        # GET by the Location and in the list show the same thing; the row is in the database.
        g = self.d.get(r.headers["Location"])
        self.assertEqual(g.status, 200)
        self.assertEqual(g.json, s)
        lst = self.d.get("/v1/schedules")
        self.assertEqual(lst.status, 200)
        self.assertIn(s, lst.json["schedules"])
        row = self.d.sql("SELECT cron, timezone, json(action), next_run_ns, misfire_grace_s, created_by_uid "
                         "FROM schedules WHERE id = ?", (s["id"],))
        self.assertEqual(row, [("0 2 * * *", "UTC", json.dumps(s["action"], separators=(",", ":")),
                                s["next_run_ns"], 120, 0)])

    def test_default_grace_total_target_and_macro(self):
        s = self.create(body("@hourly", {"hugepages": {"size": "2048kB", "total": 64, "batch": 8}})).json
        self.assertEqual(s["misfire_grace_s"], 3600)
        now = time.time()
        self.assertGreater(s["next_run_ns"], now * NS)
        self.assertLessEqual(s["next_run_ns"], (now + 3600) * NS)
        self.assertEqual(s["next_run_ns"] % (3600 * NS), 0)

    def test_fixed_offset_timezone_moves_next_run(self):
        before = int(time.time())
        s = self.create(body(timezone="+02:00")).json
        self.assertEqual(s["timezone"], "+02:00")
        self.assertIn(s["next_run_ns"], {next_daily(before, 2, 0, 7200) * NS,
                                         next_daily(int(time.time()), 2, 0, 7200) * NS})
        self.assertEqual(s["next_run_ns"] // NS % 86400, 0)   # 02:00 at +02:00 is 00:00 UTC
        s = self.create(body(timezone="UTC-05:30")).json
        self.assertEqual(s["timezone"], "-05:30")
        self.assertEqual(s["next_run_ns"] // NS % 86400, 7 * 3600 + 30 * 60)

    def test_delete_returns_it_and_removes_it(self):
        r = self.d.request("POST", "/v1/schedules", body=body("*/5 * * * *"))
        self.assertEqual(r.status, 201, r.raw)
        sid = r.json["id"]
        d = self.d.request("DELETE", "/v1/schedules/%d" % sid)
        self.assertEqual(d.status, 200, d.raw)
        self.assertEqual(d.json["id"], sid)
        self.assertEqual(d.json["cron"], "*/5 * * * *")
        self.assertProblem(self.d.get("/v1/schedules/%d" % sid), 404, "schedule.not_found")
        self.assertProblem(self.d.request("DELETE", "/v1/schedules/%d" % sid), 404, "schedule.not_found")
        self.assertEqual(self.d.sql("SELECT count(*) FROM schedules WHERE id = ?", (sid,)), [(0,)])
        self.assertNotIn(sid, [s["id"] for s in self.d.get("/v1/schedules").json["schedules"]])

    def test_unknown_ids_are_404(self):
        for p in ("/v1/schedules/999999", "/v1/schedules/0", "/v1/schedules/abc", "/v1/schedules/-1",
                  "/v1/schedules/99999999999999999999"):
            self.assertProblem(self.d.get(p), 404, "schedule.not_found")

    def test_unknown_query_is_400(self):
        self.assertProblem(self.d.get("/v1/schedules?all=1"), 400, "request.unknown_query")

    # -- refusals: right 4xx, nothing changed ----------------------------------------------------
    def test_malformed_cron_names_the_field(self):
        cases = [
            ("60 0 * * *", "minute", "60"), ("0 24 * * *", "hour", "24"), ("0 0 0 * *", "day-of-month", "0"),
            ("0 0 32 * *", "day-of-month", "32"), ("0 0 * 13 *", "month", "13"), ("0 0 * FOO *", "month", "FOO"),
            ("0 0 * * 8", "day-of-week", "8"), ("0 0 * * MONDAY", "day-of-week", "MONDAY"),
            ("*/0 * * * *", "minute", "step 0"), ("5-1 * * * *", "minute", "5-1"), ("1,,2 * * * *", "minute", "empty"),
            # issue 21: three digits for a value were accepted ("000" was 0)
            ("000 2 * * *", "minute", "'000'"), ("0 2 * * 007", "day-of-week", "'007'"),
        ]
        for cron, field, token in cases:
            with self.subTest(cron=cron):
                self.assertRefused(body(cron), 422, "schedule.bad_cron", ("cron %s field" % field, token))
        for cron, why in (("0 2 * *", "4 fields"), ("0 2 * * * *", "more than five"), ("", "0 fields"),
                          ("0 0 30 2 *", "never fires"), ("@sometimes", "unknown macro"),
                          # issue 21: a leading tab (or any blank before or after) was accepted
                          ("\t0 2 * * *", "starts or ends with a space or tab"), (" @daily", "starts or ends"),
                          ("0 2 * * * ", "starts or ends")):
            with self.subTest(cron=cron):
                self.assertRefused(body(cron), 422, "schedule.bad_cron", (why,))

    def test_bad_timezone_and_grace(self):
        self.assertRefused(body(timezone="Europe/Paris"), 422, "schedule.bad_timezone", ("Europe/Paris",))
        self.assertRefused(body(timezone="+15:00"), 422, "schedule.bad_timezone")
        self.assertRefused(body(misfire_grace_s=0), 422, "schedule.bad_grace")
        self.assertRefused(body(misfire_grace_s=10**9), 422, "schedule.bad_grace")
        self.assertRefused(body(misfire_grace_s="1h"), 400, "request.wrong_type")
        self.assertRefused(body(timezone=2), 400, "request.wrong_type")
        self.assertRefused(body(cron=5), 400, "request.wrong_type")

    def test_bad_action_is_refused_up_front(self):
        hp = lambda **k: {"hugepages": dict({"size": "2M"}, **k)}
        self.assertRefused(body(action=hp(size="3M", total=1)), 422, "hugepages.unknown_size")
        self.assertRefused(body(action=hp(nodes={"9": 1})), 422, "resize.bad_node")
        self.assertRefused(body(action=hp(nodes={"0": -1})), 422, "resize.bad_count")
        self.assertRefused(body(action=hp(total=10**12)), 422, "resize.bad_count")
        self.assertRefused(body(action=hp(total=1, nodes={"0": 1})), 400, "resize.bad_request")
        self.assertRefused(body(action=hp()), 400, "resize.bad_request")
        self.assertRefused(body(action=hp(total="many")), 400, "resize.bad_request")
        self.assertRefused(body(action={"hugepages": {"total": 1}}), 400, "request.missing_field")
        self.assertRefused(body(action=hp(total=1, dry_run=True)), 400, "request.unknown_field", ("dry_run",))
        self.assertRefused(body(action=hp(total=1, colour="red")), 400, "request.unknown_field", ("colour",))
        self.assertRefused(body(action={"knobs": {"thp.enabled": "never"}}), 400, "request.unknown_field")
        self.assertRefused(body(action={}), 400, "request.missing_field")
        self.assertRefused(body(action=[1]), 400, "request.wrong_type")
        self.assertRefused(body(action={"hugepages": 5}), 400, "request.wrong_type")

    def test_unknown_and_missing_fields_are_400(self):
        self.assertRefused(body(colour="red"), 400, "request.unknown_field", ("colour",))
        self.assertRefused({"action": body()["action"]}, 400, "request.missing_field", ("cron",))
        self.assertRefused({"cron": "* * * * *"}, 400, "request.missing_field", ("action",))
        self.assertRefused(None, 400, "request.duplicate_key", raw=b'{"cron":"* * * * *","cron":"0 2 * * *"}')
        self.assertRefused(None, 400, None, raw=b'{"cron":')

    def test_unauthorised_caller_is_403_and_changes_nothing(self):
        sid = self.create(body()).json["id"]
        db0 = self.d.db_snapshot()
        p = self.d.ctl("schedule", "add", "--cron", "0 3 * * *", "--size", "2M", "--total", "4", user="nobody")
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("auth.forbidden", p.stderr)
        p = self.d.ctl("schedule", "rm", str(sid), user="nobody")
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("auth.forbidden", p.stderr)
        self.assertEqual(self.d.db_snapshot(), db0)
        # Reading stays open to local users.
        p = self.d.ctl("--json", "schedule", "show", str(sid), user="nobody")
        self.assertEqual(p.returncode, 0, p)
        self.assertEqual(json.loads(p.stdout)["id"], sid)

    # -- CLI ------------------------------------------------------------------------------------
    def test_cli_add_list_show_rm(self):
        p = self.d.ctl("--json", "schedule", "add", "--cron", "30 4 * * MON-FRI", "--size", "2M",
                       "--node", "0=32", "--node=1=8", "--timezone", "+01:00", "--grace", "600")
        self.assertEqual(p.returncode, 0, p)
        s = json.loads(p.stdout)
        self.addCleanup(self.d.request, "DELETE", "/v1/schedules/%d" % s["id"])
        self.assertEqual(s["action"], {"hugepages": {"size": "2M", "nodes": {"0": 32, "1": 8}}})
        self.assertEqual((s["timezone"], s["misfire_grace_s"]), ("+01:00", 600))
        self.assertEqual(self.d.get("/v1/schedules/%d" % s["id"]).json, s)
        p = self.d.ctl("schedule", "list")
        self.assertEqual(p.returncode, 0, p)
        line = [l for l in p.stdout.splitlines() if l.split()[:1] == [str(s["id"])]]
        self.assertEqual(len(line), 1, p.stdout)
        self.assertIn("30 4 * * MON-FRI", line[0])
        self.assertIn("2M node0=32 node1=8", line[0])
        p = self.d.ctl("schedule", "show", str(s["id"]))
        self.assertEqual(p.returncode, 0, p)
        self.assertRegex(p.stdout, r"next_run\s+\d{4}-\d\d-\d\dT03:30:00")  # 04:30 at +01:00, shown in UTC
        p = self.d.ctl("schedule", "rm", str(s["id"]))
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "schedule %d deleted" % s["id"]))
        self.assertEqual(self.d.sql("SELECT count(*) FROM schedules WHERE id = ?", (s["id"],)), [(0,)])

    def test_cli_usage_errors_exit_2_and_send_nothing(self):
        db0 = self.d.db_snapshot()
        for args in (["--size", "2M", "--total", "1"], ["--cron", "* * * * *", "--total", "1"],
                     ["--cron", "* * * * *", "--size", "2M"],
                     ["--cron", "* * * * *", "--size", "2M", "--total", "1", "--node", "0=1"],
                     ["--cron", "* * * * *", "--size", "2M", "--node", "0"],
                     ["--cron", "* * * * *", "--size", "2M", "--node", "0=1", "--node", "0=2"],
                     ["--cron", "* * * * *", "--size", "2M", "--total", "-3"]):
            with self.subTest(args=args):
                p = self.d.ctl("schedule", "add", *args)
                self.assertEqual(p.returncode, 2, p)
                self.assertEqual(p.stdout, "")
        for args in (["show"], ["show", "x"], ["rm", "0"]):
            self.assertEqual(self.d.ctl("schedule", *args).returncode, 2)
        self.assertEqual(self.d.db_snapshot(), db0)

    def test_cli_refusal_from_daemon_exits_1_with_code(self):
        p = self.d.ctl("schedule", "add", "--cron", "0 25 * * *", "--size", "2M", "--total", "1")
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("cron hour field", p.stderr)
        self.assertIn("schedule.bad_cron", p.stderr)
        p = self.d.ctl("schedule", "show", "424242")
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("schedule.not_found", p.stderr)


class ScheduleRestartTest(DaemonTest):
    tree_factory = staticmethod(tree4)

    def test_restart_keeps_schedules(self):
        r = self.d.request("POST", "/v1/schedules", body=body("15 3 1 * *", timezone="-03:00"))
        self.assertEqual(r.status, 201, r.raw)
        before = self.d.get("/v1/schedules").json
        self.d.restart()
        self.assertEqual(self.d.get("/v1/schedules").json, before)
        self.assertEqual(self.d.get(r.headers["Location"]).json, r.json)


class ScheduleDueTest(DaemonTest):
    """One due minute serves every assertion, on the test clock (server/clock.h), so nothing waits
    for a real minute: daemon A is up across it (its clock is moved past it); daemon B is stopped
    before it and started 10 s after it. All schedules name that exact minute (month, day, hour,
    minute), so each fires once and its next run is a year later."""
    tree_factory = staticmethod(tree4)
    DUE = calendar.timegm((2031, 3, 14, 2, 0, 0))   # any minute will do; this one is not today
    daemon_args = ()

    @classmethod
    def setUpClass(cls):
        # DaemonTest starts cls.d; it must be on the test clock from its start.
        cls.tmp = tempfile.mkdtemp(prefix="mpd-tree-")
        os.chmod(cls.tmp, 0o755)
        cls.tree = tree4(cls.tmp)
        # A test below moves the clock a year on: retention by age (90 days) would then remove the
        # jobs the other tests look at, so it is off here (test_retention.py tests it).
        keep = ("--retain-days", "0")
        cls.d = Daemon(cls.tree, keep, clock_ns=(cls.DUE - 30) * NS)
        cls.tmp_b = tempfile.mkdtemp(prefix="mpd-tree-b-")
        os.chmod(cls.tmp_b, 0o755)
        cls.tree_b = tree4(cls.tmp_b)
        cls.b = Daemon(cls.tree_b, keep, clock_ns=(cls.DUE - 30) * NS)
        try:
            cls.d.start()
            cls.b.start()
            cls._arrange()
        except BaseException:
            cls.b.cleanup()
            cls.d.cleanup()
            shutil.rmtree(cls.tmp_b, ignore_errors=True)
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def _arrange(cls):
        due = cls.due = cls.DUE
        tm = time.gmtime(due)
        cron = "%d %d %d %d *" % (tm.tm_min, tm.tm_hour, tm.tm_mday, tm.tm_mon)
        cls.cron = cron

        def post(d, b):
            r = d.request("POST", "/v1/schedules", body=b)
            if r.status != 201:
                raise AssertionError(r.raw)
            if r.json["next_run_ns"] != due * NS:
                raise AssertionError("next_run %s, want %s" % (r.json["next_run_ns"], due * NS))
            return r.json["id"]

        cls.a_id = post(cls.d, body(cron, {"hugepages": {"size": "2M", "nodes": {"0": 8}}}))
        # the same size in the same minute: its job queues behind a_id's and runs after it
        cls.a2_id = post(cls.d, body(cron, {"hugepages": {"size": "2M", "nodes": {"2": 5}}}))
        cls.b_late_id = post(cls.b, body(cron, {"hugepages": {"size": "2M", "nodes": {"1": 6}}}))
        cls.b_skip_id = post(cls.b, body(cron, {"hugepages": {"size": "1G", "nodes": {"0": 1}}},
                                         misfire_grace_s=5))
        # Nothing is due yet: the scheduler passes at start and after each create submitted nothing.
        for d in (cls.d, cls.b):
            if d.sql("SELECT count(*) FROM jobs") != [(0,)]:
                raise AssertionError("a job before the due minute:\n" + d.log_text())
        cls.b.stop()
        cls.d.set_clock(due * NS)            # A: the due minute comes while it runs
        cls.b_started = due + 10
        cls.b.write_clock(cls.b_started * NS)   # B: starts 10 s after it
        cls.b.start()
    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.b.cleanup()
            if rc not in (0, None):
                raise AssertionError("daemon B exited with %s:\n%s" % (rc, cls.b.last_log))
        finally:
            shutil.rmtree(cls.tmp_b, ignore_errors=True)
            super().tearDownClass()

    def jobs_of(self, d, sid):
        return d.sql("SELECT id, status, source, schedule_id, created_ns, op_id FROM jobs WHERE schedule_id = ?",
                     (sid,))

    def finished_job(self, d, sid):
        def done():
            rows = self.jobs_of(d, sid)
            return rows if rows and rows[0][1] not in ("queued", "running") else None
        return wait_for(done, 30, "the job of schedule %d" % sid)

    def next_year(self):
        tm = time.gmtime(self.due)
        y = tm.tm_year + 1
        while tm.tm_mon == 2 and tm.tm_mday == 29 and not calendar.isleap(y):
            y += 1
        return calendar.timegm((y, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, 0))

    def test_due_schedule_runs_once_as_a_tagged_job_and_is_recorded(self):
        rows = self.finished_job(self.d, self.a_id)
        self.assertEqual(len(rows), 1, rows)
        job_id, status, source, sid, created_ns, op_id = rows[0]
        self.assertEqual((status, source, sid), ("ok", "scheduler", self.a_id), self.d.log_text())
        # Submitted at the due minute, not before, and promptly.
        self.assertGreaterEqual(created_ns, self.due * NS)
        self.assertLess(created_ns, (self.due + 10) * NS)
        # The pool reached the target on the node named, and nowhere else.
        self.assertEqual(self.tree.read(POOL2M % 0), "8")
        self.assertEqual(self.tree.read(POOL2M % 1), "0")
        # The API shows the job and the schedule's record of it.
        j = self.d.get("/v1/jobs/%d" % job_id)
        self.assertEqual(j.status, 200, j.raw)
        self.assertEqual((j.json["status"], j.json["schedule_id"], j.json["source"]), ("ok", self.a_id, "scheduler"))
        lst = self.d.get("/v1/jobs?schedule_id=%d" % self.a_id)
        self.assertEqual([x["id"] for x in lst.json["jobs"]], [job_id], lst.raw)
        s = self.d.get("/v1/schedules/%d" % self.a_id).json
        self.assertEqual((s["last_status"], s["last_job_id"], s["last_due_ns"]), ("submitted", job_id, self.due * NS))
        self.assertEqual(s["next_run_ns"], self.next_year() * NS)
        # History holds the resize, made by the daemon itself.
        op = self.d.sql("SELECT kind, source, actor_uid, status FROM operations WHERE id = ?", (op_id,))
        self.assertEqual(op, [("hugepages.resize", "scheduler", None, "ok")])

    def test_same_size_same_minute_runs_in_turn(self):
        first, second = self.finished_job(self.d, self.a_id)[0], self.finished_job(self.d, self.a2_id)[0]
        self.assertEqual((first[1], second[1]), ("ok", "ok"), self.d.log_text())
        self.assertEqual(self.tree.read(POOL2M % 2), "5")
        # One after the other, in the scheduler's order, never both at the kernel at once: the later
        # one started after the earlier one's last write.
        early, late = sorted((first, second))
        writes = {j[0]: self.d.sql("SELECT min(started_ns), max(started_ns), count(*) FROM batches WHERE op_id = ?",
                                   (j[5],))[0] for j in (early, late)}
        started = self.d.sql("SELECT started_ns FROM jobs WHERE id = ?", (late[0],))[0][0]
        self.assertGreater(started, writes[early[0]][1], (writes, started))
        self.assertGreater(writes[late[0]][0], writes[early[0]][1], writes)
        # Whether the later one had to queue depends on whether the earlier one (five pages on a
        # generated tree: about a millisecond) was still running when the scheduler fired the
        # second schedule; when it was, the runner says so. The queue itself (order, bound) is
        # tested deterministically with gated jobs in tests/unit/test_jobs.c. The test clock's
        # readings are distinct and in order, so the comparison is exact.
        created = self.d.sql("SELECT created_ns FROM jobs WHERE id = ?", (late[0],))[0][0]
        early_done = self.d.sql("SELECT finished_ns FROM jobs WHERE id = ?", (early[0],))[0][0]
        if created < early_done:
            self.assertIn("job %d (hugepages.resize) queued by scheduler behind job %d" % (late[0], early[0]),
                          self.d.log_text())
        for sid in (self.a_id, self.a2_id):
            s = self.d.get("/v1/schedules/%d" % sid).json
            self.assertEqual((s["last_status"], s["last_error"]), ("submitted", None))
        self.assertEqual(self.d.sql("SELECT count(*) FROM operations WHERE kind = 'schedule.run'"), [(0,)])

    def test_missed_run_within_grace_runs_once_after_restart(self):
        rows = self.finished_job(self.b, self.b_late_id)
        self.assertEqual(len(rows), 1, rows)
        job_id, status, source, sid, created_ns, _ = rows[0]
        self.assertEqual((status, source), ("ok", "scheduler"), self.b.log_text())
        self.assertGreaterEqual(created_ns, self.b_started * NS)   # run by the restarted daemon
        self.assertEqual(self.tree_b.read(POOL2M % 1), "6")
        s = self.b.get("/v1/schedules/%d" % self.b_late_id).json
        self.assertEqual((s["last_status"], s["last_job_id"], s["last_due_ns"]), ("submitted", job_id, self.due * NS))
        self.assertEqual(s["next_run_ns"], self.next_year() * NS)

    def test_missed_run_past_grace_is_skipped_and_recorded(self):
        self.finished_job(self.b, self.b_late_id)   # the pass that handled both has happened
        self.assertEqual(self.jobs_of(self.b, self.b_skip_id), [])
        self.assertEqual(self.tree_b.read("sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"),
                         "0")
        s = self.b.get("/v1/schedules/%d" % self.b_skip_id).json
        self.assertEqual(s["last_status"], "skipped")
        self.assertIsNone(s["last_job_id"])
        self.assertEqual(s["last_due_ns"], self.due * NS)
        self.assertEqual(s["next_run_ns"], self.next_year() * NS)
        ops = self.b.sql("SELECT id, source, status, json_extract(request, '$.schedule_id'), "
                         "json_extract(result, '$.missed'), json_extract(result, '$.first_due_ns'), "
                         "json_extract(result, '$.misfire_grace_s') FROM operations WHERE kind = 'schedule.run'")
        self.assertEqual(ops, [(s["last_operation_id"], "scheduler", "skipped", self.b_skip_id, 1, self.due * NS, 5)])
        # No skip was recorded for the schedule that ran.
        self.assertEqual(self.b.sql("SELECT count(*) FROM operations WHERE kind = 'schedule.run' AND "
                                    "json_extract(request, '$.schedule_id') = ?", (self.b_late_id,)), [(0,)])

    def test_each_due_schedule_ran_exactly_once(self):
        self.finished_job(self.b, self.b_late_id)
        self.finished_job(self.d, self.a_id)
        # Passes after the due minute, up to the last second before the next run, submit nothing.
        for d in (self.d, self.b):
            d.set_clock((self.due + 59) * NS)
            d.set_clock((self.next_year() - 1) * NS)
        self.assertEqual(len(self.jobs_of(self.d, self.a_id)), 1)
        self.assertEqual(len(self.jobs_of(self.d, self.a2_id)), 1)
        self.assertEqual(len(self.jobs_of(self.b, self.b_late_id)), 1)
        self.assertEqual(self.b.sql("SELECT count(*) FROM jobs"), [(1,)])
