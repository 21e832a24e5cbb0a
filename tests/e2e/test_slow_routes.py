"""R_SLOW routes (api/slow.c): GET /v1/history/stats over a few hundred thousand batches runs on
the slow thread with its connection suspended, so (1) connections that libmicrohttpd's worker
would have served after it — every eighth or so lands on the scanning worker — are answered
while it runs, (2) its own answer is the same as ever, and (3) a scan in flight at SIGTERM is
still answered before the daemon exits cleanly (suspended connections are resumed before
libmicrohttpd stops)."""
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import unittest

from faketree import FakeTree
from lib import Daemon
from test_router import raw_response

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import b_stats  # noqa: E402  (its generator writes batches straight into the schema)

ROWS = 300000
STATS = b"GET /v1/history/stats?kind=hugepages.resize HTTP/1.1\r\nHost: x\r\n\r\n"
HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


class SlowRoutesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mpd-slow-")
        os.chmod(cls.tmp, 0o755)
        cls.tree = FakeTree(cls.tmp, nodes=2)
        cls.d = Daemon(cls.tree)
        cls.d.start()
        cls.d.stop()
        b_stats.generate(cls.d.db, ROWS)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.d.cleanup()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def connect(self):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(120)
        s.connect(self.d.socket)
        return s

    def test_other_connections_are_served_while_a_scan_runs_and_it_answers_in_full(self):
        self.d.start()
        self.addCleanup(self.d.stop)
        order, lock = [], threading.Lock()
        # The health connections are open before the scan is asked for, and their requests leave
        # the moment it is: each is answered before the scan's answer unless it waits behind it.
        go = threading.Barrier(25)

        def health(i):
            with self.connect() as s:
                go.wait()
                s.sendall(HEALTH)
                line = raw_response(s)[0]
            with lock:
                order.append(("health", i, line))
        threads = [threading.Thread(target=health, args=(i,)) for i in range(24)]
        for t in threads:
            t.start()
        with self.connect() as scan:
            scan.sendall(STATS)
            go.wait()
            line, _, body = raw_response(scan)
            with lock:
                order.append(("stats", 0, line))
        for t in threads:
            t.join(120)
        self.assertIn(" 200 ", line)
        self.assertEqual(json.loads(body)["count"], ROWS)
        self.assertEqual([o[0] for o in order].count("health"), 24)
        self.assertTrue(all(" 200 " in o[2] for o in order))
        # Every health request was answered before the scan's answer: none waited behind it.
        self.assertEqual(order[-1][0], "stats", order)

    def test_a_scan_in_flight_at_sigterm_is_answered(self):
        self.d.start()
        with self.connect() as scan:
            scan.sendall(STATS)
            self.d.proc.send_signal(signal.SIGTERM)
            line, _, body = raw_response(scan)
        self.assertIn(" 200 ", line)
        self.assertEqual(json.loads(body)["count"], ROWS)
        self.assertEqual(self.d.stop(), 0, self.d.log_text())


if __name__ == "__main__":
    unittest.main()
