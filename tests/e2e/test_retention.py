"""Every collection bounded: lists paged by one cursor (schedules, jobs, history), schedules capped
(max-schedules, 409 schedule.limit), history, batches and finished jobs pruned by age and count
(retain-*) without touching what unfinished work needs, and `mempolicyctl history export` to keep
everything first. Every daemon here runs on a generated tree: no real pool or knob is touched."""
import json
import os
import re
import shutil
import signal
import sqlite3
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import Daemon, DaemonTest

NS = 10**9
DAY = 86400 * NS


def tree4(root):
    return FakeTree(root, nodes=4)


def schedule(n):
    return {"cron": "%d 2 * * *" % (n % 60), "action": {"hugepages": {"size": "2M", "nodes": {"0": 16}}}}


def insert_ops(db, rows):
    """rows: (started_ns, status, n_knob_changes, n_batches, kind); returns the new ids in order."""
    con = sqlite3.connect(db, timeout=10)
    ids = []
    try:
        for started, status, nk, nb, kind in rows:
            cur = con.execute("INSERT INTO operations(kind, source, actor_uid, actor_name, started_ns, finished_ns,"
                              " status) VALUES (?, 'api', 0, 'root', ?, ?, ?)",
                              (kind, started, None if status == "running" else started + 1000, status))
            op = cur.lastrowid
            ids.append(op)
            for s in range(nk):
                con.execute("INSERT INTO knob_changes(op_id, seq, knob, old, new, status) VALUES (?, ?,"
                            " 'thp.enabled', 'madvise', 'never', 'written')", (op, s))
            for s in range(nb):
                con.execute("INSERT INTO batches(op_id, seq, kind, size_kb, node, direction, started_ns, before,"
                            " written, after, requested, achieved, elapsed_ns, latency_ns) VALUES (?, ?,"
                            " 'hugepages.resize', 2048, 0, 'grow', ?, 0, 1, 1, 1, 1, 1000, 1000)", (op, s, started))
        con.commit()
    finally:
        con.close()
    return ids


def insert_job(db, op_id, status, created_ns):
    con = sqlite3.connect(db, timeout=10)
    try:
        cur = con.execute("INSERT INTO jobs(kind, status, source, op_id, created_ns, finished_ns) VALUES"
                          " ('hugepages.resize', ?, 'api', ?, ?, ?)",
                          (status, op_id, created_ns, None if status in ("queued", "running") else created_ns + 1))
        con.commit()
        return cur.lastrowid
    finally:
        con.close()


