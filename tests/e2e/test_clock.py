"""The test clock (server/clock.h) cannot be turned on by accident: the plain build has no such
option, a config file cannot name it, and a clock file that holds no time stops the start. On it,
the times the daemon records are the ones the test set."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import DAEMON, Daemon

NS = 10**9
PLAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin", "mempolicyd")


class TestClockTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-clock-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_daemon(self, binary, *args):
        return subprocess.run([binary, "--socket", os.path.join(self.tmp, "s.sock"), "--db",
                               os.path.join(self.tmp, "d.db")] + list(args), capture_output=True, text=True,
                              timeout=30)

    @unittest.skipUnless(os.path.exists(PLAIN), "no plain build in bin/ (make)")
    def test_the_plain_build_has_no_test_clock(self):
        clock = os.path.join(self.tmp, "clock")
        with open(clock, "w") as f:
            f.write("%d\n" % (1900000000 * NS))
        p = self.run_daemon(PLAIN, "--test-clock", clock)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("unrecognized option '--test-clock'", p.stderr)
        self.assertNotIn("test-clock", subprocess.run([PLAIN, "--help"], capture_output=True, text=True).stdout)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "d.db")))

    def test_a_config_file_cannot_name_it(self):
        clock, conf = os.path.join(self.tmp, "clock"), os.path.join(self.tmp, "c.conf")
        with open(clock, "w") as f:
            f.write("%d\n" % (1900000000 * NS))
        with open(conf, "w") as f:
            f.write("test-clock = %s\n" % clock)
        p = self.run_daemon(DAEMON, "--config", conf)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("unknown setting 'test-clock'", p.stderr)

    def test_a_clock_file_without_a_time_stops_the_start(self):
        clock = os.path.join(self.tmp, "clock")
        for text in ("", "abc\n", "-5\n", " 1900000000000000000\n", "19e17\n", "0\n"):
            with self.subTest(text=text):
                with open(clock, "w") as f:
                    f.write(text)
                p = self.run_daemon(DAEMON, "--test-clock", clock)
                self.assertEqual(p.returncode, 2, p)
                self.assertIn("is not a time in ns since the epoch", p.stderr)
        p = self.run_daemon(DAEMON, "--test-clock", os.path.join(self.tmp, "missing"))
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("No such file", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "s.sock")))

    def test_recorded_times_are_the_clock_s(self):
        """A change recorded on the test clock carries the time set, moved by the test, and a bad
        file on SIGUSR2 leaves the clock where it was."""
        tree = FakeTree(self.tmp, nodes=2)
        t0 = 1900000000 * NS
        d = Daemon(tree, clock_ns=t0).start()
        self.addCleanup(d.cleanup)

        def change(value):
            r = d.request("PUT", "/v1/knobs/thp.khugepaged.pages_to_scan", body={"value": value})
            self.assertEqual(r.status, 200, r.raw)
            return d.sql("SELECT started_ns, finished_ns FROM operations WHERE id = ?", (r.json["operation_id"],))[0]

        started, finished = change(1000)
        self.assertTrue(t0 <= started < finished < t0 + NS, (started, finished))
        d.set_clock(t0 + 86400 * NS)
        started, _ = change(1001)
        self.assertTrue(t0 + 86400 * NS <= started < t0 + 86401 * NS, started)
        with open(d.clock_file, "w") as f:
            f.write("soon\n")
        d.proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 10
        while "SIGUSR2: test clock" not in d.log_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertIn("'soon' is not a time", d.log_text())
        started, _ = change(1002)
        self.assertTrue(t0 + 86400 * NS <= started < t0 + 86401 * NS, started)
        self.assertEqual(d.stop(), 0, d.log_text())
