"""Schema migrations: a database written by an older mempolicyd migrates forward at start and
keeps its history; a database newer than the binary is refused and left alone."""
import glob
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from lib import Daemon

SCHEMA = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "schema", "*.sql")))


class Migrations(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mpd-migrate-")
        os.chmod(self.dir, 0o755)
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.d = Daemon(workdir=self.dir)
        self.addCleanup(self.d.cleanup)

    def old_database(self, version):
        """A database as the first `version` migrations left it, with one recorded operation."""
        con = sqlite3.connect(self.d.db)
        for path in SCHEMA[:version]:
            with open(path) as f:
                con.executescript(f.read())
        con.execute("PRAGMA user_version = %d" % version)
        con.execute("INSERT INTO operations(kind, source, actor_uid, actor_name, started_ns, finished_ns, status,"
                    " request, kernel_release) VALUES ('knobs.set', 'api', 0, 'root', 1000, 2000, 'ok',"
                    " '{\"knobs\":{\"thp.enabled\":\"never\"}}', 'old')")
        con.execute("INSERT INTO knob_changes(op_id, seq, knob, old, new, status) VALUES (1, 0, 'thp.enabled',"
                    " 'madvise', 'never', 'written')")
        con.commit()
        con.close()

    def test_every_older_version_migrates_forward_and_keeps_history(self):
        self.assertGreaterEqual(len(SCHEMA), 2, "nothing to migrate from")
        for version in range(1, len(SCHEMA)):
            with self.subTest(from_version=version):
                for f in glob.glob(self.d.db + "*"):
                    os.unlink(f)
                self.old_database(version)
                self.d.start()
                try:
                    self.assertEqual(self.d.get("/v1/health").json["schema_version"], len(SCHEMA))
                    op = self.d.get("/v1/history/1").json
                    self.assertEqual((op["kind"], op["status"], op["kernel_release"]), ("knobs.set", "ok", "old"))
                    self.assertEqual(op["knob_changes"][0]["new"], "never")
                    # the tables later migrations add work: a job list and a schedule list answer
                    self.assertEqual(self.d.get("/v1/jobs").status, 200)
                    self.assertEqual(self.d.get("/v1/schedules").status, 200)
                finally:
                    self.assertEqual(self.d.stop(), 0)
                self.assertEqual(self.d.sql("PRAGMA user_version")[0][0], len(SCHEMA))
                self.assertEqual(self.d.sql("PRAGMA integrity_check")[0][0], "ok")

    def test_newer_database_is_refused_and_untouched(self):
        self.old_database(len(SCHEMA))
        con = sqlite3.connect(self.d.db)
        con.execute("PRAGMA user_version = %d" % (len(SCHEMA) + 1))
        con.commit()
        con.close()
        before = self.d.db_snapshot()
        p = subprocess.run(self.d.command(), capture_output=True, text=True, timeout=20)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("newer than this mempolicyd", p.stderr)
        self.assertEqual(self.d.sql("PRAGMA user_version")[0][0], len(SCHEMA) + 1)
        self.assertEqual(self.d.db_snapshot(), before)
        self.assertFalse(os.path.exists(self.d.socket))


if __name__ == "__main__":
    unittest.main()
