"""Connection limits a local user cannot exhaust: per-uid and total caps on the Unix socket with a
reserve only root and the admin group may use, a deadline for a whole request (slowloris), and
an open-file limit raised to what both listeners at their maximum and the daemon's own work need.
Connections are held by `nobody` and other system users through a helper run with setpriv, so the
daemon sees their real credentials (SO_PEERCRED)."""
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import CTL, Daemon, free_port, wait_accepted

HERE = os.path.dirname(os.path.abspath(__file__))
THP = "sys/kernel/mm/transparent_hugepage/enabled"
HALF = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n"   # headers never finished

# Run as another user: opens argv[2] connections to the socket argv[1], sends half a request on
# each, waits until the daemon answered the refused ones, prints per connection "held" or the
# status and problem code it was answered with, then holds the rest until stdin closes.
HOLDER = r"""
import json, select, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    try:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n")
    except OSError:
        pass   # refused and cut before the request went out: its answer is still readable
    socks.append(s)
got = {}
deadline = time.monotonic() + float(sys.argv[3])
while time.monotonic() < deadline:
    r, _, _ = select.select([s for s in socks if s not in got], [], [], 0.1)
    for s in r:
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        got[s] = data
out = []
for s in socks:
    if s not in got:
        out.append("held")
        continue
    head, _, body = got[s].partition(b"\r\n\r\n")
    try:
        code = json.loads(body).get("code")
    except ValueError:
        code = None
    out.append("%s %s" % (head.split(b" ")[1].decode() if head else "closed", code))
print(json.dumps(out), flush=True)
sys.stdin.read()
"""


def uid_gid(user):
    import pwd
    p = pwd.getpwnam(user)
    return str(p.pw_uid), str(p.pw_gid)


