"""mempolicyctl's bounds (issue 7, item 5): numbers with hundreds of leading zeros, filters too long
for a request, a stdout that cannot be written, and one connection per command.

The overflow cases are run with the client under test, which `tests/run` takes from the sanitized
build: the client before this change overflowed its stack buffers here (ASan's stack-buffer-overflow
for `job list --limit 0{500}5 --kind ...` and `pool avail 2M --count 0{230}3 --node 1`) or sent a
cut-short value (`--count 0{300}3` went out as count=000...0)."""
import json
import os
import signal
import socketserver
import subprocess
import tempfile
import threading
import http.server
import unittest

from faketree import FakeTree
from lib import CTL, DaemonTest


def zeros(n, digit):
    return "0" * n + digit


class CliNumbersAndLengthsTest(DaemonTest):
    """Against the real daemon on a generated 4-node tree."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4, cpuless=(3,)))

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # one finished job, so that `job list` has something to filter
        r = cls.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"1": 2}})
        assert r.status == 202, r.raw
        p = cls.d.ctl("job", "show", str(r.json["id"]), "--wait")
        assert p.returncode == 0, p.stderr

    def assertSameAsApi(self, argv, path):
        p = self.d.ctl("--json", *argv)
        self.assertEqual((p.returncode, p.stderr), (0, ""), argv[:4])
        self.assertEqual(json.loads(p.stdout), self.d.get(path).json, path)

    def test_leading_zeros_are_the_number_they_spell(self):
        for n in (230, 300, 1000):
            with self.subTest(command="pool avail", zeros=n):
                self.assertSameAsApi(["pool", "avail", "2M", "--node", zeros(n, "1"), "--count", zeros(n, "3")],
                                     "/v1/hugepages/2M/availability?count=3&node=1")
        for n in (300, 500, 1000):
            with self.subTest(command="job list", zeros=n):
                self.assertSameAsApi(["job", "list", "--limit", zeros(n, "1"), "--kind", "hugepages.resize",
                                      "--status", "ok"], "/v1/jobs?limit=1&kind=hugepages.resize&status=ok")
                # long filters next to the long number: all of them reach the daemon
                kind, status = "k" * 100, "s" * 100
                self.assertSameAsApi(["job", "list", "--limit", zeros(n, "5"), "--kind", kind, "--status", status],
                                     "/v1/jobs?limit=5&kind=%s&status=%s" % (kind, status))
        self.assertSameAsApi(["history", "--limit", zeros(300, "2")], "/v1/history?limit=2")
        jobs = self.d.get("/v1/jobs?limit=1").json["jobs"]
        self.assertSameAsApi(["job", "show", zeros(300, str(jobs[0]["id"]))], "/v1/jobs/%d" % jobs[0]["id"])

    def test_request_too_long_is_a_usage_error_and_sends_nothing(self):
        snap = self.d.db_snapshot()
        cases = [["job", "list", "--kind", "k" * 2100],
                 ["job", "list", "--status", "/" * 800],   # fits as text, not once escaped
                 ["history", "--kind", "k" * 1000, "--since", "s" * 1000, "--cursor", "c" * 100],
                 ["history", "stats", "--since", "%" * 700],
                 ["pool", "avail", "2" * 2100, "--count", "1"],
                 ["pool", "resize", "2" * 2100, "--total", "1"]]
        for argv in cases:
            with self.subTest(argv=[a[:20] for a in argv]):
                p = self.d.ctl(*argv)
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr[:300])
                self.assertIn("longer than 2047 bytes; nothing was sent", p.stderr)
        self.assertEqual(self.d.db_snapshot(), snap)

    def test_unwritable_stdout_is_a_failure(self):
        with open("/dev/full", "w") as full:
            for argv in (["knob", "list"], ["--json", "job", "list"], ["pool", "list"]):
                with self.subTest(argv=argv):
                    p = subprocess.run([CTL, "--socket", self.d.socket] + argv, stdout=full, stderr=subprocess.PIPE,
                                       text=True, timeout=60)
                    self.assertEqual(p.returncode, 1, p.stderr)
                    self.assertIn("mempolicyctl: cannot write the result to stdout: No space left on device",
                                  p.stderr)
        # the same commands with a writable stdout succeed: the failure above is the write's
        self.assertEqual(self.d.ctl("knob", "list").returncode, 0)


class CliStdoutWithoutDaemonTest(unittest.TestCase):
    def test_help_and_version_to_a_full_disk_fail(self):
        with open("/dev/full", "w") as full:
            for argv in (["--help"], ["--version"], ["knob", "--help"], ["pool", "resize", "--help"]):
                with self.subTest(argv=argv):
                    p = subprocess.run([CTL] + argv, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
                    self.assertNotEqual(p.returncode, 0)
                    self.assertIn("cannot write the result to stdout", p.stderr)

    def test_closed_pipe_fails(self):
        """A reader that went away (EPIPE, with SIGPIPE ignored as many a supervisor leaves it)."""
        r, w = os.pipe()
        os.close(r)
        try:
            p = subprocess.run([CTL, "--help"], stdout=w, stderr=subprocess.PIPE, text=True, timeout=60,
                               preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN))
        finally:
            os.close(w)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot write the result to stdout: Broken pipe", p.stderr)


class CountingServer:
    """A stand-in daemon that speaks HTTP/1.1 with keep-alive, as mempolicyd does, and counts the
    connections it accepts: what is counted is the client's connecting, not a guess from logs.
    answer(method, path, n) -> (status, body) for the n-th request (from 0)."""

    def __init__(self, answer):
        self.dir = tempfile.mkdtemp(prefix="mpd-conn-")
        self.socket = os.path.join(self.dir, "conn.sock")
        self.connections = 0
        self.requests = []
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                srv.connections += 1

            def one(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                srv.requests.append((self.command, self.path))
                status, body = answer(self.command, self.path, len(srv.requests) - 1)
                out = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_PUT = do_DELETE = one

            def address_string(self):
                return "unix"

            def log_message(self, *a):
                pass

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.server = Server(self.socket, Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.socket)
        os.rmdir(self.dir)


def job(status, done):
    return {"id": 9, "kind": "hugepages.resize", "status": status, "source": "api", "created_ns": 1,
            "progress": {"pages_done": done, "pages_total": 4, "batches": done},
            "result": {"targets": []} if status == "ok" else None}


class CliConnectionTest(unittest.TestCase):
    def serve(self, answer):
        s = CountingServer(answer)
        self.addCleanup(s.close)
        return s

    def run_ctl(self, s, *argv):
        return subprocess.run([CTL, "--socket", s.socket] + list(argv), capture_output=True, text=True, timeout=60)

    @staticmethod
    def polling(method, path, n):
        """PUT starts job 9; GET /v1/jobs/9 says running for five polls, then ok."""
        if method == "PUT":
            return 202, {"id": 9, "status": "queued"}
        return 200, job("running" if n < 5 else "ok", min(n, 4))

    # The job is waited for with ?wait= (the daemon holds each answer until the job ends): the
    # first request is not held (a terminal's bar shows at once), the next ones ask for the most
    # the daemon holds (not a terminal here), all on one connection.
    def test_job_show_wait_waits_on_one_connection(self):
        s = self.serve(self.polling)
        p = self.run_ctl(s, "job", "show", "9", "--wait")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(s.requests, [("GET", "/v1/jobs/9")] + [("GET", "/v1/jobs/9?wait=30")] * 5)
        self.assertEqual(s.connections, 1)

    def test_pool_resize_starts_and_waits_on_one_connection(self):
        s = self.serve(self.polling)
        p = self.run_ctl(s, "pool", "resize", "2M", "--total", "4")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(s.requests[0], ("PUT", "/v1/hugepages/2M"))
        self.assertEqual(s.requests[1:], [("GET", "/v1/jobs/9")] + [("GET", "/v1/jobs/9?wait=30")] * 4)
        self.assertEqual(s.connections, 1)

    def test_status_makes_three_requests_on_one_connection(self):
        s = self.serve(lambda m, path, n: (200, {"status": "ok", "node_count": 1, "value": "madvise"}))
        p = self.run_ctl(s, "status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(s.requests), 3)
        self.assertEqual(s.connections, 1)

    def test_filters_are_sent_whole(self):
        """The old client cut --kind to nothing past 127 bytes and a long --status short."""
        s = self.serve(lambda m, path, n: (200, {"jobs": []}))
        kind, status = "k" * 300, "s/" * 100
        p = self.run_ctl(s, "job", "list", "--limit", zeros(300, "5"), "--kind", kind, "--status", status)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(s.requests, [("GET", "/v1/jobs?limit=5&kind=%s&status=%s" % (kind, "s%2F" * 100))])