class Paging(DaemonTest):
    tree_factory = staticmethod(tree4)
    daemon_args = ("--max-schedules", "7")

    def test_schedules_are_paged_and_capped(self):
        ids = []
        for n in range(7):
            r = self.d.request("POST", "/v1/schedules", body=schedule(n))
            self.assertEqual(r.status, 201, r.raw)
            ids.append(r.json["id"])
            self.addCleanup(self.d.request, "DELETE", "/v1/schedules/%d" % r.json["id"])
        before = self.d.db_snapshot()
        r = self.d.request("POST", "/v1/schedules", body=schedule(8))
        self.assertProblem(r, 409, "schedule.limit")
        self.assertIn("max-schedules", r.json["detail"])
        self.assertEqual(self.d.db_snapshot(), before, "a refused schedule changed the database")

        seen, cursor, pages = [], None, 0
        while True:
            r = self.d.get("/v1/schedules?limit=3" + ("&cursor=" + cursor if cursor else ""))
            self.assertEqual(r.status, 200, r.raw)
            seen += [s["id"] for s in r.json["schedules"]]
            pages += 1
            cursor = r.json["next_cursor"]
            if cursor is None:
                break
            self.assertEqual(len(r.json["schedules"]), 3)
        self.assertEqual((seen, pages), (ids, 3))
        # the default page holds them all (100), and says there is no more
        self.assertEqual([s["id"] for s in self.d.get("/v1/schedules").json["schedules"]], ids)
        self.assertProblem(self.d.get("/v1/schedules?limit=0"), 400, "request.bad_query")
        self.assertProblem(self.d.get("/v1/schedules?limit=1001"), 400, "request.bad_query")
        self.assertProblem(self.d.get("/v1/schedules?cursor=zz"), 400, "request.bad_query")

        # the CLI prints the command for the next page, and that command gets it
        p = self.d.ctl("schedule", "list", "--limit", "4")
        self.assertEqual(p.returncode, 0, p.stderr)
        more = [l for l in p.stderr.splitlines() if l.startswith("more: ")]   # a hint: stderr
        self.assertEqual(len(more), 1, p.stderr)
        args = more[0].split()[2:]
        self.assertEqual(args[:5], ["schedule", "list", "--limit", "4", "--cursor"])
        p = self.d.ctl(*args[:6])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("more: ", p.stderr)
        self.assertEqual([int(l.split()[0]) for l in p.stdout.splitlines()[1:]], ids[4:])

    def test_jobs_are_paged_with_a_cursor_bound_to_list_and_filters(self):
        now = time.time_ns()
        ops = insert_ops(self.d.db, [(now, "ok", 0, 0, "hugepages.resize")] * 5)
        jobs = [insert_job(self.d.db, op, "ok", now) for op in ops]
        seen, cursor = [], None
        while True:
            r = self.d.get("/v1/jobs?status=ok&limit=2" + ("&cursor=" + cursor if cursor else ""))
            self.assertEqual(r.status, 200, r.raw)
            seen += [j["id"] for j in r.json["jobs"]]
            cursor = r.json["next_cursor"]
            if cursor is None:
                break
            # bound to the filters and to the list: replayed elsewhere it is refused
            self.assertProblem(self.d.get("/v1/jobs?limit=2&cursor=" + cursor), 400, "request.cursor_mismatch")
            self.assertProblem(self.d.get("/v1/schedules?cursor=" + cursor), 400, "request.cursor_mismatch")
        self.assertEqual(seen, sorted(jobs, reverse=True))
        # One paging scheme for every list: the older before=ID is an unknown parameter now.
        for q in ("before=%d" % jobs[2], "status=ok&before=9&limit=2"):
            self.assertProblem(self.d.get("/v1/jobs?" + q), 400, "request.unknown_query")

        p = self.d.ctl("job", "list", "--status", "ok", "--limit", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        more = [l for l in p.stderr.splitlines() if l.startswith("more: ")]   # a hint: stderr
        self.assertEqual(len(more), 1, p.stderr)
        args = more[0].split()[2:]
        self.assertEqual(args[:7], ["job", "list", "--status", "ok", "--limit", "3", "--cursor"])
        p = self.d.ctl(*args[:8])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([int(l.split()[0]) for l in p.stdout.splitlines()[1:]], sorted(jobs[:2], reverse=True))


class JobListSummaries(DaemonTest):
    """GET /v1/jobs?limit=1000 answered 4.3 MB to any local user (issue 21): each item was the whole
    job, its request and its result (a resize's conditions, a probe's passes). A list carries the
    summary line instead; the whole job is at /v1/jobs/{id}."""
    tree_factory = staticmethod(tree4)

    def test_a_list_item_is_a_summary_and_the_job_is_whole_at_its_id(self):
        ids = []
        for n in (3, 1):
            r = self.d.request("PUT", "/v1/hugepages/2M", {"nodes": {"0": n}})
            self.assertEqual(r.status, 202, r.raw)
            self.assertEqual(self.d.get("/v1/jobs/%d?wait=10" % r.json["id"]).json["status"], "ok")
            ids.append(r.json["id"])
        self.addCleanup(self.d.request, "PUT", "/v1/hugepages/2M", {"nodes": {"0": 0}})
        items = {j["id"]: j for j in self.d.get("/v1/jobs").json["jobs"]}
        for i in ids:
            whole = self.d.get("/v1/jobs/%d" % i).json
            self.assertIn("conditions", whole["result"])
            self.assertIn("request", whole)
            item = items[i]
            self.assertNotIn("request", item)
            self.assertNotIn("result", item)
            # everything else is the job's own, and the summary is the history's for its operation
            self.assertEqual({k: v for k, v in whole.items() if k not in ("request", "result")},
                             {k: v for k, v in item.items() if k != "summary"})
            op = self.d.get("/v1/history/%d" % whole["operation_id"]).json
            self.assertEqual(item["summary"], op["summary"])
        self.assertEqual(items[ids[0]]["summary"], "2M node0 +3 ok")
        self.assertEqual(items[ids[1]]["summary"], "2M node0 -2 ok")
        # The CLI's table reads what a list item still has.
        p = self.d.ctl("job", "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^%d\s+hugepages\.resize\s+ok\s" % ids[1])


class Retention(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-retain-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.tree = FakeTree(self.tmp, nodes=4)

    def daemon(self, *args):
        d = Daemon(self.tree, args)
        self.addCleanup(d.cleanup)
        d.start()
        return d

    def passes(self, d):
        with open(d.log) as f:
            return len(re.findall(r"retention: pass at \d+ done", f.read()))

    def pass_now(self, d):
        """SIGHUP runs a retention pass at once; returns when it is done."""
        seen = self.passes(d)
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.passes(d) > seen:
                return
            time.sleep(0.05)
        self.fail("no retention pass after SIGHUP:\n" + d.log_text())

    def test_prunes_by_age_and_count_and_keeps_what_unfinished_work_needs(self):
        d = self.daemon("--retain-days", "30", "--retain-operations", "40", "--retain-batches", "100",
                        "--retain-jobs", "5")
        now = time.time_ns()
        old = insert_ops(d.db, [(now - 60 * DAY + i, "ok", 2, 10, "knobs.set") for i in range(30)])
        # a queued job from long ago and its operation, still running: never pruned
        held_op = insert_ops(d.db, [(now - 90 * DAY, "running", 0, 3, "hugepages.resize")])[0]
        held_job = insert_job(d.db, held_op, "queued", now - 90 * DAY)
        recent = insert_ops(d.db, [(now - (60 - i) * NS, "ok", 1, 5, "knobs.set") for i in range(60)])
        old_jobs = [insert_job(d.db, op, "ok", now - 60 * DAY) for op in old[:3]]
        new_jobs = [insert_job(d.db, op, "ok", now - NS) for op in recent[:10]]

        self.pass_now(d)
        kept = [r[0] for r in d.sql("SELECT id FROM operations ORDER BY id")]
        # the 40 newest by count, none of the old ones by age, and the running one whatever its age
        self.assertEqual(kept, sorted([held_op] + recent[-40:]))
        self.assertEqual(d.sql("SELECT count(*) FROM knob_changes WHERE op_id NOT IN"
                               " (SELECT id FROM operations)")[0][0], 0)
        self.assertEqual(d.sql("SELECT count(*) FROM knob_changes")[0][0], 40)
        # batches: at most 100 (plus the running operation's, kept whole), the newest operations'
        nb = d.sql("SELECT count(*) FROM batches WHERE op_id != ?", (held_op,))[0][0]
        self.assertLessEqual(nb, 100)
        self.assertGreaterEqual(nb, 95)
        self.assertEqual(d.sql("SELECT count(*) FROM batches WHERE op_id = ?", (held_op,))[0][0], 3)
        self.assertEqual(d.sql("SELECT min(op_id) FROM batches WHERE op_id != ?", (held_op,))[0][0],
                         recent[-20])
        jobs = [r[0] for r in d.sql("SELECT id FROM jobs ORDER BY id")]
        self.assertEqual(jobs, [held_job] + new_jobs[-5:])
        self.assertFalse(set(old_jobs) & set(jobs))
        # what is kept still reads: the API answers for a kept operation and 404 for a pruned one
        self.assertEqual(d.get("/v1/history/%d" % recent[-1]).status, 200)
        self.assertEqual(d.get("/v1/history/%d" % old[0]).status, 404)
        self.assertIn("retention: removed", d.log_text())
        # a second pass finds nothing more to do
        before = d.db_snapshot()
        self.pass_now(d)
        self.assertEqual(d.db_snapshot(), before)

    def test_defaults_keep_recent_history_whole(self):
        d = self.daemon()
        now = time.time_ns()
        ids = insert_ops(d.db, [(now - 91 * DAY, "ok", 1, 2, "knobs.set"), (now - 89 * DAY, "ok", 1, 2, "knobs.set")])
        self.pass_now(d)
        self.assertEqual([r[0] for r in d.sql("SELECT id FROM operations")], [ids[1]])
        self.assertEqual(d.sql("SELECT count(*) FROM batches")[0][0], 2)

    def test_age_is_judged_in_commit_order_not_by_a_stepped_clock(self):
        """An operation recorded after one inside the window stays even if its clock read older
        (the wall clock was stepped back in between): nothing newer is dropped out of order."""
        d = self.daemon("--retain-days", "30")
        now = time.time_ns()
        ids = insert_ops(d.db, [(now - 40 * DAY, "ok", 0, 0, "knobs.set"), (now - DAY, "ok", 0, 0, "knobs.set"),
                                (now - 40 * DAY, "ok", 0, 0, "knobs.set")])
        self.pass_now(d)
        self.assertEqual([r[0] for r in d.sql("SELECT id FROM operations ORDER BY id")], ids[1:])

    def test_prunes_by_size_newest_kept(self):
        """retain-bytes (issue 21: a cap by count alone let 1,000,000 operations take several GB): over
        the cap, the oldest operations and finished jobs go until the pages in use fit, and the
        newest stay; a database within the cap loses nothing."""
        d = self.daemon("--retain-bytes", "1M", "--retain-operations", "0", "--retain-days", "0")
        now = time.time_ns()
        ids = insert_ops(d.db, [(now - (2000 - i) * NS, "ok", 1, 0, "knobs.set") for i in range(1500)])
        jobs = [insert_job(d.db, op, "ok", now - NS) for op in ids[-300:]]
        con = sqlite3.connect(d.db, timeout=10)
        con.execute("UPDATE operations SET result = json_object('pad', hex(randomblob(1000)))")
        con.commit()
        con.close()

        def in_use():
            return d.sql("SELECT (SELECT page_count FROM pragma_page_count()) - "
                         "(SELECT freelist_count FROM pragma_freelist_count())")[0][0] * \
                d.sql("PRAGMA page_size")[0][0]

        self.assertGreater(in_use(), 3 << 20)
        self.pass_now(d)
        self.assertLessEqual(in_use(), 1 << 20)
        kept = [r[0] for r in d.sql("SELECT id FROM operations ORDER BY id")]
        self.assertGreater(len(kept), 100)
        self.assertEqual(kept, ids[-len(kept):], "not the newest that were kept")
        self.assertEqual(d.sql("SELECT count(*) FROM knob_changes")[0][0], len(kept))
        kept_jobs = [r[0] for r in d.sql("SELECT id FROM jobs ORDER BY id")]
        self.assertLess(len(kept_jobs), len(jobs))
        self.assertEqual(kept_jobs, jobs[-len(kept_jobs):])
        self.assertRegex(d.log_text(), r"retention: \d+ bytes in use, over retain-bytes 1048576")
        # Within the cap now: a second pass removes nothing.
        before = d.db_snapshot()
        self.pass_now(d)
        self.assertEqual(d.db_snapshot(), before)

    def test_bad_retention_options_refuse_the_start(self):
        for args in (("--retain-bytes", "1000"), ("--retain-bytes", "512k"), ("--retain-bytes", "2T"),
                     ("--retain-bytes", "1X"), ("--retain-bytes", "-1")):
            with self.subTest(args=args):
                d = Daemon(self.tree, args)
                self.addCleanup(d.cleanup)
                with self.assertRaises(RuntimeError) as cm:
                    d.start()
                self.assertIn("retain-bytes wants 0 or a size", str(cm.exception))
        for args in (("--max-schedules", "0"), ("--retain-days", "-1"), ("--retain-days", " 5"),
                     ("--retain-operations", "1000000001")):
            with self.subTest(args=args):
                d = Daemon(self.tree, args)
                self.addCleanup(d.cleanup)
                with self.assertRaises(RuntimeError) as cm:
                    d.start()
                self.assertIn(args[0][2:] + " wants a number", str(cm.exception))


class BytesPerOperation(unittest.TestCase):
    """What one knob change costs on disk (issue 21: each stored a 3.3 kB conditions snapshot, 10,000
    changes made 46 MB of database and WAL). The method, as docs/reference/knobs.md gives it: N
    changes through the API, the WAL checkpointed into the database (TRUNCATE) before and after, and
    the growth of the database file divided by N. Two trees: the generated one's 4 nodes, whose
    buddyinfo does not move (the "nothing changed" case), and the same tree reading the machine's
    real /proc/buddyinfo and /proc/vmstat, which move between the before and after of each change."""
    N = 400
    BOUND = 1300   # bytes per change; main stored 1,570 (1 real node) and 4,330 (4 nodes)

    def measure(self, real_counters):
        tmp = tempfile.mkdtemp(prefix="mpd-size-")
        os.chmod(tmp, 0o755)
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        tree = FakeTree(tmp, nodes=4)
        if real_counters:
            for f in ("buddyinfo", "vmstat"):
                os.unlink(tree.path("proc/" + f))
                os.symlink("/proc/" + f, tree.path("proc/" + f))
        d = Daemon(tree)
        self.addCleanup(d.cleanup)
        d.start()

        def db_bytes():
            con = sqlite3.connect(d.db, timeout=10)
            try:
                busy, _, _ = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                self.assertEqual(busy, 0, "the checkpoint was blocked")
            finally:
                con.close()
            return os.path.getsize(d.db)

        def change(i):
            r = d.request("PUT", "/v1/knobs/thp.khugepaged.pages_to_scan", {"value": 4000 + i % 2})
            self.assertEqual(r.status, 200, r.raw)

        for i in range(20):   # the first pages of each table and index
            change(i)
        before = db_bytes()
        for i in range(self.N):
            change(i)
        per_op = (db_bytes() - before) / self.N
        print("\n  bytes per knob change (%s): %.0f" % ("real counters" if real_counters else "4 still nodes", per_op))
        # The answer is still the full form, value for value what was measured.
        op = d.get("/v1/history?limit=1").json["operations"][0]["id"]
        buddy = d.get("/v1/history/%d" % op).json["result"]["conditions"]["buddyinfo"]
        for when in ("before", "after"):
            self.assertEqual(set(buddy[when]["0"]), {"zones", "free_blocks", "free_pages", "unusable_index",
                                                      "fragmentation_index"})
        return per_op

    def test_a_knob_change_on_four_still_nodes(self):
        self.assertLess(self.measure(real_counters=False), self.BOUND)

    def test_a_knob_change_with_the_machines_counters_moving(self):
        self.assertLess(self.measure(real_counters=True), self.BOUND)


class SimulatedMonth(unittest.TestCase):
    """Two minutely schedules (grow node 0's 2 MiB pool, shrink it back: two resize jobs with their
    batches, and two skip records for the minutes between steps) run for a simulated month on the
    test clock, moved two hours at a time, with retain-days 3. Once retention has kicked in, the
    rows and the database's pages stop growing while the schedules keep writing."""

    STEP_S = 2 * 3600
    DAYS = 30

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-month-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.tree = FakeTree(self.tmp, nodes=4)
        self.t0 = 1767225600   # 2026-01-01T00:00:00Z
        self.d = Daemon(self.tree, ("--retain-days", "3"), clock_ns=self.t0 * NS)
        self.addCleanup(self.d.cleanup)
        self.d.start()

    def retention_passes(self):
        with open(self.d.log) as f:
            return [int(t) for t in re.findall(r"retention: pass at (\d+) done", f.read())]

    def step(self, t):
        self.d.set_clock(t * NS)
        deadline = time.monotonic() + 60
        while self.d.sql("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")[0][0]:
            self.assertLess(time.monotonic(), deadline, "jobs did not finish:\n" + self.d.log_text())
            time.sleep(0.01)

    def measure(self, t):
        """After a retention pass at t or later: rows per table, pages in use, the file's size."""
        deadline = time.monotonic() + 60
        while not any(p >= t * NS for p in self.retention_passes()):
            self.assertLess(time.monotonic(), deadline, "no retention pass:\n" + self.d.log_text())
            time.sleep(0.02)
        rows = {t: self.d.sql("SELECT count(*) FROM %s" % t)[0][0] for t in ("operations", "jobs", "batches")}
        used = self.d.sql("PRAGMA page_count")[0][0] - self.d.sql("PRAGMA freelist_count")[0][0]
        return rows, used, os.path.getsize(self.d.db)

    def test_a_month_of_minutely_schedules_stays_bounded(self):
        for target in (8, 0):
            r = self.d.request("POST", "/v1/schedules", body={
                "cron": "* * * * *", "action": {"hugepages": {"size": "2M", "nodes": {"0": target}, "batch": 1}}})
            self.assertEqual(r.status, 201, r.raw)
        seen = {}
        t = self.t0
        for day in range(1, self.DAYS + 1):
            for _ in range(86400 // self.STEP_S):
                t += self.STEP_S
                self.step(t)
            if day in (10, 20, 30):
                seen[day] = self.measure(t)
        written = self.d.sql("SELECT max(id) FROM operations")[0][0]
        (r10, used10, size10), (r20, used20, size20), (r30, used30, size30) = seen[10], seen[20], seen[30]
        # the schedules kept writing: ~4 operations a step for 30 days, far more than is kept
        self.assertGreater(written, 4 * 12 * self.DAYS * 0.9)
        self.assertLess(r30["operations"], written / 5)
        self.assertGreater(r30["batches"], 0)
        # kept: about three days' worth, the same at day 10, 20 and 30
        for r in (r20, r30):
            for table in ("operations", "jobs"):
                self.assertLessEqual(r[table], r10[table] * 1.1 + 8, (table, seen))
            # Batches per job vary with the order the two same-minute schedules run in (grow
            # first: 8 writes, then shrink 8; shrink first: 0, then grow 8): bounded by the jobs
            # kept, at most 8 one-page writes each.
            self.assertLessEqual(r["batches"], 8 * r["jobs"], seen)
        # and the database stops growing: pages in use and the file's size
        self.assertLessEqual(used30, used10 * 1.1 + 16, seen)
        self.assertLessEqual(size30, size20 * 1.1 + 65536, seen)


class Export(DaemonTest):
    tree_factory = staticmethod(tree4)

    def test_export_streams_every_operation_in_full_across_pages(self):
        now = time.time_ns()
        ids = insert_ops(self.d.db, [(now - 5000 + i, "ok", 2, 0, "knobs.set") for i in range(1100)])
        insert_ops(self.d.db, [(now, "ok", 0, 0, "hugepages.resize")])
        p = self.d.ctl("history", "export", "--kind", "knobs.set", timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 1100)
        ops = [json.loads(l) for l in lines]
        self.assertEqual([o["id"] for o in ops], sorted(ids, reverse=True))
        for o in ops[:3] + ops[-3:]:
            self.assertEqual(o["kind"], "knobs.set")
            self.assertEqual(len(o["knob_changes"]), 2)
            self.assertIn("request", o)
        self.assertTrue(all(re.fullmatch(r"[\x20-\x7e]*", l) for l in lines[:50]), "raw bytes in the export")


if __name__ == "__main__":
    unittest.main()
