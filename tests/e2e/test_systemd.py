"""systemd integration without systemd running: socket activation through systemd-socket-activate
(the listening socket arrives as fd 3 with LISTEN_FDS/LISTEN_PID, and the first client's request is
answered), a socket unit that disagrees with --socket is a refusal, and the notifications of
Type=notify read from a datagram socket: READY=1 only once the database is migrated and the
previous daemon's leftovers are marked interrupted, STATUS= lines, WATCHDOG=1 with WATCHDOG_USEC,
STOPPING=1 on SIGTERM."""
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import DAEMON, Daemon, UnixHTTPConnection

ACTIVATE = shutil.which("systemd-socket-activate")


class Notify:
    """A NOTIFY_SOCKET: the datagram socket systemd would read."""

    def __init__(self, path):
        self.path = path
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(path)
        self.msgs = []

    def wait_for(self, word, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            for m in self.msgs:
                if word in m.split("\n"):
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s among %r" % (word, self.msgs))
            self.s.settimeout(left)
            try:
                self.msgs.append(self.s.recv(4096).decode())
            except socket.timeout:
                pass

    def close(self):
        self.s.close()


@unittest.skipUnless(ACTIVATE, "systemd-socket-activate (package systemd) is not installed")
class SocketActivation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-sd-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(os.path.join(self.tmp, "tree"), nodes=2)
        self.sock = os.path.join(self.tmp, "mpd.sock")
        # A directory the daemon makes, and so gives to its unprivileged user (privilege
        # separation, the default), as it does /var/lib/mempolicyd.
        self.db = os.path.join(self.tmp, "state", "mpd.db")
        self.log = open(os.path.join(self.tmp, "daemon.log"), "w")
        self.notify = Notify(os.path.join(self.tmp, "notify"))
        os.chmod(self.notify.path, 0o777)   # as systemd's /run/systemd/notify: the daemon is not root
        self.proc = None

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.notify.close()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log_text(self):
        with open(os.path.join(self.tmp, "daemon.log")) as f:
            return f.read()

    def activate(self, listen, *env):
        cmd = [ACTIVATE, "-l", listen, "-E", "NOTIFY_SOCKET=" + self.notify.path]
        for e in env:
            cmd += ["-E", e]
        cmd += [DAEMON, "--socket", self.sock, "--db", self.db, "--sysfs-root", self.tree.sys,
                "--procfs-root", self.tree.proc]
        # systemd-socket-activate binds first and execs the daemon on the first connection: the
        # process is the daemon from then on.
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not os.path.exists(listen):
            self.assertLess(time.monotonic(), deadline, "systemd-socket-activate did not listen")
            self.assertIsNone(self.proc.poll(), self.log_text())
            time.sleep(0.02)

    def get(self, path):
        c = UnixHTTPConnection(self.sock, timeout=20)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(20), 0, self.log_text())

    def test_first_client_is_served_by_the_activated_daemon(self):
        self.activate(self.sock)
        status, body = self.get("/v1/health")   # this connection starts the daemon
        self.assertEqual(status, 200, body)
        self.assertIn("using the socket systemd passed", self.log_text())
        self.notify.wait_for("READY=1")
        self.stop()
        self.notify.wait_for("STOPPING=1")
        # The socket is systemd's: still there for the next activation, never unlinked.
        self.assertTrue(os.path.exists(self.sock))

    def test_socket_at_another_path_is_refused(self):
        other = os.path.join(self.tmp, "other.sock")
        self.activate(other)
        c = socket.socket(socket.AF_UNIX)
        c.connect(other)
        c.close()
        self.assertEqual(self.proc.wait(20), 1, self.log_text())
        self.assertIn("none a listening Unix stream socket at " + self.sock, self.log_text())
        self.assertFalse(os.path.exists(self.sock), "the daemon bound a socket of its own")

    def test_ready_after_migration_and_recovery_then_watchdog_and_stopping(self):
        # A previous daemon's database with an operation it left running.
        d = Daemon(self.tree, workdir=self.tmp)
        d.socket, d.db = self.sock, self.db
        d.start()
        d.stop()
        con = sqlite3.connect(self.db)
        version = con.execute("PRAGMA user_version").fetchone()[0]
        con.execute("INSERT INTO operations (kind, source, started_ns, status, kernel_release) "
                    "VALUES ('knobs.set', 'api', 1, 'running', 'x')")
        con.commit()
        con.close()

        self.activate(self.sock, "WATCHDOG_USEC=300000")
        self.assertEqual(self.get("/v1/health")[0], 200)
        ready = self.notify.wait_for("READY=1")
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], version)
        self.assertEqual(con.execute("SELECT count(*) FROM operations WHERE status = 'running'").fetchone()[0], 0)
        con.close()
        statuses = [m for m in self.notify.msgs if m.startswith("STATUS=")]
        self.assertTrue(any("migrating" in m for m in statuses), self.notify.msgs)
        self.assertIn("STATUS=serving on " + self.sock, ready)
        # READY=1 came after the database and recovery steps, never before.
        order = [i for i, m in enumerate(self.notify.msgs) if "recovering" in m or "READY=1" in m.split("\n")]
        self.assertEqual(len(order), 2, self.notify.msgs)
        self.assertIn("recovering", self.notify.msgs[order[0]])
        self.notify.msgs.clear()
        self.notify.wait_for("WATCHDOG=1", timeout=2)
        self.stop()
        self.notify.wait_for("STOPPING=1")

    def test_no_notify_socket_and_no_fds_is_a_plain_start(self):
        d = Daemon(self.tree, workdir=self.tmp)
        d.socket, d.db = self.sock, self.db
        d.start()
        self.assertEqual(d.stop(), 0, d.log_text())
        self.assertEqual(self.notify.msgs, [])
        self.assertFalse(os.path.exists(self.sock), "a socket the daemon bound itself is removed at stop")


if __name__ == "__main__":
    unittest.main()
