"""A full disk under the database: nothing lost, nothing done unrecorded.

The database lives on a 4 MiB tmpfs of its own, which the test fills with a file. Knob changes are
then made until the store refuses one: every change acknowledged before is in the history, the
refused one is answered 507 store.full (ENOSPC) and the generated tree still holds the last
acknowledged value (if the kernel file was already written when recording the outcome failed, it
was put back and the problem says "undone"). A resize and a schedule are refused the same way with
the pool untouched. With the space back, the next change works and the database is intact.

On tmpfs the first refusal comes at the insert that precedes any write. The other path, knobs
written and then the outcome not recordable, is made deterministic with a trigger the test adds to
the real database (RecordFails)."""
import os
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from faketree import FakeTree
from lib import Daemon, DaemonTest, serving_user

PAGES = "pages_to_scan"
KNOB = "sys/kernel/mm/transparent_hugepage/khugepaged/" + PAGES
POOL = "sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"


def fill(path):
    """Writes path until the filesystem is full; returns the bytes written."""
    n = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (65536, 4096, 512, 1):   # to the last byte
            while True:
                try:
                    n += os.write(fd, b"\1" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    return n


class StoreFull(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-full-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(os.path.join(self.tmp, "tree"), nodes=2)
        self.mnt = os.path.join(self.tmp, "db")
        os.mkdir(self.mnt)
        opts = "size=4m,mode=0755"
        if serving_user():   # privilege separation: the database's directory must be the user's
            pw = pwd.getpwnam(serving_user())
            opts += ",uid=%d,gid=%d" % (pw.pw_uid, pw.pw_gid)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "mpd-test-full", self.mnt],
                           capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest("cannot mount a tmpfs: " + p.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", self.mnt])
        os.mkdir(os.path.join(self.tmp, "run"))
        self.d = Daemon(self.tree, workdir=os.path.join(self.tmp, "run"))
        self.d.db = os.path.join(self.mnt, "mpd.db")
        self.d.start()
        self.addCleanup(self.stop)

    def stop(self):
        rc = self.d.cleanup()
        self.assertEqual(rc, 0, self.d.last_log)

    def test_full_disk_refuses_changes_and_loses_nothing(self):
        filler = os.path.join(self.mnt, "filler")
        fill(filler)
        acked, refused = [], None
        for i in range(4000):
            value = 1000 + i
            r = self.d.request("PUT", "/v1/knobs/thp.khugepaged." + PAGES, body={"value": value})
            if r.status == 200:
                acked.append((r.json["operation_id"], value))
                continue
            refused = (r, value)
            break
        self.assertIsNotNone(refused, "4000 changes fitted in a full 4 MiB filesystem")
        r, value = refused
        self.assertEqual((r.status, r.json["code"], r.json.get("errno_name")), (507, "store.full", "ENOSPC"), r.raw)
        self.assertTrue(r.content_type.startswith("application/problem+json"))
        last = str(acked[-1][1]) if acked else "4096"
        self.assertEqual(self.tree.read(KNOB), last)   # the refused value is not in the kernel file
        if "operation_status" in r.json:   # written, then the outcome could not be recorded
            self.assertEqual(r.json["operation_status"], "undone", r.raw)
            self.assertEqual([c["status"] for c in r.json["changes"]], ["restored"])
            self.assertIn("it was undone", r.json["detail"])
        # a resize and a schedule are refused before anything is done
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"1": 3}})
        self.assertEqual((r.status, r.json["code"]), (507, "store.full"), r.raw)
        self.assertEqual(self.tree.read(POOL), "0")
        r = self.d.request("POST", "/v1/schedules", body={"cron": "0 2 * * *",
                                                           "action": {"hugepages": {"size": "2M", "total": 1}}})
        self.assertEqual((r.status, r.json["code"]), (507, "store.full"), r.raw)
        # reads still work
        self.assertEqual(self.d.get("/v1/history?limit=1").status, 200)

        os.unlink(filler)
        r = self.d.request("PUT", "/v1/knobs/thp.khugepaged." + PAGES, body={"value": 7})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.tree.read(KNOB), "7")
        self.assertEqual(self.d.sql("PRAGMA integrity_check"), [("ok",)])
        # every acknowledged change is in the history, finished ok, in order
        rows = dict(self.d.sql("SELECT o.id, c.new FROM operations o JOIN knob_changes c ON c.op_id = o.id "
                               "WHERE o.status = 'ok'"))
        self.assertEqual([(i, str(v)) for i, v in acked], [(i, rows.get(i)) for i, _ in acked])
        # nothing claims a success that did not happen: no finished operation for the refused value
        self.assertEqual(self.d.sql("SELECT count(*) FROM knob_changes c JOIN operations o ON c.op_id = o.id "
                                    "WHERE c.new = ? AND o.status = 'ok'", (str(value),)), [(0,)])


class RecordFails(DaemonTest):
    """The operation row goes in, the knobs are written, and recording the outcome fails (a trigger
    refuses the knob_changes rows): the daemon puts every knob back and says so."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2))

    def ddl(self, sql):
        con = sqlite3.connect(self.d.db, timeout=10, isolation_level=None)
        try:
            con.execute(sql)
        finally:
            con.close()

    def test_unrecordable_change_is_undone(self):
        enabled = "sys/kernel/mm/transparent_hugepage/enabled"
        before = (self.tree.read(enabled), self.tree.read(KNOB))
        self.ddl("CREATE TRIGGER mpd_test_refuse BEFORE INSERT ON knob_changes "
                 "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        self.addCleanup(self.ddl, "DROP TRIGGER IF EXISTS mpd_test_refuse")
        r = self.d.request("PATCH", "/v1/knobs", body={"knobs": {"thp.enabled": "never",
                                                                 "thp.khugepaged." + PAGES: 1234}})
        self.assertEqual((r.status, r.json["code"], r.json["operation_status"]), (500, "store.error", "undone"), r.raw)
        self.assertEqual([(c["knob"], c["status"]) for c in r.json["changes"]],
                         [("thp.enabled", "restored"), ("thp.khugepaged." + PAGES, "restored")])
        self.assertIn("so it was undone", r.json["detail"])
        self.assertEqual((self.tree.read(enabled), self.tree.read(KNOB)), before)
        # the attempt stays as evidence: an operation that never finished, with no changes recorded
        self.assertEqual(self.d.sql("SELECT status, finished_ns FROM operations WHERE id = ?",
                                    (r.json["operation_id"],)), [("running", None)])
        self.assertIn("could not be recorded", self.d.log_text())
        self.ddl("DROP TRIGGER mpd_test_refuse")
        r2 = self.d.request("PUT", "/v1/knobs/thp.enabled", body={"value": "never"})
        self.assertEqual(r2.status, 200, r2.raw)
        self.assertEqual(self.tree.read(enabled).split("[")[1].split("]")[0], "never")
        # the next daemon closes the unfinished attempt, and leaves finished operations as they were
        self.d.restart()
        rows = self.d.sql("SELECT id, status, finished_ns IS NOT NULL, error FROM operations ORDER BY id")
        self.assertIn((r.json["operation_id"], "interrupted", 1,
                       "the daemon stopped, or could not record the outcome, before this operation finished"), rows)
        self.assertIn((r2.json["operation_id"], "ok", 1, None), rows)
        self.assertIn("1 operation(s) left unfinished by the previous daemon: marked interrupted", self.d.log_text())


if __name__ == "__main__":
    unittest.main()
