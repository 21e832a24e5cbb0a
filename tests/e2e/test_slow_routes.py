"""R_SLOW routes (api/slow.c): GET /v1/history/stats over a few hundred thousand batches runs on
the slow thread with its connection suspended, so (1) while a scan is held there (a test-build
hook: MEMPOLICYD_TEST_HOLD_SLOW names a FIFO the slow thread waits on) new connections — on
every libmicrohttpd worker, including the one that took the scan — are served, root's change
included, (2) its own answer is the same as ever, and (3) a scan in flight at SIGTERM is still
answered before the daemon exits cleanly (suspended connections are resumed before
libmicrohttpd stops)."""
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import unittest

from faketree import FakeTree
from lib import Daemon, fifo_writer, wait_read
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

    def test_other_connections_are_served_while_a_scan_is_held(self):
        fifo = os.path.join(self.tmp, "hold")
        os.mkfifo(fifo)
        self.addCleanup(os.unlink, fifo)
        self.d.env = {"MEMPOLICYD_TEST_HOLD_SLOW": fifo}
        self.d.start()
        self.addCleanup(self.d.stop)
        with self.connect() as scan:
            scan.sendall(STATS)
            w = fifo_writer(fifo, "the slow thread (is the route R_SLOW?)")
            try:
                # While the scan is held on the slow thread, new connections — every libmicrohttpd
                # worker gets some — are served, root's knob change included.
                for _ in range(24):
                    self.assertEqual(self.d.get("/v1/health").status, 200)
                r = self.d.request("PUT", "/v1/knobs/thp.khugepaged.pages_to_scan", body={"value": 1234})
                self.assertEqual(r.status, 200, r)
                scan.settimeout(0.2)
                with self.assertRaises(socket.timeout):
                    scan.recv(1)   # and the scan itself has not answered: it really is held
                scan.settimeout(120)
            finally:
                os.close(w)
            line, _, body = raw_response(scan)
        self.assertIn(" 200 ", line)
        self.assertEqual(json.loads(body)["count"], ROWS)

    def test_a_scan_in_flight_at_sigterm_is_answered(self):
        self.d.env = None
        self.d.start()
        with self.connect() as scan:
            scan.sendall(STATS)
            # In flight: the daemon has read it (one still in the backlog is not).
            wait_read(scan)
            self.d.proc.send_signal(signal.SIGTERM)
            try:
                line, _, body = raw_response(scan)
            except AssertionError as e:
                raise AssertionError("%s\n%s" % (e, self.d.log_text())) from None
        self.assertIn(" 200 ", line)
        self.assertEqual(json.loads(body)["count"], ROWS)
        self.assertEqual(self.d.stop(), 0, self.d.log_text())


if __name__ == "__main__":
    unittest.main()
