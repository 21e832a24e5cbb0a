"""Start-up: clients that connect the moment the socket file appears, while the daemon is still
starting, are answered by a daemon whose shared state (struct app) is complete and no longer
written. The requests read what the last start-up steps create: DELETE and POST /v1/schedules read
app->scheduler, GET /v1/jobs reads app->jobs.

Under ThreadSanitizer (the tsan stage) this is the test of the start-up race: when app->scheduler
was assigned after the listeners started, the first request that read it was a data race and the
daemon stopped with TSan's exit code. Under ASan it checks the same answers without the race
detector: no request fails, and every schedule acknowledged during start-up is stored."""
import os
import shutil
import tempfile
import threading
import time
import unittest

from faketree import FakeTree
from lib import Daemon, UnixHTTPConnection

CLIENTS = 4
SECONDS = 2.0


class StartupRaceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-start-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(self.tmp, nodes=2)

    def hammer(self, d, seed, answers, errors, stop):
        """Waits for the socket file, then sends requests back to back until stop."""
        while not os.path.exists(d.socket):
            if stop.is_set() or (d.proc is not None and d.proc.poll() is not None):
                return
            time.sleep(0.0005)
        n = 0
        while not stop.is_set():
            n += 1
            kind = (seed + n) % 3
            try:
                c = UnixHTTPConnection(d.socket, timeout=30)
                if kind == 0:
                    c.request("DELETE", "/v1/schedules/%d" % (900000 + seed))
                elif kind == 1:
                    c.request("GET", "/v1/jobs?limit=1")
                else:
                    c.request("POST", "/v1/schedules", body=b'{"cron": "0 2 * * *", "action": {"hugepages": '
                              b'{"size": "2M", "nodes": {"0": 4}}}}', headers={"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                answers.append((kind, r.status))
            except OSError as e:
                # Before the listener exists (a socket file left by nobody cannot be, the directory
                # is fresh) a connection may be refused; after the first answer, never.
                if answers:
                    errors.append(repr(e))
                time.sleep(0.001)
            finally:
                c.close()

    def test_requests_during_startup_see_a_complete_daemon(self):
        # Hundreds of schedules are created in two seconds: past the default collection maximum
        # (1000), which would answer 409 schedule.limit and hide what this test looks for.
        d = Daemon(self.tree, ["--max-schedules", "100000"])
        self.addCleanup(d.cleanup)
        answers, errors, stop = [], [], threading.Event()
        threads = [threading.Thread(target=self.hammer, args=(d, i, answers, errors, stop)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        try:
            d.start()
            time.sleep(SECONDS)   # a load, not an assertion: requests keep coming while it runs
        finally:
            stop.set()
            for t in threads:
                t.join(60)
        rc = d.stop()
        log = d.log_text()
        self.assertEqual(rc, 0, "mempolicyd exited with %s (66: ThreadSanitizer found a race):\n%s" % (rc, log))
        self.assertEqual(errors, [], log)
        self.assertGreater(len(answers), 20, "too few requests to say anything")
        want = {0: 404, 1: 200, 2: 201}
        wrong = [(k, s) for k, s in answers if s != want[k]]
        self.assertEqual(wrong, [], log)
        # Every schedule acknowledged during start-up is stored.
        self.assertEqual(d.sql("SELECT count(*) FROM schedules"), [(len([a for a in answers if a[0] == 2]),)])
