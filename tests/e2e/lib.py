"""End-to-end test support: start bin/mempolicyd on a temporary socket and database, talk to it
with raw HTTP over the Unix socket and with bin/mempolicyctl, and snapshot what a refused request
must leave alone (the generated tree, the real knobs, the database)."""
import atexit
import errno
import fcntl
import http.client
import json
import os
import pwd
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import tempfile
import termios
import time
import unittest

BIN = os.environ.get("MPD_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "bin"))
BIN = os.path.abspath(BIN)
DAEMON = os.path.join(BIN, "mempolicyd")
CTL = os.path.join(BIN, "mempolicyctl")
# Started as root, the daemon separates privileges by default, serving as DEFAULT_USER: the suite
# runs that. MPD_E2E_USER=root runs every daemon of a suite in one process (--user root), another
# name serves as that user; a test that needs one process passes user="root" and says why.
DEFAULT_USER = "mempolicyd"
E2E_USER = os.environ.get("MPD_E2E_USER") or None


def serving_user(user=E2E_USER):
    """Who serves the HTTP side of a daemon started with --user user (None: the default): None
    for one process (--user root, or a test not run as root)."""
    who = (user or DEFAULT_USER) if os.geteuid() == 0 else user
    return None if who == "root" else who


def free_port():
    """A loopback TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_read(sock, timeout=30):
    """Returns once the peer has read everything sent on the Unix stream socket sock: SIOCOUTQ
    counts the bytes still queued for it. The event that the daemon took a request in."""
    deadline = time.monotonic() + timeout
    while struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]:
        if time.monotonic() > deadline:
            raise AssertionError("the daemon did not read what was sent within %d s" % timeout)
        time.sleep(0.005)


def fifo_writer(path, what, timeout=60):
    """The write end of the FIFO at path, once a daemon's thread waits on it at a test-build hold
    point (common/testhold.h; until then there is no reader, and a non-blocking open fails with
    ENXIO). what says which thread, for the failure."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
        if time.monotonic() > deadline:
            raise AssertionError("%s never reached its hold point" % what)
        time.sleep(0.01)


def wait_accepted(port, timeout=30):
    """Returns once no connection waits in the accept queue of the TCP listener on port: for a
    listening socket /proc/net/tcp's rx_queue is that queue's length. The event that the daemon
    accepted (and counted) every connection made to it so far."""
    deadline = time.monotonic() + timeout
    while True:
        waiting = 0
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    rows = [l.split() for l in f.readlines()[1:]]
            except OSError:
                continue
            waiting += sum(int(r[4].split(":")[1], 16) for r in rows
                           if r[3] == "0A" and int(r[1].rsplit(":", 1)[1], 16) == port)
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise AssertionError("%d connection(s) still wait to be accepted on port %d" % (waiting, port))
        time.sleep(0.005)


class HeldProgram:
    """argv for a program to launch (POST /v1/processes) that runs until release(): it blocks
    reading a FIFO made in directory, which its user must reach. A test waits for what the daemon
    records while it runs (samples), then ends it, instead of giving it a fixed lifetime."""

    def __init__(self, directory):
        self.path = tempfile.mktemp(prefix="held-", suffix=".fifo", dir=directory)
        os.mkfifo(self.path, 0o666)
        os.chmod(self.path, 0o666)
        self.argv = ["sh", "-c", 'read line < "$0"', self.path]

    def release(self):
        """The program reads a line and exits 0. Non-blocking: it must be waiting on the FIFO."""
        fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, b"go\n")
        finally:
            os.close(fd)


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers
        self.raw = raw
        try:
            self.json = json.loads(raw) if raw else None
        except ValueError:
            self.json = None

    @property
    def content_type(self):
        return self.headers.get("Content-Type", "")

    def __repr__(self):
        return "<%d %s>" % (self.status, self.raw[:300])


def shared_tmp():
    """A temporary directory every user may traverse: $TMPDIR when it is one (the QEMU guest's
    is /dev/shm, its /tmp is the host's, read-only), else /tmp (a root checkout's TMPDIR may be
    under /root, 0700)."""
    t = os.environ.get("TMPDIR")
    if t and os.path.isdir(t) and os.stat(t).st_mode & 0o001:
        return t
    return "/tmp"


# Where another user's process may start: a checkout root made under /root (0700) is no cwd for it.
USER_CWD = "/"
_shared_copies = None


