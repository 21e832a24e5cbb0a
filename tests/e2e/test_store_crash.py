"""SIGKILL inside the store's named transactions, on the real daemon: the test-only fault point
MEMPOLICYD_TEST_KILL_AT=<transaction>:<n> makes the daemon kill itself right after the n-th
statement of that transaction. After a restart, a job and its history operation must agree, at
every step of the job's end (the job row, then the operation row: once two separate autocommits),
and of the restart's own recovery."""
import http.client
import os
import shutil
import signal
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import Daemon

KILL = "MEMPOLICYD_TEST_KILL_AT"
NODE0 = "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"


class KillInsideTransactions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-crash-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=4)
        self.d = Daemon(self.tree)

    def tearDown(self):
        try:
            self.d.cleanup()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, kill_at=None):
        self.d.env = {KILL: kill_at} if kill_at else None
        self.d.start()

    def wait_killed(self, timeout=30):
        """The daemon killed itself at the fault point (and not for another reason)."""
        self.d.proc.wait(timeout)
        self.assertEqual(self.d.stop(), -signal.SIGKILL, self.d.log_text())
        self.assertIn("test fault point: SIGKILL after statement", self.d.log_text())

    def job_and_op(self, job_id):
        job = self.d.get("/v1/jobs/%d" % job_id)
        self.assertEqual(job.status, 200, job)
        op = self.d.get("/v1/history/%d" % job.json["operation_id"])
        self.assertEqual(op.status, 200, op)
        return job.json, op.json

    def resize(self):
        """Starts a resize and returns its job id. On a generated tree the job can reach the fault
        point and kill the daemon before the 202 is written: the job row exists either way (it is
        inserted before anything runs), so then the id is the newest job's."""
        try:
            r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 3}})
        except (ConnectionError, http.client.RemoteDisconnected):
            self.d.proc.wait(30)
            return self.d.sql("SELECT max(id) FROM jobs")[0][0]
        self.assertEqual(r.status, 202, r)
        return r.json["id"]

    def test_kill_at_every_step_of_a_jobs_end(self):
        for n in (1, 2):
            with self.subTest(step=n):
                self.tree.write(NODE0, "0")
                self.start("job_finish:%d" % n)
                job_id = self.resize()
                self.wait_killed()
                self.start()
                job, op = self.job_and_op(job_id)
                # Rolled back, so both were still running; the restart marked both interrupted.
                self.assertEqual((job["status"], op["status"]), ("interrupted", "interrupted"), (job, op))
                self.assertEqual(self.tree.read(NODE0), "3")   # the kernel work itself was done
                self.d.stop()

    def test_past_the_last_step_the_job_ends_normally(self):
        """The control: the transaction has two statements, so a fault point at the third never
        fires, and both rows say ok."""
        self.start("job_finish:3")
        job_id = self.resize()
        deadline = time.monotonic() + 20
        while self.d.get("/v1/jobs/%d" % job_id).json["status"] in ("queued", "running"):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)
        job, op = self.job_and_op(job_id)
        self.assertEqual((job["status"], op["status"]), ("ok", "ok"))
        self.assertIsNone(self.d.proc.poll())

    def test_kill_at_every_step_of_the_restart_recovery(self):
        self.start("job_finish:1")
        job_id = self.resize()
        self.wait_killed()
        for n in (1, 2):
            with self.subTest(step=n):
                try:   # dies while starting, in its recovery (health may answer just before)
                    self.start("job_recover:%d" % n)
                except RuntimeError:
                    pass
                self.wait_killed()
        self.start()
        job, op = self.job_and_op(job_id)
        self.assertEqual((job["status"], op["status"]), ("interrupted", "interrupted"), (job, op))

    def test_kill_inside_a_knob_record(self):
        """A knob change whose outcome is being recorded: the changes and the outcome are one
        transaction, so the operation reads interrupted after the restart, with no half record."""
        for n in (1, 2):
            with self.subTest(step=n):
                # the tree as generated: the change below differs from it (step 1 left its knobs
                # written, and a change to the values in force records nothing, so reaches no fault)
                self.tree.write("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never")
                self.tree.write("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never")
                self.start("knob_record:%d" % n)
                try:
                    self.d.request("PATCH", "/v1/knobs", {"knobs": {"thp.enabled": "never", "thp.defrag": "defer"}})
                except OSError:
                    pass   # the connection dies with the daemon
                self.wait_killed()
                self.start()
                ops = self.d.get("/v1/history?kind=knobs.set").json["operations"]
                op = self.d.get("/v1/history/%d" % ops[0]["id"]).json
                self.assertEqual(op["status"], "interrupted", op)
                self.assertEqual(op["knob_changes"], [])
                self.d.stop()


if __name__ == "__main__":
    unittest.main()