class Holder:
    """n connections held as user, half-sent. .result: per connection 'held' or 'STATUS code'."""

    def __init__(self, d, user, n, settle=1.5):
        uid, gid = uid_gid(user)
        self.p = subprocess.Popen(["setpriv", "--reuid", uid, "--regid", gid, "--clear-groups", "--",
                                   sys.executable, "-c", HOLDER, d.socket, str(n), str(settle)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line:
            self.p.wait(10)
            raise AssertionError("holder as %s failed (exit %s)" % (user, self.p.returncode))
        self.result = json.loads(line)

    def count(self, what):
        return sum(1 for r in self.result if r == what)

    def release(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(10)


def timed_knob_set(d, value):
    t0 = time.monotonic()
    p = d.ctl("knob", "set", "thp.enabled=" + value, timeout=30)
    return p, time.monotonic() - t0


class LimitsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-limits-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=2)
        self.holders = []
        self.daemons = []

    def tearDown(self):
        for h in self.holders:
            h.release()
        for d in self.daemons:
            rc = d.cleanup()
            if rc not in (0, None):
                raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, d.last_log))
        shutil.rmtree(self.tmp, ignore_errors=True)

    def daemon(self, *args, wrap=None):
        d = Daemon(self.tree, list(args))
        if wrap:
            base = d.command
            d.command = lambda: wrap + base()
        self.daemons.append(d)
        return d.start()

    def hold(self, d, user, n, settle=1.5):
        h = Holder(d, user, n, settle)
        self.holders.append(h)
        return h

    def test_nobody_at_its_limit_cannot_lock_root_out(self):
        d = self.daemon()   # the defaults: 64 connections per uid
        h = self.hold(d, "nobody", 64 + 8)
        self.assertEqual(h.count("held"), 64, h.result)
        self.assertEqual(h.count("503 http.too_many_connections"), 8, h.result)
        self.assertIn("refused", d.log_text())
        # root's change goes through at once while nobody holds all it may
        p, took = timed_knob_set(d, "never")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLess(took, 1.0)
        self.assertEqual(self.tree.read(THP), "always madvise [never]")
        # and nobody may still read once it lets go of some
        h.release()
        deadline = time.monotonic() + 10
        while d.ctl("knob", "get", "thp.enabled", user="nobody").returncode != 0:
            self.assertLess(time.monotonic(), deadline, "nobody could not read again")
            time.sleep(0.1)

    def test_total_limit_keeps_a_reserve_for_root(self):
        d = self.daemon("--max-connections", "16", "--max-connections-per-uid", "8", "--admin-reserve", "4")
        a = self.hold(d, "nobody", 9)
        self.assertEqual(a.count("held"), 8, a.result)
        self.assertEqual(a.count("503 http.too_many_connections"), 1, a.result)
        b = self.hold(d, "daemon", 6)   # under its own per-uid limit, but only the reserve is left after 4
        self.assertEqual(b.count("held"), 4, b.result)
        self.assertEqual(b.count("503 http.too_many_connections"), 2, b.result)
        c = self.hold(d, "bin", 1)
        self.assertEqual(c.result, ["503 http.too_many_connections"])
        p, took = timed_knob_set(d, "always")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLess(took, 1.0)
        self.assertEqual(self.tree.read(THP), "[always] madvise never")

    def test_refused_client_gets_a_problem_from_the_cli(self):
        d = self.daemon("--max-connections", "8", "--max-connections-per-uid", "2", "--admin-reserve", "2")
        self.hold(d, "nobody", 2)
        p = d.ctl("knob", "get", "thp.enabled", user="nobody")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("(http.too_many_connections)", p.stderr)

    def test_one_tcp_address_cannot_take_every_tcp_slot(self):
        """TCP: no caller is known at accept, so the peer's address is counted: the fourth connection
        from 127.0.0.1 is refused with the problem, while 127.0.0.2 and the Unix socket still get
        in, and 127.0.0.1 again once it let go of one."""
        port = free_port()
        d = self.daemon("--listen-tcp", "127.0.0.1:%d" % port, "--max-connections-per-address", "3")

        def tcp(source, request=HALF):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(10)
            s.bind((source, 0))
            s.connect(("127.0.0.1", port))
            s.sendall(request)
            return s

        def answer(s):
            data = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            return data

        whole = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port
        held = [tcp("127.0.0.1") for _ in range(3)]
        try:
            wait_accepted(port)   # accepted and counted: none waits in the listen backlog
            extra = tcp("127.0.0.1", whole)
            head, _, body = answer(extra).partition(b"\r\n\r\n")
            extra.close()
            self.assertTrue(head.startswith(b"HTTP/1.1 503"), head)
            self.assertIn(b"application/problem+json", head)
            prob = json.loads(body)
            self.assertEqual(prob["code"], "http.too_many_connections", prob)
            self.assertIn("address 127.0.0.1 already holds 3 connections", prob["detail"])
            other = tcp("127.0.0.2", whole)
            self.assertTrue(answer(other).startswith(b"HTTP/1.1 200"))
            other.close()
            self.assertEqual(d.get("/v1/health").status, 200)
            held.pop().close()
            deadline = time.monotonic() + 10
            while True:
                again = tcp("127.0.0.1", whole)
                got = answer(again)
                again.close()
                if got.startswith(b"HTTP/1.1 200"):
                    break
                self.assertLess(time.monotonic(), deadline, "127.0.0.1 was not let in again: %r" % got[:200])
                time.sleep(0.1)
        finally:
            for s in held:
                s.close()

    def test_slowloris_is_dropped_by_the_request_deadline(self):
        d = self.daemon("--request-timeout", "2")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.socket)
        s.settimeout(0.05)
        t0 = time.monotonic()
        closed_at = None
        req = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 30 + b"\r\n\r\n"
        for i, byte in enumerate(req):   # one byte a second: idle never, complete in ~60 s
            try:
                s.send(bytes([byte]))
                if s.recv(1) == b"":
                    closed_at = time.monotonic() - t0
                    break
            except socket.timeout:
                pass
            except OSError:
                closed_at = time.monotonic() - t0
                break
            time.sleep(1.0)
        s.close()
        self.assertIsNotNone(closed_at, "the trickle was never dropped")
        self.assertGreaterEqual(closed_at, 1.5)
        self.assertLess(closed_at, 4.5)

    def test_slow_body_is_dropped_and_keepalive_still_works(self):
        d = self.daemon("--request-timeout", "2")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.socket)
        s.settimeout(10)
        f = s.makefile("rb")
        # two quick requests on one connection, 1.2 s apart: each gets its own deadline
        for _ in range(2):
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            self.assertIn(b" 200 ", f.readline())
            length = 0
            while True:
                line = f.readline()
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b""):
                    break
            f.read(length)
            time.sleep(1.2)
        # headers at once, then the body a byte at a time: cut by the same deadline
        s.sendall(b"PATCH /v1/knobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 40\r\n\r\n{")
        t0 = time.monotonic()
        s.settimeout(0.25)
        closed = None
        while time.monotonic() - t0 < 8:
            try:
                s.send(b" ")
                if s.recv(1) == b"":
                    closed = time.monotonic() - t0
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = time.monotonic() - t0
                break
        s.close()
        self.assertIsNotNone(closed, "the slow body was never dropped")
        self.assertLess(closed, 4.5)


