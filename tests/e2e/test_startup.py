"""Start-up refusals that protect what is already there: a config line too long to read whole."""
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

from faketree import FakeTree
from lib import DAEMON, Daemon


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class StartupTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-startup-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=1)
        self.d = Daemon(self.tree)

    def tearDown(self):
        rc = self.d.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, self.d.last_log))

    def run_daemon(self, args, timeout=10):
        """Runs the daemon expecting it to refuse; a daemon that starts instead is stopped."""
        try:
            return subprocess.run([DAEMON] + args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail("the daemon started instead of refusing: %s" % args)

    def test_config_line_over_1023_bytes_is_refused_not_split(self):
        port = free_port()
        cfg = os.path.join(self.d.dir, "mpd.conf")
        # split after 1023 bytes (the old fgets buffer), the tail would be a setting of its own
        head = "# " + "x" * (1023 - 2 - 3) + " # "
        self.assertEqual(len(head), 1023)
        comment = head + "listen-tcp = 127.0.0.1:%d\n" % port
        with open(cfg, "w") as f:
            f.write("socket = %s\ndb = %s\n%s" % (self.d.socket, self.d.db, comment))
            f.write("sysfs-root = %s\nprocfs-root = %s\n" % (self.tree.sys, self.tree.proc))
        p = self.run_daemon(["--config", cfg])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("mpd.conf:3: the line is longer than 1023 bytes", p.stderr)
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        self.assertFalse(os.path.exists(self.d.db))
        # exactly 1023 bytes (without the newline) is read whole and is still a comment
        with open(cfg, "w") as f:
            f.write("socket = %s\ndb = %s\n" % (self.d.socket, self.d.db))
            f.write("# " + "y" * 1021 + "\n")
            f.write("sysfs-root = %s\nprocfs-root = %s\n" % (self.tree.sys, self.tree.proc))
        self.d.command = lambda: [DAEMON, "--config", cfg]
        self.d.start()
        self.assertEqual(self.d.get("/v1/health").status, 200)

    def test_config_line_with_a_nul_is_refused(self):
        cfg = os.path.join(self.d.dir, "mpd.conf")
        with open(cfg, "wb") as f:
            f.write(b"socket = %s\x00junk\ndb = %s\n" % (self.d.socket.encode(), self.d.db.encode()))
        p = self.run_daemon(["--config", cfg])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("mpd.conf:1: the line holds a NUL byte", p.stderr)
        self.assertFalse(os.path.exists(self.d.db))


if __name__ == "__main__":
    unittest.main()
