"""GET /v1/jobs/{id}?wait=S: waiting for a job without polling. A resize is held running for as long
as a test wants (test_pools_fake's BlockedCompaction: node 1 stops gaining and compact_memory is a
FIFO with no reader), and the answer is timed against the job's own finished_ns: a held answer goes
out within half a second of the job's end, not at S; a job that keeps running is answered after S
with "running"; a finished one at once. Sixteen waiters on one job hold none of libmicrohttpd's
eight workers (other requests are answered meanwhile); bad values are a 400 that holds nothing and
writes nothing; SIGTERM answers the waiters and the daemon stops; the hold is cut to under the
idle timeout and the request-deadline reaper does not cut it."""
import contextlib
import http.client
import os
import shutil
import signal
import threading
import time
import unittest

from lib import Daemon, Response, UnixHTTPConnection, wait_read
from test_pools_fake import StalledResize, wait_for


class JobsWait(StalledResize, unittest.TestCase):
    def setUp(self):
        self.make_stall_tree("mpd-wait-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.d = None
        # Cleanups run last first: the FIFO is read before the daemon stops, so a job left held
        # in its compaction (a failed test) cannot hold the daemon up.
        self.addCleanup(lambda: self.reader is not None and os.close(self.reader))
        self.addCleanup(self.stop_daemon)
        self.addCleanup(self.release)

    def start(self, *args):
        self.d = Daemon(self.tree, args).start()
        return self.d

    def stop_daemon(self):
        if self.d:
            rc = self.d.cleanup()
            if rc not in (0, None):
                raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, self.d.last_log))

    @contextlib.contextmanager
    def taken_in(self, path, taken):
        """GET path on a connection of its own, setting the event taken once the daemon has read
        the request (lib.wait_read): what "the waiter is in" means, rather than a pause. Yields
        the response; the connection is closed after."""
        c = UnixHTTPConnection(self.d.socket, 60)
        try:
            c.request("GET", path)
            wait_read(c.sock)
            taken.set()
            yield c.getresponse()
        finally:
            c.close()

    def timed(self, method, path, timeout=60):
        t0 = time.monotonic()
        r = self.d.request(method, path, timeout=timeout)
        return r, time.monotonic() - t0, time.time_ns()

    def test_held_until_the_job_ends_not_until_s(self):
        self.start()
        job_id = self.start_stalled_job()
        threading.Timer(1.0, self.release).start()
        r, took, got_ns = self.timed("GET", "/v1/jobs/%d?wait=20" % job_id)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["status"], "partial", r.json)   # node 1 gave 4 of 5: the final status
        self.assertEqual(r.json["id"], job_id)
        self.assertIsInstance(r.json["finished_ns"], int)
        # answered within half a second of the job's end (same clock, CLOCK_REALTIME) ...
        self.assertLess(got_ns - r.json["finished_ns"], 500_000_000, (got_ns, r.json["finished_ns"]))
        # ... after being held while it ran (released after 1 s), far from S
        self.assertGreater(took, 0.8)
        self.assertLess(took, 5)
        # exactly the answer without wait
        self.assertEqual(self.d.get("/v1/jobs/%d" % job_id).json, r.json)

    def test_a_job_that_keeps_running_is_answered_after_s(self):
        self.start()
        job_id = self.start_stalled_job()
        r, took, _ = self.timed("GET", "/v1/jobs/%d?wait=2" % job_id)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["status"], "running", r.json)
        self.assertEqual(r.json["progress"]["batches"], 3)
        self.assertGreaterEqual(took, 1.9)
        self.assertLess(took, 3.5)

    def test_a_finished_job_answers_at_once(self):
        self.start()
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 2}})
        self.assertEqual(r.status, 202, r.raw)
        job_id = r.json["id"]
        # the end of a job that ends quickly is waited for too
        r, took, _ = self.timed("GET", "/v1/jobs/%d?wait=30" % job_id)
        self.assertEqual(r.json["status"], "ok", r.json)
        self.assertLess(took, 5)
        r, took, _ = self.timed("GET", "/v1/jobs/%d?wait=30" % job_id)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["status"], "ok")
        self.assertLess(took, 0.5)
        # an unknown job is a 404 at once, wait or not
        r, took, _ = self.timed("GET", "/v1/jobs/999?wait=30")
        self.assertEqual((r.status, r.json["code"]), (404, "job.not_found"), r.raw)
        self.assertLess(took, 0.5)

    def test_sixteen_waiters_block_no_worker(self):
        self.start()
        job_id = self.start_stalled_job()
        results = [None] * 16

        taken = [threading.Event() for _ in range(16)]

        def waiter(i):
            try:
                t0 = time.monotonic()
                with self.taken_in("/v1/jobs/%d?wait=25" % job_id, taken[i]) as resp:
                    r = Response(resp.status, dict(resp.getheaders()), resp.read().decode())
                took, got_ns = time.monotonic() - t0, time.time_ns()
                results[i] = (r.status, r.json.get("status"), took, got_ns, r.json.get("finished_ns"))
            except Exception as ex:   # reported below
                results[i] = ex
            finally:
                taken[i].set()

        threads = [threading.Thread(target=waiter, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for ev in taken:   # every waiter's request is in the daemon: an event, not a guess
            self.assertTrue(ev.wait(30), "a waiter's request was not read within 30 s")
        # Sixteen held on eight workers per listener: were any worker blocked, two waiters would
        # share it and everything else it serves would wait for them.
        for i in range(24):
            path = ("/v1/health", "/v1/jobs/%d" % job_id, "/v1/hugepages/2M")[i % 3]
            r, took, _ = self.timed("GET", path, timeout=10)
            self.assertEqual(r.status, 200, r.raw)
            self.assertLess(took, 1.0, path)
        self.assertEqual(self.d.get("/v1/jobs/%d" % job_id).json["status"], "running")
        self.assertTrue(all(t.is_alive() for t in threads), results)   # still held
        self.release()
        for t in threads:
            t.join(30)
        for res in results:
            self.assertIsInstance(res, tuple, results)
            status, job_status, took, got_ns, fin = res
            self.assertEqual((status, job_status), (200, "partial"), res)
            self.assertLess(got_ns - fin, 500_000_000, res)
            self.assertLess(took, 20, res)

    def test_bad_values_are_400_hold_nothing_and_write_nothing(self):
        self.start()
        job_id = self.start_stalled_job()
        db = self.d.db_snapshot()   # (not the tree's snapshot: reading the FIFO would release the job)
        base = "/v1/jobs/%d?" % job_id
        cases = [("wait=0", "request.bad_query"), ("wait=31", "request.bad_query"),
                 ("wait=-1", "request.bad_query"), ("wait=%201", "request.bad_query"),
                 ("wait=+1", "request.bad_query"), ("wait=1.5", "request.bad_query"),
                 ("wait=abc", "request.bad_query"), ("wait=", "request.bad_query"), ("wait", "request.bad_query"),
                 ("wait=1%00", "request.bad_query"), ("wait=01x", "request.bad_query"),
                 ("wait=99999999999999999999999", "request.bad_query"),
                 ("wait=1&wait=1", "request.duplicate_query"), ("wait=2&wait=1", "request.duplicate_query"),
                 ("wait=1&verbose=1", "request.unknown_query")]
        for q, code in cases:
            with self.subTest(q=q):
                for method in ("GET", "HEAD"):
                    r, took, _ = self.timed(method, base + q)
                    self.assertEqual(r.status, 400, (method, r.raw))
                    self.assertTrue(r.headers.get("Content-Type", "").startswith("application/problem+json"))
                    if method == "GET":
                        self.assertEqual(r.json["code"], code, r.raw)
                    self.assertLess(took, 0.5)   # refused at once, not held
        self.assertEqual(self.d.get("/v1/jobs/%d" % job_id).json["status"], "running")
        self.assertEqual(self.d.db_snapshot(), db)

    def test_head_waits_like_get(self):
        self.start()
        job_id = self.start_stalled_job()
        r, took, _ = self.timed("HEAD", "/v1/jobs/%d?wait=2" % job_id)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.raw, "")
        self.assertTrue(r.headers["Content-Type"].startswith("application/json"))
        self.assertGreaterEqual(took, 1.9)
        self.assertLess(took, 3.5)
        threading.Timer(0.5, self.release).start()
        r, took, _ = self.timed("HEAD", "/v1/jobs/%d?wait=20" % job_id)
        self.assertEqual((r.status, r.raw), (200, ""))
        self.assertLess(took, 5)
        self.assertEqual(self.d.get("/v1/jobs/%d" % job_id).json["status"], "partial")
        r, took, _ = self.timed("HEAD", "/v1/jobs/%d?wait=20" % job_id)
        self.assertEqual((r.status, r.raw), (200, ""))
        self.assertLess(took, 0.5)

    def test_sigterm_answers_the_waiters_and_stops(self):
        self.start()
        job_id = self.start_stalled_job()
        results = [None] * 4

        taken = [threading.Event() for _ in range(4)]

        def waiter(i):
            try:
                with self.taken_in("/v1/jobs/%d?wait=30" % job_id, taken[i]) as r:
                    results[i] = ("answer", r.status, r.read(), time.monotonic())
            except (OSError, http.client.HTTPException) as ex:
                results[i] = ("closed", repr(ex), None, time.monotonic())

        threads = [threading.Thread(target=waiter, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for ev in taken:   # each request is in the daemon, and none was answered at once
            self.assertTrue(ev.wait(30), results)
        self.assertTrue(all(t.is_alive() for t in threads), results)
        t0 = time.monotonic()
        self.d.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(10)
        self.assertFalse(any(t.is_alive() for t in threads), "a waiter still held after SIGTERM")
        for res in results:
            self.assertIn(res[0], ("answer", "closed"), results)
            self.assertLess(res[3] - t0, 3, results)   # answered at the stop, not at S
            if res[0] == "answer":
                self.assertEqual(res[1], 200, res)
        # The running job stops at its next batch boundary, after the compaction it is held in.
        wait_for(lambda: "1 running job cancelled" in self.d.log_text(), timeout=20)
        self.release()
        t1 = time.monotonic()
        self.assertEqual(self.d.proc.wait(10), 0, self.d.log_text())
        self.assertLess(time.monotonic() - t1, 5)
        self.assertIn("answering 4 held requests now", self.d.log_text())

    def test_the_hold_stays_under_the_idle_timeout_and_the_reaper_spares_it(self):
        # idle 3 s: a wait of 10 is cut to 2; request deadline 1 s: stopped once the request was in
        self.start("--idle-timeout", "3", "--request-timeout", "1")
        job_id = self.start_stalled_job()
        r, took, _ = self.timed("GET", "/v1/jobs/%d?wait=10" % job_id)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["status"], "running")
        self.assertGreaterEqual(took, 1.9)
        self.assertLess(took, 2.9)

    def test_idle_timeout_1_holds_nothing(self):
        self.start("--idle-timeout", "1")
        job_id = self.start_stalled_job()
        r, took, _ = self.timed("GET", "/v1/jobs/%d?wait=5" % job_id)
        self.assertEqual((r.status, r.json["status"]), (200, "running"), r.raw)
        self.assertLess(took, 0.5)


if __name__ == "__main__":
    unittest.main()