def raw_request(sock, f, method, path, body=None):
    head = "%s %s HTTP/1.1\r\nHost: localhost\r\n" % (method, path)
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
    sock.sendall(head.encode() + b"\r\n" + data)
    status = int(f.readline().split()[1])
    length = 0
    while True:
        line = f.readline()
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        if line in (b"\r\n", b""):
            break
    return status, json.loads(f.read(length))



class OpenFiles(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-nofile-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=2)
        self.d = None
        self.socks = []
        self.saved = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.saved[1], self.saved[1]))

    def tearDown(self):
        for s in self.socks:
            s.close()
        rc = self.d.cleanup() if self.d else None
        resource.setrlimit(resource.RLIMIT_NOFILE, self.saved)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, self.d.last_log))

    def daemon_fds(self):
        return len(os.listdir("/proc/%d/fd" % self.d.proc.pid))

    def settled_fds(self):
        """The daemon's open fds once it has closed every connection accepted on its socket (the
        start-up probe's closes asynchronously): /proc/net/unix lists each accepted one, connected
        (state 03), under the listener's path until the daemon closes it. An event, where two equal
        counts 0.2 s apart could be read before the close on a loaded machine."""
        deadline = time.monotonic() + 30
        while True:
            with open("/proc/net/unix") as f:
                open_ = [l for l in f.readlines()[1:] if l.split()[5:6] == ["03"] and l.split()[-1] == self.d.socket]
            if not open_:
                return self.daemon_fds()
            self.assertLess(time.monotonic(), deadline, "the daemon kept %d connection(s) open" % len(open_))
            time.sleep(0.01)

    def test_both_listeners_full_and_a_resize_still_runs(self):
        """With the default 512 connections per listener and the usual soft limit of 1024 open
        files, both listeners full used to leave the daemon no fd for its own work."""
        port = free_port()
        # Every TCP connection comes from 127.0.0.1: the per-address limit is lifted so that they
        # fill the listener (what is tested is the fd budget, not admission).
        self.d = Daemon(self.tree, ["--listen-tcp", "127.0.0.1:%d" % port, "--request-timeout", "120",
                                    "--max-connections-per-address", "512"])
        base = self.d.command
        hard = self.saved[1]
        self.d.command = lambda: ["prlimit", "--nofile=1024:%d" % hard, "--"] + base()
        self.d.start()
        before = self.settled_fds()   # the start-up probe's connection closes asynchronously
        for _ in range(512):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.d.socket)
            self.socks.append(s)
        for _ in range(512):
            self.socks.append(socket.create_connection(("127.0.0.1", port)))
        deadline = time.monotonic() + 20
        while self.daemon_fds() < before + 1024 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertGreaterEqual(self.daemon_fds(), before + 1024, "not every connection was accepted")
        # the first Unix connection (root: admin) asks for a resize and follows it
        s = self.socks[0]
        s.settimeout(30)
        f = s.makefile("rb")
        status, job = raw_request(s, f, "PUT", "/v1/hugepages/2M", {"nodes": {"0": 3}})
        self.assertEqual(status, 202, job)
        deadline = time.monotonic() + 20
        while job["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.05)
            status, job = raw_request(s, f, "GET", "/v1/jobs/%d" % job["id"])
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(self.tree.read("sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"), "3")
        self.assertNotIn("Too many open files", self.d.log_text())
        self.assertIn("open files: limit raised from 1024", self.d.log_text())

    def test_limits_beyond_the_hard_limit_refuse_to_start(self):
        d = Daemon(self.tree)
        try:
            p = subprocess.run(["prlimit", "--nofile=256:256", "--"] + d.command(), capture_output=True,
                               text=True, timeout=30)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("need 672 open files", p.stdout + p.stderr)
            self.assertIn("hard limit is 256", p.stdout + p.stderr)
            self.assertFalse(os.path.exists(d.socket))
            self.assertFalse(os.path.exists(d.db))
        finally:
            d.cleanup()

    def test_bad_limits_are_usage_errors(self):
        d = Daemon(self.tree)
        try:
            for args, msg in ((["--max-connections", "16", "--admin-reserve", "16"], "admin-reserve"),
                              (["--max-connections", " 16"], "max-connections"),
                              (["--max-connections-per-uid", "0"], "per-uid"),
                              (["--max-connections-per-address", "0"], "per-address"),
                              (["--max-connections-per-address", "-1"], "per-address"),
                              (["--request-timeout", "0"], "request-timeout")):
                p = subprocess.run(d.command() + args, capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, args)
                self.assertIn(msg, p.stderr, args)
                self.assertFalse(os.path.exists(d.db), args)
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
