"""The router and the HTTP edge: answers decided before any handler runs."""
import os
import signal
import subprocess

from lib import DAEMON, Daemon, DaemonTest


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
        self.assertEqual(r.headers.get("Allow"), "GET")

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
