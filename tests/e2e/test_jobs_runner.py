"""The job runner driven through the API on a generated tree, short enough for the tsan stage: a
resize that completes, one held running (the FIFO compaction of test_pools_fake) while another size
runs beside it, a same-size submission refused with the running job's id, clients reading jobs
while they change, a cancel seen between batches, and a stop with a job still running. Its
interest is the threads (request threads, two workers, the store's lock) more than the results,
which test_pools_fake.py covers in detail."""
import os
import shutil
import tempfile
import threading
import time
import unittest

from faketree import FakeTree
from lib import Daemon

NODE = "sys/devices/system/node/node%d/hugepages/hugepages-%dkB/nr_hugepages"


def wait_for(pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


class JobsRunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-jobs-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(self.tmp, nodes=4)
        self.tree.partial(NODE % (1, 2048))   # node 1 stops gaining: the resize compacts ...
        self.fifo = self.tree.path("proc/sys/vm/compact_memory")
        os.mkfifo(self.fifo)                  # ... and blocks on this until the test reads it
        self.d = Daemon(self.tree).start()
        # Cleanups run last first: a reader holds the FIFO open while the daemon stops, so a job
        # left blocked in its compaction (a failed test) cannot hold the daemon up.
        self.fifo_fd = None
        self.addCleanup(lambda: self.fifo_fd is not None and os.close(self.fifo_fd))
        self.addCleanup(self.d.cleanup)
        self.addCleanup(lambda: setattr(self, "fifo_fd", os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)))

    def release(self):
        """Opens the FIFO for reading, so the blocked compaction write completes."""
        fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            wait_for(lambda: not self.running_at_compaction(), "the held job to pass its compaction", 10)
        finally:
            os.close(fd)

    def running_at_compaction(self, batches=3):
        """The running job that has made this many batches: the last one gained nothing and it is now
        compacting (node 1 reads back one less than written)."""
        return [j for j in self.d.get("/v1/jobs?status=running").json["jobs"] if j["progress"].get("batches") == batches]

    def job(self, job_id):
        r = self.d.get("/v1/jobs/%d" % job_id)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def finished(self, job_id):
        return wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(self.job(job_id)),
                        "job %d to finish" % job_id)

    def put(self, size, body, status=202):
        r = self.d.request("PUT", "/v1/hugepages/" + size, body=body)
        self.assertEqual(r.status, status, r.raw)
        return r.json

    def test_run_conflict_cancel_and_stop(self):
        # A resize that completes.
        done = self.finished(self.put("2M", {"nodes": {"0": 4, "2": 2}})["id"])
        self.assertEqual(done["status"], "ok", done)
        self.assertEqual((self.tree.read(NODE % (0, 2048)), self.tree.read(NODE % (2, 2048))), ("4", "2"))

        # One held running; readers poll the jobs while the runner changes them.
        held = self.put("2M", {"nodes": {"0": 3, "1": 5}, "compact": True})["id"]
        stop, seen, errors = threading.Event(), [], []

        def reader():
            while not stop.is_set():
                r = self.d.get("/v1/jobs?limit=20")
                (seen if r.status == 200 else errors).append(r.status)

        readers = [threading.Thread(target=reader) for _ in range(2)]
        for t in readers:
            t.start()
        try:
            wait_for(self.running_at_compaction, "job %d to block in its compaction" % held)
            # The same size is refused with the running job's id; another size runs beside it.
            conflict = self.d.request("PUT", "/v1/hugepages/2M", body={"total": 1})
            self.assertEqual((conflict.status, conflict.json["code"], conflict.json["job_id"]),
                             (409, "job.conflict", held), conflict.raw)
            beside = self.finished(self.put("1G", {"nodes": {"0": 1}})["id"])
            self.assertEqual(beside["status"], "ok", beside)
            # Cancel: accepted now, seen by the job between batches once its write returns.
            r = self.d.request("DELETE", "/v1/jobs/%d" % held)
            self.assertEqual((r.status, r.json["cancel_requested"]), (202, True), r.raw)
            self.release()
            job = self.finished(held)
            self.assertEqual((job["status"], job["reason"]), ("cancelled", "cancel_requested"), job)
        finally:
            stop.set()
            for t in readers:
                t.join(30)
        self.assertEqual(errors, [])
        self.assertGreater(len(seen), 5)

        # A stop with a job held running: cancelled between batches, the daemon exits 0. Node 1
        # already reads 4: its first write gains nothing, so the job compacts after 2 batches.
        held = self.put("2M", {"nodes": {"0": 2, "1": 5}, "compact": True})["id"]
        wait_for(lambda: self.running_at_compaction(2), "job %d to block in its compaction" % held)
        self.d.proc.terminate()
        wait_for(lambda: "1 running job cancelled" in self.d.log_text(), "the stop to cancel job %d" % held)
        fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            rc = self.d.stop()
        finally:
            os.close(fd)
        self.assertEqual(rc, 0, "mempolicyd exited with %s (66: ThreadSanitizer found a race):\n%s"
                         % (rc, self.d.log_text()))
        self.assertEqual(self.d.sql("SELECT status, reason FROM jobs WHERE id = ?", (held,)),
                         [("cancelled", "daemon_stopping")])
        self.assertEqual(self.d.sql("PRAGMA integrity_check"), [("ok",)])


if __name__ == "__main__":
    unittest.main()
