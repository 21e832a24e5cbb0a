"""Knobs against the real kernel of this machine: every available knob reads as /sys and /proc
show it; PUT and PATCH change thp.enabled, thp.defrag and khugepaged knobs, /sys follows, and
history records old -> new with the actor. Every knob touched is restored, also on failure.
Run under `flock /tmp/mpd-thp.lock` when other tests may touch THP at the same time."""
import os

from lib import DaemonTest, bracketed, open_files, real_file, real_write

T = "/sys/kernel/mm/transparent_hugepage/"
ENABLED, DEFRAG = T + "enabled", T + "defrag"
SCAN_SLEEP, PAGES = T + "khugepaged/scan_sleep_millisecs", T + "khugepaged/pages_to_scan"


def kernel_value(knob):
    text = real_file(knob["path"])
    if knob["type"] == "choice":
        return bracketed(text)
    return int(text)


class KnobsRealTest(DaemonTest):
    def keep(self, path):
        """Restore path to its current value when the test ends, however it ends."""
        old = real_file(path)
        value = bracketed(old) if "[" in old else old
        self.addCleanup(real_write, path, value)
        return value

    def history(self, op_id):
        r = self.d.get("/v1/history/%d" % op_id)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def test_every_available_knob_reads_as_the_kernel_shows_it(self):
        r = self.d.get("/v1/knobs")
        self.assertEqual(r.status, 200, r.raw)
        knobs = r.json["knobs"]
        available = [k for k in knobs if k["available"]]
        self.assertIn("thp.enabled", [k["name"] for k in available])
        for k in available:
            self.assertTrue(os.path.exists(k["path"]), k)
            self.assertEqual(k["value"], kernel_value(k), k["name"])
            if k["type"] == "choice":
                self.assertIn(k["value"], k["allowed"])
                self.assertEqual(sorted(k["allowed"]),
                                 sorted(real_file(k["path"]).replace("[", "").replace("]", "").split()))
            one = self.d.get("/v1/knobs/" + k["name"])
            self.assertEqual(one.status, 200, one.raw)
            self.assertEqual(one.json["path"], k["path"])
        for k in knobs:
            if not k["available"]:
                self.assertFalse(os.path.exists(k["path"]), k)
        sizes = [d for d in os.listdir(T) if d.startswith("hugepages-")]
        for d in sizes:
            if os.path.exists(T + d + "/enabled"):
                self.assertIn("thp.size.%s.enabled" % d[len("hugepages-"):], [k["name"] for k in knobs])

    def test_put_thp_enabled_changes_sys_and_is_recorded(self):
        old = self.keep(ENABLED)
        new = "never" if old != "never" else "madvise"
        r = self.d.request("PUT", "/v1/knobs/thp.enabled", {"value": new})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(bracketed(real_file(ENABLED)), new)
        self.assertEqual(r.json["changes"], [{"knob": "thp.enabled", "old": old, "new": new, "status": "written"}])
        h = self.history(r.json["operation_id"])
        self.assertEqual((h["kind"], h["status"], h["source"]), ("knobs.set", "ok", "api"))
        self.assertEqual(h["actor"], {"uid": 0, "name": "root"})
        self.assertEqual(h["knob_changes"][0]["old"], old)
        self.assertEqual(h["knob_changes"][0]["new"], new)
        self.assertEqual(h["kernel_release"], os.uname().release)
        # and back through the API too
        r = self.d.request("PUT", "/v1/knobs/thp.enabled", {"value": old})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(bracketed(real_file(ENABLED)), old)

    def test_patch_defrag_and_khugepaged_changes_sys_and_is_recorded(self):
        old_defrag = self.keep(DEFRAG)
        old_sleep = int(self.keep(SCAN_SLEEP))
        old_pages = int(self.keep(PAGES))
        new_defrag = "defer" if old_defrag != "defer" else "madvise"
        new_sleep = old_sleep + 1234
        r = self.d.request("PATCH", "/v1/knobs", {"knobs": {"thp.defrag": new_defrag,
                                                            "thp.khugepaged.scan_sleep_millisecs": new_sleep,
                                                            "thp.khugepaged.pages_to_scan": "2048"}})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(bracketed(real_file(DEFRAG)), new_defrag)
        self.assertEqual(int(real_file(SCAN_SLEEP)), new_sleep)
        self.assertEqual(int(real_file(PAGES)), 2048)
        h = self.history(r.json["operation_id"])
        self.assertEqual(h["status"], "ok")
        self.assertEqual([(c["knob"], c["old"], c["new"], c["status"]) for c in h["knob_changes"]], [
            ("thp.defrag", old_defrag, new_defrag, "written"),
            ("thp.khugepaged.scan_sleep_millisecs", str(old_sleep), str(new_sleep), "written"),
            ("thp.khugepaged.pages_to_scan", str(old_pages), "2048", "written")])
        listed = self.d.get("/v1/history?kind=knobs.set&limit=1").json["operations"]
        self.assertEqual(listed[0]["id"], r.json["operation_id"])

    def test_dry_run_leaves_sys_and_history_alone(self):
        old_defrag = self.keep(DEFRAG)
        new_defrag = "defer" if old_defrag != "defer" else "madvise"
        db = self.d.db_snapshot()
        r = self.d.request("PATCH", "/v1/knobs?dry_run=true", {"knobs": {"thp.defrag": new_defrag}})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(bracketed(real_file(DEFRAG)), old_defrag)
        self.assertEqual(r.json["changes"][0]["would_change"], True)
        self.assertEqual(self.d.db_snapshot(), db)

    def test_proc_sysctl_knob(self):
        path = "/proc/sys/vm/compaction_proactiveness"
        if not os.path.exists(path):
            self.skipTest("no compaction_proactiveness")
        old = int(self.keep(path))
        new = 21 if old != 21 else 22
        r = self.d.request("PUT", "/v1/knobs/vm.compaction_proactiveness", {"value": new})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(int(real_file(path)), new)

    def open_files(self, path):
        """How many of the serving process's open files are path."""
        return open_files(self.d.proc.pid, path)

    def test_a_knob_is_read_through_one_held_file_and_a_foreign_write_shows_at_once(self):
        """GET /v1/knobs/{name} reads a sysfs or procfs knob by one pread of a file the serving
        process keeps open (not an open, two reads and a close each time: bench/README.md §1b),
        and the kernel regenerates the text on every such read, so a write made behind the
        daemon's back is in the very next answer, through either file."""
        sysctl = "/proc/sys/vm/compaction_proactiveness"
        old = self.keep(ENABLED)
        for _ in range(3):
            r = self.d.get("/v1/knobs/thp.enabled")
            self.assertEqual(r.status, 200, r.raw)
            self.assertEqual(r.json["value"], old)
        self.assertEqual(self.open_files(ENABLED), 1)
        new = "never" if old != "never" else "madvise"
        real_write(ENABLED, new)
        self.assertEqual(self.d.get("/v1/knobs/thp.enabled").json["value"], new)
        listed = {k["name"]: k for k in self.d.get("/v1/knobs").json["knobs"]}
        self.assertEqual(listed["thp.enabled"]["value"], new)
        self.assertEqual(self.open_files(ENABLED), 1)
        if os.path.exists(sysctl):
            was = int(self.keep(sysctl))
            self.assertEqual(self.d.get("/v1/knobs/vm.compaction_proactiveness").json["value"], was)
            self.assertEqual(self.open_files(sysctl), 1)
            real_write(sysctl, str(21 if was != 21 else 22))
            self.assertEqual(self.d.get("/v1/knobs/vm.compaction_proactiveness").json["value"],
                             21 if was != 21 else 22)
