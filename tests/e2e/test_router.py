"""The router and the HTTP edge: answers decided before any handler runs."""
import json
import os
import signal
import socket
import shutil
import subprocess
import tempfile
import time

from faketree import FakeTree
from lib import DAEMON, Daemon, DaemonTest, wait_read


def raw_response(sock):
    """One HTTP/1.1 response read off sock: (status line, headers, body)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError("the daemon closed the connection: %r" % buf)
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(4096)
    return lines[0], headers, body


class _Prefixed:
    """A socket whose first recv() returns bytes already read off it."""
    def __init__(self, sock, first):
        self.sock, self.first = sock, first

    def recv(self, n):
        if self.first:
            out, self.first = self.first, b""
            return out
        return self.sock.recv(n)


class RouterTest(DaemonTest):
    def test_health_reports_version_kernel_and_capabilities(self):
        r = self.d.get("/v1/health")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.content_type.startswith("application/json"))
        self.assertEqual(r.json["status"], "ok")
        self.assertEqual(r.json["kernel_release"], os.uname().release)
        caps = r.json["capabilities"]
        self.assertEqual(caps["thp"], os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"))
        self.assertIn("2M", caps["hugetlb_sizes"])

    def test_unknown_query_parameter_is_400(self):
        self.assertProblem(self.d.get("/v1/health?verbose=1"), 400, "request.unknown_query")

    def test_unknown_path_is_404_problem(self):
        self.assertProblem(self.d.get("/v1/nothing-here"), 404, "request.not_found")
        self.assertProblem(self.d.get("/"), 404)
        self.assertProblem(self.d.get("/v1/health/extra"), 404)

    def test_wrong_method_is_405_with_allow(self):
        r = self.d.request("DELETE", "/v1/health")
        self.assertProblem(r, 405, "request.method_not_allowed")
        self.assertEqual(r.headers.get("Allow"), "GET, HEAD")

    def test_head_answers_get_headers_without_a_body(self):
        """RFC 9110 9.3.2: HEAD on a GET route is GET's status and headers, no body. On one
        connection, the bytes after HEAD's header block must be the next answer's status line: a
        body sent after HEAD would stand there instead."""
        for url, status in (("/v1/health", 200), ("/v1/knobs/thp.nothing", 404), ("/v1/topology?x=1", 400)):
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(self.d.socket)
                s.sendall(b"HEAD %s HTTP/1.1\r\nHost: x\r\n\r\n" % url.encode())
                buf = b""
                while b"\r\n\r\n" not in buf:
                    chunk = s.recv(4096)
                    self.assertTrue(chunk, buf)
                    buf += chunk
                head, rest = buf.split(b"\r\n\r\n", 1)
                lines = head.decode().split("\r\n")
                headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
                self.assertIn(" %d " % status, lines[0] + " ")
                get = self.d.get(url)
                self.assertEqual(get.status, status)
                self.assertEqual(headers["content-type"], get.headers["Content-Type"])
                if status == 200:   # a problem's detail may differ in length between calls; a 200 here does not
                    self.assertEqual(int(headers["content-length"]), len(get.raw.encode()))
                # A body sent after HEAD's headers would come before this answer on the stream.
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                status_line, _, body = raw_response(_Prefixed(s, rest))
                self.assertTrue(status_line.startswith("HTTP/1.1 200"), (url, status_line))
                self.assertEqual(json.loads(body)["status"], "ok")
        # HEAD is GET's only: on a path without GET it is a 405 whose Allow does not offer it
        r = self.d.request("HEAD", "/v1/processes")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.headers.get("Allow"), "POST")

    def test_refusal_from_the_headers_waits_for_the_body(self):
        """A 415 decided from the headers is sent once the (small) body is read: a client that writes
        its whole request before reading gets the problem instead of EPIPE, and the connection stays
        usable. With Expect: 100-continue it comes at once and the body is never asked for.
        The body is sent once the daemon has read the headers (wait_read, an event rather than a
        sleep), so the answer is decided from them alone; and the proof needs no timing: an answer
        queued before the body was read makes libmicrohttpd close the connection ("Connection:
        close", as the 100-continue case below shows), so a daemon that answered early fails
        the second request on this connection, whenever its answer went out."""
        before = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
        body = b'{"value": "never"}'
        head = (b"PUT /v1/knobs/thp.enabled HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                b"Content-Length: %d\r\n" % len(body))
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(self.d.socket)
            s.sendall(head + b"\r\n")
            wait_read(s)   # the daemon has the headers alone: an answer sent now would precede the body
            s.sendall(body)
            status, headers, raw = raw_response(s)
            self.assertIn(" 415 ", status)
            self.assertTrue(headers["content-type"].startswith("application/problem+json"))
            self.assertEqual(json.loads(raw)["code"], "request.unsupported_media_type")
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIn(" 200 ", raw_response(s)[0])
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(self.d.socket)
            s.sendall(head + b"Expect: 100-continue\r\n\r\n")
            status, headers, raw = raw_response(s)
            self.assertIn(" 415 ", status)   # not "100 Continue"
            self.assertEqual(json.loads(raw)["code"], "request.unsupported_media_type")
            self.assertEqual(headers.get("connection"), "close")   # answered early: not reusable
        self.assertEqual(open("/sys/kernel/mm/transparent_hugepage/enabled").read(), before)

    def test_overlong_url_is_414(self):
        self.assertProblem(self.d.get("/v1/" + "a" * 2000), 414)

    def test_socket_is_reachable_by_curl(self):
        p = self.d.curl("-i", "http://localhost/v1/health")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("200 OK", p.stdout.splitlines()[0])


class LifecycleTest(DaemonTest):
    def test_sigterm_stops_cleanly_and_removes_socket(self):
        d = Daemon().start()
        try:
            self.assertTrue(os.path.exists(d.socket))
            self.assertEqual(d.stop(signal.SIGTERM), 0)
            self.assertFalse(os.path.exists(d.socket))
        finally:
            d.cleanup()

    def test_sigterm_lets_the_request_in_flight_finish(self):
        """A request half-sent when SIGTERM arrives is still read, applied, recorded and answered;
        new connections are refused meanwhile; the database is closed (no WAL file left)."""
        tmp = tempfile.mkdtemp(prefix="mpd-term-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)
        tree = FakeTree(tmp, nodes=2)
        with socket.socket() as p:
            p.bind(("127.0.0.1", 0))
            port = p.getsockname()[1]
        d = Daemon(tree, ["--listen-tcp", "127.0.0.1:%d" % port]).start()
        self.addCleanup(d.cleanup)
        body = b'{"value": 1234}'
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(d.socket)
            s.sendall(b"PUT /v1/knobs/thp.khugepaged.pages_to_scan HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:5])
            wait_read(s)   # accepted and partly read: in flight, not waiting in the listen backlog
            d.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 30
            while os.path.exists(d.socket) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertFalse(os.path.exists(d.socket), "the socket is still there 30 s after SIGTERM")
            with socket.socket(socket.AF_UNIX) as s2:   # no new connections while it drains
                with self.assertRaises(OSError):
                    s2.connect(d.socket)
            with socket.socket() as s3:
                s3.settimeout(5)
                with self.assertRaises(ConnectionRefusedError):
                    s3.connect(("127.0.0.1", port))
            self.assertIsNone(d.proc.poll(), "the daemon exited with a request in flight")
            s.sendall(body[5:])
            status, _, raw = raw_response(s)
        self.assertIn(" 200 ", status, raw)
        op = json.loads(raw)["operation_id"]
        self.assertEqual(d.stop(), 0)
        self.assertEqual(tree.read("sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"), "1234")
        self.assertEqual(d.sql("SELECT status FROM operations WHERE id = ?", (op,)), [("ok",)])
        self.assertFalse(os.path.exists(d.db + "-wal"), "the database was not closed cleanly")

    def test_second_daemon_on_same_socket_refuses(self):
        d2 = Daemon(workdir=self.d.dir)
        p = subprocess.run(d2.command(), capture_output=True, text=True, timeout=10)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("another daemon", p.stderr)
        self.assertEqual(self.d.get("/v1/health").status, 200)

    def test_tcp_listener_refuses_non_loopback(self):
        d = Daemon(args=["--listen-tcp", "0.0.0.0:0"])
        try:
            p = subprocess.run(d.command(), capture_output=True, text=True, timeout=10)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("not a loopback address", p.stderr)
        finally:
            d.cleanup()

    def test_unknown_option_and_config_key_are_usage_errors(self):
        d = Daemon(args=["--no-such-option"])
        try:
            p = subprocess.run(d.command(), capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2)
            cfg = os.path.join(d.dir, "bad.conf")
            with open(cfg, "w") as f:
                f.write("socket = %s\nfrobnicate = 1\n" % d.socket)
            p = subprocess.run([d.command()[0], "--config", cfg], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2)
            self.assertIn("unknown setting 'frobnicate'", p.stderr)
        finally:
            d.cleanup()

    def test_config_file_sets_socket_and_db(self):
        d = Daemon()
        try:
            cfg = os.path.join(d.dir, "mpd.conf")
            with open(cfg, "w") as f:
                f.write("# comment\nsocket = %s\ndb=%s\nlog-level = debug\n" % (d.socket, d.db))
            d.command = lambda: [DAEMON, "--config", cfg]
            d.start()
            self.assertTrue(os.path.exists(d.db))
            self.assertEqual(d.get("/v1/health").status, 200)
        finally:
            d.cleanup()