def shared_copy(name):
    """The path of a copy of tests/e2e/<name> that every user may read (lib.py, placement_child.py
    run as another user from a checkout under /root, 0700, could not be read where they are):
    copied once per process into a directory under shared_tmp(), removed at exit."""
    global _shared_copies
    if _shared_copies is None:
        _shared_copies = tempfile.mkdtemp(prefix="mpd-e2e-files-", dir=shared_tmp())
        os.chmod(_shared_copies, 0o755)
        atexit.register(shutil.rmtree, _shared_copies, True)
    dst = os.path.join(_shared_copies, name)
    if not os.path.exists(dst):
        shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), dst)
        os.chmod(dst, 0o644)
    return dst


class Daemon:
    """One mempolicyd process. tree: a FakeTree, or None for the real /sys and /proc. clock_ns: run
    it on the test clock (server/clock.h: builds with test hooks only), starting at that wall time
    in ns since the epoch; set_clock() moves it. user: --user (None: the daemon's default,
    DEFAULT_USER when the test runs as root; "root": one process). With privilege separation its
    directory is under /tmp (the unprivileged side must reach it, and the checkout's temp dirs may
    be under /root) and given to the user, as the daemon's rule wants."""

    def __init__(self, tree=None, args=(), workdir=None, clock_ns=None, user=E2E_USER):
        self.own_dir = workdir is None
        self.user = user
        # who serves the HTTP side: None for one process (as root, or a test not run as root)
        self.serves_as = serving_user(user)
        self.dir = workdir or tempfile.mkdtemp(prefix="mpd-e2e-", dir=shared_tmp() if self.serves_as else None)
        os.chmod(self.dir, 0o755)   # the CLI runs as nobody in some tests and must reach the socket
        if self.serves_as:
            pw = pwd.getpwnam(self.serves_as)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.socket = os.path.join(self.dir, "mpd.sock")
        self.db = os.path.join(self.dir, "mpd.db")
        self.log = os.path.join(self.dir, "daemon.log")
        self.tree = tree
        self.args = list(args)
        self.env = None          # extra environment variables for the next start(), or None
        self.proc = None
        self.last_log = ""
        self.clock_file = None
        if clock_ns is not None:
            self.clock_file = os.path.join(self.dir, "clock")
            self.write_clock(clock_ns)

    def command(self):
        cmd = [DAEMON, "--socket", self.socket, "--db", self.db, "--log-level", "debug"]
        if self.tree:
            cmd += ["--sysfs-root", self.tree.sys, "--procfs-root", self.tree.proc]
        if self.clock_file:
            cmd += ["--test-clock", self.clock_file]
        if self.user:
            cmd += ["--user", self.user]
        return cmd + self.args

    # -- the test clock ----------------------------------------------------------------------------
    PASS = re.compile(r"test clock: scheduler pass at (\d+) done")

    def write_clock(self, ns):
        """The clock file takes ns; a running daemon reads it on SIGUSR2. Written whole, then
        renamed, so the daemon never reads half of it."""
        tmp = self.clock_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % ns)
        os.rename(tmp, self.clock_file)

    def scheduler_passes(self):
        """The times (ns) of the scheduler's passes on the test clock so far, from the whole log."""
        with open(self.log) as f:
            return [int(t) for t in self.PASS.findall(f.read())]

    def set_clock(self, ns, timeout=30):
        """Moves the test clock forward to ns and returns once the scheduler has made a pass at that
        time or later: whatever was due by then has been submitted (or skipped) and recorded."""
        seen = len(self.scheduler_passes())
        self.write_clock(ns)
        self.proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(t >= ns for t in self.scheduler_passes()[seen:]):
                return
            if self.proc.poll() is not None:
                raise RuntimeError("mempolicyd exited with %d:\n%s" % (self.proc.returncode, self.log_text()))
            time.sleep(0.01)
        raise RuntimeError("no scheduler pass at %d within %ds:\n%s" % (ns, timeout, self.log_text()))

    def start(self, timeout=10):
        logf = open(self.log, "a")
        env = dict(os.environ, **self.env) if self.env else None
        self.proc = subprocess.Popen(self.command(), stdout=logf, stderr=subprocess.STDOUT, env=env)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("mempolicyd exited with %d:\n%s" % (self.proc.returncode, self.log_text()))
            try:
                if self.request("GET", "/v1/health").status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("mempolicyd did not answer within %ds:\n%s" % (timeout, self.log_text()))

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("mempolicyd did not stop within %ds" % timeout)
        rc = self.proc.returncode
        self.proc = None
        return rc

    def restart(self):
        self.stop()
        return self.start()

    def cleanup(self):
        try:
            rc = self.stop()
        finally:
            # Keep the log (a sanitizer report lands there at exit) before the directory goes.
            self.last_log = self.log_text()
            if self.own_dir:
                shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()[-8000:]
        except OSError:
            return ""

    # -- HTTP --------------------------------------------------------------------------------------
    def request(self, method, path, body=None, raw=None, headers=None, timeout=30):
        """body: a Python value sent as JSON; raw: bytes sent as they are."""
        h = {}
        if body is not None:
            raw = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        c = UnixHTTPConnection(self.socket, timeout)
        try:
            c.request(method, path, body=raw, headers=h)
            r = c.getresponse()
            return Response(r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace"))
        finally:
            c.close()

    def get(self, path):
        return self.request("GET", path)

    # -- CLI ---------------------------------------------------------------------------------------
    def ctl(self, *args, user=None, env=None, input=None, timeout=60):
        cmd = [CTL, "--socket", self.socket] + list(args)
        if user:
            # the user's primary group: Debian's nobody is in "nogroup", there is no group "nobody"
            gid = str(pwd.getpwnam(user).pw_gid)
            cmd = ["setpriv", "--reuid", user, "--regid", gid, "--clear-groups", "--"] + cmd
        e = dict(os.environ)
        if env:
            e.update(env)
        return subprocess.run(cmd, capture_output=True, text=True, env=e, input=input, timeout=timeout,
                              cwd=USER_CWD if user else None)

    def curl(self, *args):
        return subprocess.run(["curl", "-sS", "--unix-socket", self.socket] + list(args),
                              capture_output=True, text=True, timeout=30)

    # -- database ----------------------------------------------------------------------------------
    def sql(self, query, params=()):
        con = sqlite3.connect(self.db, timeout=10)
        try:
            return con.execute(query, params).fetchall()
        finally:
            con.close()

    def refuse_knob_changes(self):
        """From now on the store refuses every knob_changes row (a trigger): a knob change can be
        made but not recorded."""
        con = sqlite3.connect(self.db, timeout=10, isolation_level=None)
        try:
            con.execute("CREATE TRIGGER mpd_test_refuse BEFORE INSERT ON knob_changes "
                        "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        finally:
            con.close()

    def db_snapshot(self):
        """Every user table's rows, to assert that a refused request wrote nothing."""
        con = sqlite3.connect(self.db, timeout=10)
        try:
            tables = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            return {t: con.execute("SELECT * FROM %s ORDER BY rowid" % t).fetchall() for t in tables}
        finally:
            con.close()


class DaemonTest(unittest.TestCase):
    """Base class: a daemon per test class is cheaper; tests that need a fresh one make their own."""
    tree_factory = None   # a callable(root) -> FakeTree, or None for the real kernel
    daemon_args = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mpd-tree-")
        os.chmod(cls.tmp, 0o755)
        cls.tree = cls.tree_factory(cls.tmp) if cls.tree_factory else None
        cls.d = Daemon(cls.tree, cls.daemon_args)
        cls.d.start()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.d.cleanup()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s (sanitizer report?):\n%s" % (rc, cls.d.last_log))

    def assertProblem(self, r, status, code=None):
        """The response is an RFC 9457 problem with this status (and machine code)."""
        self.assertEqual(r.status, status, r.raw)
        self.assertTrue(r.content_type.startswith("application/problem+json"), r.content_type)
        for k in ("type", "title", "status", "detail", "code"):
            self.assertIn(k, r.json, r.raw)
        self.assertEqual(r.json["status"], status)
        if code:
            self.assertEqual(r.json["code"], code, r.raw)


def run_on_tty(cmd, stream, env=None, timeout=30):
    """Runs cmd with `stream` ("stdout" or "stderr") on a pseudo-terminal and the other one piped.
    Returns (exit code, what the terminal got, what the pipe got), both as text."""
    import pty
    master, slave = pty.openpty()
    other = "stderr" if stream == "stdout" else "stdout"
    try:
        p = subprocess.Popen(cmd, env=env, **{stream: slave, other: subprocess.PIPE})
        os.close(slave)
        slave = None
        tty = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:   # EIO: the child closed the terminal
                break
            if not chunk:
                break
            tty += chunk
        piped = getattr(p, other).read()
        getattr(p, other).close()
        rc = p.wait(timeout)
    finally:
        os.close(master)
        if slave is not None:
            os.close(slave)
    return rc, tty.decode(), piped.decode()


def open_files(pid, path):
    """How many of process pid's open files are path (its own fds, as /proc shows them)."""
    fd_dir = "/proc/%d/fd" % pid
    n = 0
    for fd in os.listdir(fd_dir):
        try:
            n += os.readlink(os.path.join(fd_dir, fd)) == path
        except OSError:
            pass   # closed while listed
    return n


def real_file(path):
    with open(path) as f:
        return f.read().strip()


def real_write(path, value):
    with open(path, "w") as f:
        f.write(value)


def bracketed(text):
    """The selected value of a kernel selector file: 'always [madvise] never' -> 'madvise'."""
    return text[text.index("[") + 1:text.index("]")]
