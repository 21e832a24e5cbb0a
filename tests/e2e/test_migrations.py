"""Schema migrations: a database written by an older mempolicyd migrates forward at start and
keeps its history; a database newer than the binary is refused and left alone."""
import glob
import hashlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
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
        """A database as the first `version` migrations left it, with one recorded operation (of
        today: one from 1970 would be retention's to remove at start)."""
        now = time.time_ns()
        con = sqlite3.connect(self.d.db)
        for path in SCHEMA[:version]:
            with open(path) as f:
                con.executescript(f.read())
        con.execute("PRAGMA user_version = %d" % version)
        con.execute("INSERT INTO operations(kind, source, actor_uid, actor_name, started_ns, finished_ns, status,"
                    " request, kernel_release) VALUES ('knobs.set', 'api', 0, 'root', ?, ?, 'ok',"
                    " '{\"knobs\":{\"thp.enabled\":\"never\"}}', 'old')", (now, now + 1000))
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
                    self.assertEqual(self.d.get("/v1/experiments").json, {"experiments": []})
                    self.assertEqual(self.d.sql("SELECT count(*) FROM experiment_samples"), [(0,)])
                finally:
                    self.assertEqual(self.d.stop(), 0)
                self.assertEqual(self.d.sql("PRAGMA user_version")[0][0], len(SCHEMA))
                self.assertEqual(self.d.sql("PRAGMA integrity_check")[0][0], "ok")

    def test_a_queued_cancel_of_an_older_daemon_gets_the_registered_reason(self):
        # Before the reasons were a registry, a job cancelled while queued said a sentence.
        self.old_database(8)
        now = time.time_ns()
        con = sqlite3.connect(self.d.db)
        con.execute("INSERT INTO jobs(kind, status, source, op_id, created_ns, finished_ns, reason) VALUES"
                    " ('hugepages.resize', 'cancelled', 'api', 1, ?, ?, 'cancelled before it started')",
                    (now, now + 1))
        con.commit()
        con.close()
        self.d.start()
        try:
            job = self.d.get("/v1/jobs/1").json
            self.assertEqual((job["status"], job["reason"]), ("cancelled", "not_started"), job)
        finally:
            self.assertEqual(self.d.stop(), 0)

    def files(self):
        """The database's bytes (hashed) and whether its -wal and -shm exist: a refused start must
        leave all three exactly as they were, not just the rows."""
        with open(self.d.db, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        return digest, os.path.exists(self.d.db + "-wal"), os.path.exists(self.d.db + "-shm")

    def refused(self, why):
        before = self.files()
        self.assertEqual(before[1:], (False, False))
        p = subprocess.run(self.d.command(), capture_output=True, text=True, timeout=20)
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertIn(why, p.stderr)
        self.assertEqual(self.files(), before, "a refused database was modified")
        self.assertFalse(os.path.exists(self.d.socket))
        return p.stderr

    def test_newer_database_is_refused_and_untouched(self):
        self.old_database(len(SCHEMA))
        con = sqlite3.connect(self.d.db)
        con.execute("PRAGMA user_version = %d" % (len(SCHEMA) + 1))
        con.commit()
        con.close()
        before = self.d.db_snapshot()
        self.refused("newer than this mempolicyd")
        # once the WAL switch ran before the version check: the header said WAL afterwards
        self.assertEqual(self.d.sql("PRAGMA journal_mode")[0][0], "delete")
        self.assertEqual(self.d.sql("PRAGMA user_version")[0][0], len(SCHEMA) + 1)
        self.assertEqual(self.d.db_snapshot(), before)

    def current_database(self):
        """A database as this daemon makes it (WAL mode, every migration), one operation in it."""
        self.d.start()
        try:
            self.assertEqual(self.d.get("/v1/health").status, 200)
        finally:
            self.assertEqual(self.d.stop(), 0)
        con = sqlite3.connect(self.d.db)
        con.execute("INSERT INTO operations(kind, source, started_ns, status) VALUES ('knobs.set', 'api', 1, 'ok')")
        con.commit()
        con.close()

    def test_dropped_table_is_refused_by_name_and_untouched(self):
        self.current_database()
        con = sqlite3.connect(self.d.db)
        con.execute("DROP TABLE schedules")
        con.commit()
        con.close()
        self.refused("lacks table schedules")
        self.assertEqual(self.d.sql("PRAGMA user_version")[0][0], len(SCHEMA))

    def test_dropped_column_is_refused_by_name_and_untouched(self):
        self.current_database()
        con = sqlite3.connect(self.d.db)
        con.execute("ALTER TABLE jobs DROP COLUMN reason")
        con.commit()
        con.close()
        self.refused("lacks column jobs.reason")

    def test_older_database_missing_a_table_is_refused_before_migrating(self):
        """The check compares with what the first N migrations make, so an old database is checked
        as what it claims to be, before a migration touches it."""
        self.old_database(2)
        con = sqlite3.connect(self.d.db)
        con.execute("DROP TABLE knob_changes")
        con.commit()
        con.close()
        self.refused("version 2 but lacks table knob_changes")
        self.assertEqual(self.d.sql("PRAGMA user_version")[0][0], 2)

    def test_not_a_database_is_refused_and_untouched(self):
        with open(self.d.db, "wb") as f:
            f.write(b"not a database, but someone's file\n" * 10)
        self.refused("not a SQLite database")


class Instance(unittest.TestCase):
    """Unfinished work is another daemon instance's by the id stamped on its rows, not by its wall
    clock: a clock stepped back once left a crashed daemon's operations "running" for ever."""

    def setUp(self):
        self.d = Daemon()
        self.addCleanup(self.d.cleanup)

    def test_running_work_of_an_earlier_instance_from_the_future_is_interrupted(self):
        self.d.start()
        self.assertEqual(self.d.stop(), 0)
        future = (int(time.time()) + 86400) * 10**9   # the crashed daemon's clock was a day ahead
        cols = [r[1] for r in self.d.sql("PRAGMA table_info(operations)")]
        con = sqlite3.connect(self.d.db)
        # one row from before the instance column existed (NULL), one from another instance
        con.execute("INSERT INTO operations(kind, source, started_ns, status) VALUES ('knobs.set', 'api', ?, 'running')",
                    (future,))
        if "instance" in cols:
            con.execute("INSERT INTO operations(kind, source, started_ns, status, instance)"
                        " VALUES ('knobs.set', 'api', ?, 'running', 4242)", (future + 1,))
        con.commit()
        con.close()
        self.d.start()
        try:
            # the marking runs once the socket is the daemon's, just after it starts answering
            deadline = time.monotonic() + 20
            while "left unfinished by the previous daemon" not in self.d.log_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            ops = self.d.get("/v1/history?kind=knobs.set").json["operations"]
            self.assertEqual(len(ops), 2 if "instance" in cols else 1)
            for op in ops:
                self.assertEqual(op["status"], "interrupted", op)
        finally:
            self.assertEqual(self.d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
