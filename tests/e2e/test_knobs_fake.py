"""Knobs on a generated 4-node tree: validation, kernel refusals recorded with errno (read-only
file, EINVAL from a real kernel file), PATCH rollback, dry run, unavailable knobs, restart."""
import os
import subprocess
import time

from faketree import FakeTree
from lib import DaemonTest

THP = "sys/kernel/mm/transparent_hugepage/"
KHP = THP + "khugepaged/"


class KnobsFakeTest(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    def knob(self, name):
        r = self.d.get("/v1/knobs/" + name)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def ops_count(self):
        return self.d.sql("SELECT count(*) FROM operations")[0][0]

    def test_list_has_every_catalogue_entry_with_types(self):
        r = self.d.get("/v1/knobs")
        self.assertEqual(r.status, 200, r.raw)
        by = {k["name"]: k for k in r.json["knobs"]}
        for n in ("thp.enabled", "thp.defrag", "thp.shmem_enabled", "thp.use_zero_page",
                  "thp.khugepaged.defrag", "thp.khugepaged.pages_to_scan", "thp.khugepaged.max_ptes_none",
                  "thp.khugepaged.max_ptes_swap", "thp.khugepaged.max_ptes_shared", "numa.balancing",
                  "vm.compaction_proactiveness", "vm.zone_reclaim_mode", "vm.nr_overcommit_hugepages",
                  "vm.min_free_kbytes", "vm.watermark_scale_factor",
                  "thp.size.64kB.enabled", "thp.size.2048kB.shmem_enabled"):
            self.assertIn(n, by)
        for node in range(4):
            k = by["mempolicy.weighted_interleave.node%d" % node]
            self.assertEqual((k["value"], k["min"], k["max"], k["type"]), (1, 1, 255, "integer"))
        e = by["thp.enabled"]
        self.assertEqual(e["type"], "choice")
        self.assertEqual(e["value"], "madvise")
        self.assertEqual(e["allowed"], ["always", "madvise", "never"])
        self.assertEqual(e["path"], os.path.join(self.tree.sys, "kernel/mm/transparent_hugepage/enabled"))
        self.assertTrue(e["available"])
        self.assertEqual(by["thp.use_zero_page"]["type"], "boolean")
        self.assertEqual(by["thp.use_zero_page"]["value"], 1)
        self.assertEqual(by["thp.khugepaged.pages_to_scan"]["value"], 4096)
        self.assertEqual(by["thp.khugepaged.pages_to_scan"]["min"], 1)
        self.assertEqual(by["numa.balancing"]["path"], os.path.join(self.tree.proc, "sys/kernel/numa_balancing"))

    def test_allowed_values_come_from_the_kernel_list(self):
        self.tree.write(THP + "hugepages-32kB/enabled", "always inherit madvise defer [never]")
        self.addCleanup(self.tree.write, THP + "hugepages-32kB/enabled", "always inherit madvise [never]")
        self.assertEqual(self.knob("thp.size.32kB.enabled")["allowed"],
                         ["always", "inherit", "madvise", "defer", "never"])
        r = self.d.request("PUT", "/v1/knobs/thp.size.32kB.enabled", {"value": "defer"})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.tree.read(THP + "hugepages-32kB/enabled"), "always inherit madvise [defer] never")

    def test_put_changes_the_file_and_records_old_to_new(self):
        r = self.d.request("PUT", "/v1/knobs/thp.khugepaged.max_ptes_none", {"value": 255})
        self.assertEqual(r.status, 200, r.raw)
        self.addCleanup(self.tree.write, KHP + "max_ptes_none", "511")
        self.assertEqual(r.json["status"], "ok")
        self.assertEqual(r.json["changes"], [{"knob": "thp.khugepaged.max_ptes_none", "old": 511, "new": 255,
                                              "status": "written"}])
        self.assertEqual(self.tree.read(KHP + "max_ptes_none"), "255")
        h = self.d.get("/v1/history/%d" % r.json["operation_id"]).json
        self.assertEqual(h["kind"], "knobs.set")
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["actor"], {"uid": 0, "name": "root"})
        self.assertEqual(h["knob_changes"], [{"seq": 0, "knob": "thp.khugepaged.max_ptes_none", "old": "511",
                                              "new": "255", "status": "written", "errno": None}])
        self.assertLessEqual(h["started_ns"], h["finished_ns"])

    def test_numeric_string_and_boolean_inputs(self):
        self.addCleanup(self.tree.write, KHP + "defrag", "1")
        self.addCleanup(self.tree.write, KHP + "pages_to_scan", "4096")
        r = self.d.request("PATCH", "/v1/knobs", {"knobs": {"thp.khugepaged.defrag": False,
                                                            "thp.khugepaged.pages_to_scan": "2048"}})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.tree.read(KHP + "defrag"), "0")
        self.assertEqual(self.tree.read(KHP + "pages_to_scan"), "2048")
        self.assertEqual(r.json["changes"][1]["new"], 2048)

    def test_read_only_knob_failure_is_recorded_with_errno(self):
        rel = KHP + "scan_sleep_millisecs"
        self.tree.read_only(rel)
        self.addCleanup(self.tree.write, rel, "10000")
        n = self.ops_count()
        r = self.d.request("PUT", "/v1/knobs/thp.khugepaged.scan_sleep_millisecs", {"value": 1000})
        self.assertProblem(r, 409, "knob.kernel_refused")
        self.assertEqual(r.json["errno"], 13)
        self.assertEqual(r.json["errno_name"], "EACCES")
        self.assertEqual(r.json["operation_status"], "failed")
        self.assertEqual(r.json["changes"][0]["status"], "failed")
        self.assertEqual(self.ops_count(), n + 1)
        h = self.d.get("/v1/history/%d" % r.json["operation_id"]).json
        self.assertEqual((h["status"], h["errno"]), ("failed", 13))
        self.assertEqual(h["knob_changes"][0]["errno"], 13)

    def test_an_immutable_or_append_only_file_is_not_writable(self):
        """A file whose mode allows the write but whose inode flags do not (chattr +i, +a: even root
        gets EPERM) said writable: true (issue 21). The generated tree is on the test's temporary
        directory, a real file system; tmpfs keeps no such flags, so there the test cannot run."""
        rel = KHP + "max_ptes_swap"
        path = self.tree.path(rel)
        self.assertTrue(self.knob("thp.khugepaged.max_ptes_swap")["writable"])
        for flag, errno_name in (("+i", "EPERM"), ("+a", "EPERM")):
            with self.subTest(flag=flag):
                p = subprocess.run(["chattr", flag, path], capture_output=True, text=True)
                if p.returncode != 0:
                    self.skipTest("chattr %s on %s: %s (the file system keeps no inode flags)" %
                                  (flag, self.tree.root, p.stderr.strip()))
                # Always undone, or the tree could not be removed.
                self.addCleanup(subprocess.run, ["chattr", "-i", "-a", path], check=True)
                self.assertFalse(self.knob("thp.khugepaged.max_ptes_swap")["writable"])
                listed = {k["name"]: k for k in self.d.get("/v1/knobs").json["knobs"]}
                self.assertFalse(listed["thp.khugepaged.max_ptes_swap"]["writable"])
                # The advice is true: the write itself fails, as it said it would.
                r = self.d.request("PUT", "/v1/knobs/thp.khugepaged.max_ptes_swap", {"value": 32})
                self.assertProblem(r, 409, "knob.kernel_refused")
                self.assertEqual(r.json["errno_name"], errno_name)
                self.assertEqual(self.tree.read(rel), "64")
                subprocess.run(["chattr", "-" + flag[1:], path], check=True)
                self.assertTrue(self.knob("thp.khugepaged.max_ptes_swap")["writable"])

    def test_einval_from_the_kernel_is_recorded(self):
        rel = KHP + "pages_to_scan"
        self.tree.einval(rel)
        self.addCleanup(self.tree.write, rel, "4096")
        r = self.d.request("PUT", "/v1/knobs/thp.khugepaged.pages_to_scan", {"value": 4096})
        self.assertProblem(r, 422, "knob.kernel_refused")
        self.assertEqual(r.json["errno_name"], "EINVAL")
        h = self.d.get("/v1/history/%d" % r.json["operation_id"]).json
        self.assertEqual((h["status"], h["errno"]), ("failed", 22))
        self.assertEqual(h["knob_changes"][0]["new"], "4096")

    def test_patch_rolls_back_what_it_wrote(self):
        self.tree.einval(KHP + "pages_to_scan")
        self.addCleanup(self.tree.write, KHP + "pages_to_scan", "4096")
        before = self.tree.snapshot()
        r = self.d.request("PATCH", "/v1/knobs", {"knobs": {
            "thp.defrag": "defer", "thp.khugepaged.max_ptes_swap": 32,
            "thp.khugepaged.pages_to_scan": 4096, "thp.enabled": "never"}})
        self.assertProblem(r, 422, "knob.kernel_refused")
        self.assertEqual(r.json["operation_status"], "rolled_back")
        self.assertEqual([(c["knob"], c["status"]) for c in r.json["changes"]], [
            ("thp.defrag", "restored"), ("thp.khugepaged.max_ptes_swap", "restored"),
            ("thp.khugepaged.pages_to_scan", "failed"), ("thp.enabled", "skipped")])
        self.assertEqual(self.tree.snapshot(), before)
        self.assertEqual(self.tree.read(THP + "defrag"), "always defer defer+madvise [madvise] never")
        h = self.d.get("/v1/history/%d" % r.json["operation_id"]).json
        self.assertEqual(h["status"], "rolled_back")
        self.assertEqual(h["errno"], 22)
        self.assertEqual([c["status"] for c in h["knob_changes"]], ["restored", "restored", "failed", "skipped"])

    def test_patch_applies_all_in_order(self):
        self.addCleanup(self.tree.write, THP + "defrag", "always defer defer+madvise [madvise] never")
        self.addCleanup(self.tree.write, "proc/sys/vm/compaction_proactiveness", "20")
        r = self.d.request("PATCH", "/v1/knobs", {"knobs": {"vm.compaction_proactiveness": 50,
                                                            "thp.defrag": "always"}})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual([c["knob"] for c in r.json["changes"]], ["vm.compaction_proactiveness", "thp.defrag"])
        self.assertEqual(self.tree.read("proc/sys/vm/compaction_proactiveness"), "50")
        self.assertEqual(self.knob("thp.defrag")["value"], "always")

    def test_dry_run_changes_and_records_nothing(self):
        before, db = self.tree.snapshot(), self.d.db_snapshot()
        r = self.d.request("PATCH", "/v1/knobs?dry_run=true", {"knobs": {"thp.enabled": "never",
                                                                        "thp.defrag": "madvise"}})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["dry_run"], True)
        self.assertIsNone(r.json["operation_id"])
        self.assertEqual(r.json["changes"], [
            {"knob": "thp.enabled", "old": "madvise", "new": "never", "would_change": True},
            {"knob": "thp.defrag", "old": "madvise", "new": "madvise", "would_change": False}])
        r = self.d.request("PUT", "/v1/knobs/vm.zone_reclaim_mode?dry_run=1", {"value": 1})
        self.assertEqual(r.status, 200, r.raw)
        # the bare flag is a dry run too, never a real change
        for q in ("?dry_run", "?dry_run="):
            r = self.d.request("PUT", "/v1/knobs/thp.enabled" + q, {"value": "never"})
            self.assertEqual(r.status, 200, r.raw)
            self.assertEqual(r.json["dry_run"], True, q)
        self.assertEqual(self.tree.snapshot(), before)
        self.assertEqual(self.d.db_snapshot(), db)
        # a dry run validates like the real thing
        r = self.d.request("PUT", "/v1/knobs/vm.zone_reclaim_mode?dry_run=true", {"value": 8})
        self.assertProblem(r, 422, "knob.out_of_range")

    def test_unavailable_knob(self):
        rel = KHP + "max_ptes_shared"
        os.unlink(self.tree.path(rel))
        self.addCleanup(self.tree.write, rel, "256")
        k = self.knob("thp.khugepaged.max_ptes_shared")
        self.assertFalse(k["available"])
        self.assertIsNone(k["value"])
        self.assertIn("error", k)
        listed = {x["name"]: x for x in self.d.get("/v1/knobs").json["knobs"]}
        self.assertFalse(listed["thp.khugepaged.max_ptes_shared"]["available"])
        db = self.d.db_snapshot()
        r = self.d.request("PUT", "/v1/knobs/thp.khugepaged.max_ptes_shared", {"value": 100})
        self.assertProblem(r, 409, "knob.unavailable")
        self.assertFalse(os.path.exists(self.tree.path(rel)))
        self.assertEqual(self.d.db_snapshot(), db)

    def test_history_filters_and_cursor(self):
        ids = []
        self.addCleanup(self.tree.write, "proc/sys/vm/zone_reclaim_mode", "0")
        for v in (1, 2, 3, 0):
            r = self.d.request("PUT", "/v1/knobs/vm.zone_reclaim_mode", {"value": v})
            self.assertEqual(r.status, 200, r.raw)
            ids.append(r.json["operation_id"])
        seen, cursor = [], None
        while True:
            q = "/v1/history?kind=knobs.set&status=ok&limit=1" + ("&cursor=" + cursor if cursor else "")
            r = self.d.get(q)
            self.assertEqual(r.status, 200, r.raw)
            seen += [o["id"] for o in r.json["operations"]]
            cursor = r.json["next_cursor"]
            if not cursor:
                break
        self.assertEqual(seen, sorted(seen, reverse=True))
        self.assertTrue(set(ids) <= set(seen))
        # A cursor is bound to its filters (not to limit, nor to how a time was spelt).
        since_ns = self.d.get("/v1/history/%d" % ids[0]).json["started_ns"] // 10 ** 9 * 10 ** 9
        since_txt = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since_ns // 10 ** 9))
        cur = self.d.get("/v1/history?kind=knobs.set&since=%d&limit=1" % since_ns).json["next_cursor"]
        self.assertRegex(cur, r"^c[0-9a-f]+-[0-9a-f]{8}$")
        self.assertEqual(self.d.get("/v1/history?kind=knobs.set&since=%s&limit=3&cursor=%s" % (since_txt, cur)).status,
                         200)
        db = self.d.db_snapshot()
        for q in ("kind=knobs.set", "since=%d" % since_ns, "kind=knobs.set&since=%d&status=ok" % since_ns,
                  "kind=knobs.patch&since=%d" % since_ns):
            self.assertProblem(self.d.get("/v1/history?%s&cursor=%s" % (q, cur)), 400, "request.cursor_mismatch")
        for bad in ("c1", "c-00000000", "c0-00000000", "cx-00000000", "c1-0000000", "c1-000000000", "C1-00000000"):
            self.assertProblem(self.d.get("/v1/history?cursor=" + bad), 400, "request.bad_query")
        self.assertEqual(self.d.db_snapshot(), db)
        first = self.d.get("/v1/history/%d" % ids[0]).json["started_ns"]
        r = self.d.get("/v1/history?since=%d&limit=1000" % first)
        self.assertEqual({o["id"] for o in r.json["operations"]} & set(ids), set(ids))
        r = self.d.get("/v1/history?until=%d" % first)
        self.assertFalse({o["id"] for o in r.json["operations"]} & set(ids))
        self.assertEqual(self.d.get("/v1/history?since=2100-01-01T00:00:00Z").json["operations"], [])
        self.assertEqual(self.d.get("/v1/history?kind=nothing.such").json,
                         {"operations": [], "next_cursor": None})
        for bad in ("limit=0", "limit=1001", "limit=x", "since=yesterday", "until=2026-11-29T10:00:00+02:00",
                    "cursor=zzz", "cursor=", "frobnicate=1",
                    # past the int64 nanosecond range (April 2262): refused, not wrapped
                    "since=2999-01-01T00:00:00Z", "until=99999999999999999999"):
            self.assertProblem(self.d.get("/v1/history?" + bad), 400)
        self.assertProblem(self.d.get("/v1/history/999999"), 404, "history.not_found")
        self.assertProblem(self.d.get("/v1/history/abc"), 404, "history.not_found")

    def test_history_survives_restart(self):
        self.addCleanup(self.tree.write, "proc/sys/vm/compaction_proactiveness", "20")
        r = self.d.request("PUT", "/v1/knobs/vm.compaction_proactiveness", {"value": 30})
        self.assertEqual(r.status, 200, r.raw)
        before = self.d.get("/v1/history/%d" % r.json["operation_id"]).json
        self.d.restart()
        self.assertEqual(self.d.get("/v1/history/%d" % r.json["operation_id"]).json, before)
        self.assertEqual(self.knob("vm.compaction_proactiveness")["value"], 30)
