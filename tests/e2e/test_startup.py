"""Start-up refusals that protect what is already there: whatever sits at the --socket path
unless it is a stale socket (a regular file, a directory, a symlink, the database itself), another
daemon's socket at stop, a database another daemon serves, and a config line too long to read
whole."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

from faketree import FakeTree
from lib import DAEMON, Daemon, free_port



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

    def assertRefused(self, args, msg):
        p = self.run_daemon(args)
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertIn(msg, p.stderr)
        return p

    def test_socket_path_holding_something_else_is_left_alone(self):
        sock = self.d.socket
        other = os.path.join(self.d.dir, "precious")
        with open(other, "w") as f:
            f.write("keep me\n")
        cases = [("a regular file", lambda: shutil.copy(other, sock)),
                 ("a directory", lambda: os.mkdir(sock)),
                 ("a symbolic link", lambda: os.symlink(other, sock)),
                 ("a symbolic link", lambda: os.symlink(os.path.join(self.d.dir, "nowhere.sock"), sock))]
        for what, make in cases:
            make()
            before = os.lstat(sock)
            self.assertRefused(self.d.command()[1:], "%s exists and is %s, not a socket" % (sock, what))
            after = os.lstat(sock)
            self.assertEqual((before.st_ino, before.st_mode), (after.st_ino, after.st_mode), what)
            if os.path.isdir(sock) and not os.path.islink(sock):
                os.rmdir(sock)
            else:
                os.unlink(sock)
        with open(other) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertFalse(os.path.exists(os.path.join(self.d.dir, "nowhere.sock")))

    def test_socket_at_the_database_path_keeps_the_database(self):
        self.d.start()
        self.assertEqual(self.d.ctl("knob", "set", "thp.enabled=never").returncode, 0)
        self.assertEqual(self.d.stop(), 0)
        rows = self.d.db_snapshot()
        self.assertTrue(rows["operations"])
        for sock in (self.d.db, os.path.join(self.d.dir, ".", "mpd.db")):
            args = ["--socket", sock, "--db", self.d.db, "--sysfs-root", self.tree.sys,
                    "--procfs-root", self.tree.proc]
            p = self.assertRefused(args, "")
            self.assertRegex(p.stderr, "same path|is a regular file, not a socket")
            self.assertEqual(self.d.db_snapshot(), rows)
        self.d.start()
        r = self.d.get("/v1/history")
        self.assertEqual(len(r.json["operations"]), len(rows["operations"]), r.raw)

    def test_stale_socket_is_replaced_with_mode_0666(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.d.socket)
        s.close()   # bound, never listening: nobody answers on it
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with self.assertRaises(ConnectionRefusedError):
            probe.connect(self.d.socket)
        probe.close()
        os.umask(old_umask := os.umask(0o077))   # the daemon inherits a strict umask
        try:
            self.d.start()
        finally:
            os.umask(old_umask)
        st = os.lstat(self.d.socket)
        self.assertEqual(st.st_mode & 0o7777, 0o666)
        self.assertEqual(self.d.get("/v1/health").status, 200)

    def test_stopping_daemon_leaves_a_newer_daemons_socket(self):
        self.d.start()
        os.unlink(self.d.socket)   # removed by hand (or by a cleanup job) while it runs
        d2 = Daemon(self.tree, workdir=tempfile.mkdtemp(prefix="mpd-startup2-"))
        d2.own_dir = True
        d2.socket = self.d.socket
        try:
            d2.start()
            self.assertEqual(self.d.stop(), 0)
            self.assertTrue(os.path.exists(self.d.socket), "the first daemon removed the second one's socket")
            self.assertEqual(d2.get("/v1/health").status, 200)
            self.assertEqual(d2.stop(), 0)
            self.assertFalse(os.path.exists(self.d.socket), "a daemon leaves its own socket behind")
        finally:
            d2.cleanup()

    def test_second_daemon_on_one_database_is_refused_and_changes_nothing(self):
        self.d.start()
        self.assertEqual(self.d.ctl("knob", "set", "thp.enabled=never").returncode, 0)
        # an operation this daemon has open: a second daemon's recovery would mark it interrupted
        self.d.sql("INSERT INTO operations (kind, source, actor_uid, actor_name, started_ns, status) "
                   "SELECT kind, source, actor_uid, actor_name, started_ns, 'running' FROM operations LIMIT 1")
        rows = self.d.db_snapshot()
        sock2 = os.path.join(self.d.dir, "second.sock")
        p = self.assertRefused(["--socket", sock2, "--db", self.d.db, "--sysfs-root", self.tree.sys,
                                "--procfs-root", self.tree.proc], "another daemon (pid %d) already serves"
                               % self.d.proc.pid)
        self.assertFalse(os.path.exists(sock2))
        self.assertEqual(self.d.db_snapshot(), rows)
        self.assertEqual(self.d.get("/v1/health").status, 200)
        # once the first one is gone, the lock is free again
        self.assertEqual(self.d.stop(signal.SIGKILL), -signal.SIGKILL)
        self.d.start()
        self.assertEqual(self.d.get("/v1/health").status, 200)

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
