"""mempolicyctl end to end: exit codes (0 ok, 1 refused, 2 usage, 3 unreachable), stdout/stderr
discipline, --json equal to the API, aligned tables, --help everywhere, $MEMPOLICYD_SOCKET, and the
knob/history commands against a generated tree."""
import http.server
import json
import os
import re
import shlex
import socket
import socketserver
import subprocess
import tempfile
import threading
import unittest

from faketree import FakeTree
from lib import CTL, DaemonTest, real_file as real, run_on_tty

THP = "sys/kernel/mm/transparent_hugepage"


def run(args, env=None):
    """mempolicyctl without the --socket that Daemon.ctl adds."""
    e = {k: v for k, v in os.environ.items() if k != "MEMPOLICYD_SOCKET"}
    e.update(env or {})
    return subprocess.run([CTL] + list(args), capture_output=True, text=True, env=e, timeout=60)


def columns(line):
    """Start offsets of the cells of a table line (cells are separated by two or more spaces)."""
    return [m.start() for m in re.finditer(r"\S+(?: \S+)*", line)]


def tree_state(tree):
    """The tree's files, compared by content: the daemon writes values without the newline that
    FakeTree.write adds, which is not a change."""
    return {k: v.rstrip("\n") for k, v in tree.snapshot().items()}


class Recorder:
    """A stand-in daemon on a Unix socket that records each request and answers a canned reply:
    what mempolicyctl sends (method, path, JSON types) is checked here, not guessed from history."""

    def __init__(self, status=200, body=None, raw=None, content_type="application/json"):
        self.dir = tempfile.mkdtemp(prefix="mpd-rec-")
        self.socket = os.path.join(self.dir, "rec.sock")
        self.requests = []
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_one(self):
                n = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(n) if n else b""
                rec.requests.append((self.command, self.path, self.headers.get("Content-Type"),
                                     json.loads(data) if data else None))
                out = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = handle_one

            def address_string(self):
                return "unix"

            def log_message(self, *a):
                pass

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.server = Server(self.socket, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.socket)
        os.rmdir(self.dir)


def selected(text):
    return text[text.index("[") + 1:text.index("]")] if "[" in text else text.strip()


class CliTestBase(DaemonTest):
    def assertOk(self, p):
        self.assertEqual(p.returncode, 0, "stdout=%r stderr=%r" % (p.stdout, p.stderr))
        self.assertEqual(p.stderr, "")

    def assertExit(self, p, code, stderr_has=None):
        self.assertEqual(p.returncode, code, "stdout=%r stderr=%r" % (p.stdout, p.stderr))
        self.assertEqual(p.stdout, "", "a failing command printed a result")
        self.assertTrue(p.stderr.startswith("mempolicyctl: "), p.stderr)
        if stderr_has:
            self.assertIn(stderr_has, p.stderr)

    def assertAligned(self, text, ncols):
        lines = [line for line in text.splitlines() if line.strip()]
        self.assertGreater(len(lines), 1, text)
        want = columns(lines[0])
        self.assertEqual(len(want), ncols, lines[0])
        for line in lines[1:]:
            self.assertEqual(columns(line), want, "misaligned:\n%s" % text)
            self.assertEqual(line, line.rstrip(), "trailing blanks")


class CliUsageTest(CliTestBase):
    """Against the real kernel; nothing here changes anything."""

    def test_help_on_every_level_exits_0(self):
        for args in (["--help"], ["-h"], ["status", "--help"], ["topology", "--help"], ["knob", "--help"],
                     ["knob", "list", "--help"], ["knob", "get", "--help"], ["knob", "set", "--help"],
                     ["history", "--help"], ["history", "show", "--help"],
                     ["knob", "set", "thp.enabled=never", "--help"]):
            p = self.d.ctl(*args)
            self.assertOk(p)
            self.assertIn("usage", p.stdout, args)
            self.assertIn("3 daemon unreachable", p.stdout, args)
        top = self.d.ctl("--help").stdout
        for words in ("status", "topology", "knob list", "knob get", "knob set", "history", "history show"):
            self.assertIn("  " + words + " ", top)
        self.assertIn("--dry-run", self.d.ctl("knob", "set", "--help").stdout)
        self.assertIn("--since", self.d.ctl("history", "--help").stdout)
        self.assertIn("history show ID", self.d.ctl("history", "--help").stdout)
        self.assertIn("knob set NAME=VALUE", self.d.ctl("knob", "--help").stdout)

    def test_help_changes_nothing(self):
        before = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
        snap = self.d.db_snapshot()
        self.assertOk(self.d.ctl("knob", "set", "thp.enabled=never", "--help"))
        self.assertEqual(open("/sys/kernel/mm/transparent_hugepage/enabled").read(), before)
        self.assertEqual(self.d.db_snapshot(), snap)

    def test_version(self):
        p = self.d.ctl("--version")
        self.assertOk(p)
        # the version, then which libcurl serves which transport (test_cli_transport.py)
        self.assertRegex(p.stdout, r"^mempolicyctl \d+\.\d+\.\d+\nunix socket: libcurl/.*\nhttps: .*\n$")

    def test_usage_errors_exit_2_and_reach_nothing(self):
        snap = self.d.db_snapshot()
        cases = [
            ([], "no command"),
            (["frobnicate"], "unknown command 'frobnicate'"),
            (["knob", "frob"], "unknown command 'knob frob'"),
            (["--bogus", "status"], "unknown option '--bogus'"),
            (["status", "--bogus"], "unknown option '--bogus'"),
            (["status", "extra"], "unexpected argument 'extra'"),
            (["knob", "get"], "NAME"),
            (["knob", "get", "a", "b"], "unexpected argument 'b'"),
            (["knob", "get", "../etc/passwd"], "not a knob name"),
            (["knob", "set"], "NAME=VALUE"),
            (["knob", "set", "thp.enabled"], "not NAME=VALUE"),
            (["knob", "set", "=never"], "no knob name"),
            (["knob", "set", "thp.enabled="], "no value"),
            (["knob", "set", "thp/enabled=never"], "not a knob name"),
            (["knob", "set", "thp.enabled=never", "thp.enabled=always"], "given twice"),
            (["knob", "set", "thp.enabled=never", "--forcibly"], "unknown option '--forcibly'"),
            (["history", "show"], "ID"),
            (["history", "show", "abc"], "positive integer"),
            (["history", "show", "0"], "positive integer"),
            (["history", "--limit", "x"], "--limit"),
            (["history", "--limit"], "needs a value"),
            (["history", "--kind"], "needs a value"),
        ]
        for args, msg in cases:
            self.assertExit(self.d.ctl(*args), 2, msg)
        self.assertExit(run(["--socket"]), 2, "needs a value")
        # the bare group prints its commands on stderr and is a usage error
        p = self.d.ctl("knob")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertIn("knob list", p.stderr)
        self.assertEqual(self.d.db_snapshot(), snap)

    def test_unreachable_daemon_exits_3(self):
        p = run(["--socket", "/nonexistent/mpd.sock", "status"])
        self.assertExit(p, 3, "cannot reach mempolicyd at /nonexistent/mpd.sock")
        # a socket file nobody listens on: connection refused, also "unreachable"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "dead.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.close()
            for args in (["status"], ["topology"], ["knob", "list"], ["knob", "set", "thp.enabled=never"],
                         ["history"], ["history", "show", "1"]):
                self.assertExit(run(["--socket", path] + args), 3, "cannot reach mempolicyd")

    def test_environment_socket_is_honoured_and_option_wins(self):
        p = run(["status"], env={"MEMPOLICYD_SOCKET": self.d.socket})
        self.assertOk(p)
        self.assertIn(self.d.socket, p.stdout)
        self.assertExit(run(["status"], env={"MEMPOLICYD_SOCKET": "/nonexistent/x.sock"}), 3, "/nonexistent/x.sock")
        self.assertOk(run(["--socket", self.d.socket, "status"], env={"MEMPOLICYD_SOCKET": "/nonexistent/x.sock"}))
        # without either, the installed default is tried
        p = run(["status"])
        if not os.path.exists("/run/mempolicyd/mempolicyd.sock"):
            self.assertExit(p, 3, "/run/mempolicyd/mempolicyd.sock")

    def test_global_options_after_the_command(self):
        p = run(["topology", "--json", "--socket", self.d.socket])
        self.assertOk(p)
        self.assertEqual(json.loads(p.stdout)["node_count"], self.d.get("/v1/topology").json["node_count"])

    def test_status_on_the_real_machine(self):
        p = self.d.ctl("status")
        self.assertOk(p)
        out = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in p.stdout.splitlines())
        self.assertEqual(out["kernel"], os.uname().release)
        self.assertEqual(out["thp.enabled"], selected(open("/sys/kernel/mm/transparent_hugepage/enabled").read()))
        self.assertTrue(out["nodes"].startswith("%d " % self.d.get("/v1/topology").json["node_count"]))
        # --json is the daemon's answer, as every command's
        j = json.loads(self.d.ctl("--json", "status").stdout)
        self.assertEqual(j, self.d.get("/v1/health").json)
        self.assertEqual(j["kernel_release"], os.uname().release)

    def test_refusals_exit_1_with_detail_on_stderr_only(self):
        snap = self.d.db_snapshot()
        self.assertExit(self.d.ctl("knob", "get", "no.such.knob"), 1, "(knob.unknown)")
        # under --json the error is the daemon's problem object, on stderr
        p = self.d.ctl("--json", "knob", "get", "no.such.knob")
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(json.loads(p.stderr)["code"], "knob.unknown")
        self.assertExit(self.d.ctl("history", "show", "999999999"), 1, "(history.not_found)")
        self.assertExit(self.d.ctl("history", "--since", "yesterday"), 1, "(request.bad_query)")
        self.assertEqual(self.d.db_snapshot(), snap)


class CliFakeTreeTest(CliTestBase):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4, cpuless=(3,)))

    def tearDown(self):
        # every test leaves the tree's knobs as the tree was generated
        self.tree.write(THP + "/enabled", "always [madvise] never")
        self.tree.write(THP + "/defrag", "always defer defer+madvise [madvise] never")
        self.tree.write(THP + "/khugepaged/pages_to_scan", "4096")

    def test_json_equals_the_api(self):
        for args, path in ((["topology"], "/v1/topology"), (["knob", "list"], "/v1/knobs"),
                           (["knob", "get", "thp.enabled"], "/v1/knobs/thp.enabled"),
                           (["history", "--limit", "5"], "/v1/history?limit=5"),
                           (["history", "stats", "--size", "2M"], "/v1/history/stats?size=2M"),
                           (["pool", "list"], "/v1/hugepages"),
                           (["pool", "avail", "2M", "--node", "1", "--count", "3"],
                            "/v1/hugepages/2M/availability?count=3&node=1"),
                           (["job", "list"], "/v1/jobs?limit=50"), (["schedule", "list"], "/v1/schedules")):
            p = self.d.ctl("--json", *args)
            self.assertOk(p)
            self.assertEqual(json.loads(p.stdout), self.d.get(path).json, args)
            # indented by 2 with sorted keys
            self.assertTrue(p.stdout.startswith("{\n  \""), p.stdout[:40])

    def test_tables_are_aligned(self):
        p = self.d.ctl("topology")
        self.assertOk(p)
        nodes, dist = p.stdout.split("\n\n")
        self.assertAligned(nodes, 5)
        self.assertAligned(dist, 5)
        self.assertEqual(nodes.splitlines()[4].split()[:2], ["3", "-"])   # CPU-less node 3
        p = self.d.ctl("knob", "list")
        self.assertOk(p)
        self.assertAligned(p.stdout, 3)
        self.assertNotIn("\033", p.stdout)   # piped: plain text, no escapes
        names = [line.split()[0] for line in p.stdout.splitlines()[1:]]
        self.assertEqual(names, [k["name"] for k in self.d.get("/v1/knobs").json["knobs"]])

    def test_table_on_a_terminal(self):
        """On a TTY the header is bold and the columns still line up once the escapes are removed."""
        env = dict(os.environ, TERM="xterm")
        env.pop("NO_COLOR", None)
        rc, out, _ = run_on_tty([CTL, "--socket", self.d.socket, "topology"], "stdout", env=env)
        self.assertEqual(rc, 0)
        text = out.replace("\r\n", "\n")
        self.assertTrue(text.startswith("\033[1mNODE"), text[:40])
        plain = re.sub(r"\033\[[0-9;]*m", "", text)
        self.assertAligned(plain.split("\n\n")[0], 5)

    def test_knob_set_one_is_a_put_and_recorded(self):
        p = self.d.ctl("knob", "set", "thp.enabled=never")
        self.assertOk(p)
        self.assertEqual(selected(self.tree.read(THP + "/enabled")), "never")
        self.assertAligned(p.stdout.rsplit("\n", 2)[0], 4)
        m = re.search(r"operation (\d+): ok", p.stdout)
        self.assertTrue(m, p.stdout)
        op = self.d.get("/v1/history/" + m.group(1)).json
        self.assertEqual([(c["knob"], c["new"]) for c in op["knob_changes"]], [("thp.enabled", "never")])
        # history show prints it
        p = self.d.ctl("history", "show", m.group(1))
        self.assertOk(p)
        self.assertRegex(p.stdout, r"thp\.enabled\s+madvise\s+never\s+written")

    def test_integer_values_are_sent_as_json_integers(self):
        p = self.d.ctl("--json", "knob", "set", "thp.khugepaged.pages_to_scan=2048")
        self.assertOk(p)
        self.assertEqual(self.tree.read(THP + "/khugepaged/pages_to_scan"), "2048")
        op = self.d.get("/v1/history/%d" % json.loads(p.stdout)["operation_id"]).json
        self.assertEqual(op["knob_changes"][0]["new"], "2048")

    def test_dry_run_changes_nothing(self):
        tree, snap = tree_state(self.tree), self.d.db_snapshot()
        p = self.d.ctl("knob", "set", "thp.enabled=always", "thp.khugepaged.pages_to_scan=100", "--dry-run")
        self.assertOk(p)
        self.assertIn("dry run", p.stdout)
        self.assertRegex(p.stdout, r"thp\.enabled\s+madvise\s+always\s+yes")
        p = self.d.ctl("--json", "knob", "set", "thp.enabled=always", "--dry-run")
        self.assertOk(p)
        self.assertEqual(json.loads(p.stdout)["status"], "planned")
        self.assertEqual(tree_state(self.tree), tree)
        self.assertEqual(self.d.db_snapshot(), snap)

    def test_multi_set_is_one_patch_operation(self):
        p = self.d.ctl("--json", "knob", "set", "thp.defrag=defer", "thp.khugepaged.pages_to_scan=1024")
        self.assertOk(p)
        res = json.loads(p.stdout)
        self.assertEqual([c["knob"] for c in res["changes"]], ["thp.defrag", "thp.khugepaged.pages_to_scan"])
        self.assertEqual(selected(self.tree.read(THP + "/defrag")), "defer")
        self.assertEqual(self.tree.read(THP + "/khugepaged/pages_to_scan"), "1024")
        op = self.d.get("/v1/history/%d" % res["operation_id"]).json
        self.assertEqual(op["request"], {"knobs": {"thp.defrag": "defer", "thp.khugepaged.pages_to_scan": 1024}})
        self.assertEqual(len(op["knob_changes"]), 2)

    def test_kernel_refusal_rolls_back_and_exits_1(self):
        rel = THP + "/khugepaged/pages_to_scan"
        self.tree.einval(rel)   # the kernel answers EINVAL to 4096
        try:
            tree = tree_state(self.tree)
            p = self.d.ctl("knob", "set", "thp.enabled=never", "thp.khugepaged.pages_to_scan=4096")
            self.assertExit(p, 1, "(knob.kernel_refused)")
            self.assertRegex(p.stderr, r"thp\.enabled\s+madvise\s+never\s+restored")
            self.assertEqual(tree_state(self.tree), tree)
            last = self.d.get("/v1/history?limit=1").json["operations"][0]
            self.assertEqual(last["status"], "rolled_back")
        finally:
            os.unlink(self.tree.path(rel))
            self.tree.write(rel, "4096")

    def test_value_not_allowed_exits_1_and_changes_nothing(self):
        tree, snap = tree_state(self.tree), self.d.db_snapshot()
        self.assertExit(self.d.ctl("knob", "set", "thp.enabled=../../x"), 1, "(knob.value_not_allowed)")
        self.assertExit(self.d.ctl("knob", "set", "thp.khugepaged.max_ptes_none=512"), 1, "(knob.out_of_range)")
        self.assertExit(self.d.ctl("knob", "set", "no.such=1", "thp.enabled=never"), 1, "(knob.unknown)")
        self.assertEqual(tree_state(self.tree), tree)
        self.assertEqual(self.d.db_snapshot(), snap)

    def test_nobody_cannot_set_and_nothing_changes(self):
        tree, snap = tree_state(self.tree), self.d.db_snapshot()
        # nobody may read...
        p = self.d.ctl("knob", "get", "thp.enabled", user="nobody")
        self.assertOk(p)
        # ...but not change
        for args in (["knob", "set", "thp.enabled=never"], ["knob", "set", "thp.enabled=never", "thp.defrag=defer"],
                     ["knob", "set", "thp.enabled=never", "--dry-run"]):
            p = self.d.ctl(*args, user="nobody")
            self.assertExit(p, 1, "(auth.forbidden)")
        self.assertEqual(tree_state(self.tree), tree)
        self.assertEqual(self.d.db_snapshot(), snap)

    def test_history_filters_and_table(self):
        self.assertOk(self.d.ctl("knob", "set", "thp.enabled=always"))
        self.assertOk(self.d.ctl("knob", "set", "thp.enabled=madvise"))
        p = self.d.ctl("history", "--kind", "knobs.set", "--status", "ok", "--limit", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        # the next page's command is a hint, not a result: on stderr
        lines = p.stdout.splitlines() + p.stderr.splitlines()
        self.assertEqual(len(p.stdout.splitlines()), 2, p.stdout)
        self.assertEqual(lines[0].split(), ["ID", "STARTED", "KIND", "STATUS", "ACTOR", "SUMMARY", "ERROR"])
        # SUMMARY says what changed, from the operation's own knob changes
        self.assertRegex(lines[1], r"^\d+\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\s+knobs\.set\s+ok\s+root\s+"
                                   r"thp\.enabled always→madvise\s+-$")
        # the next page's command repeats the filters the cursor is bound to, ready to paste
        self.assertRegex(lines[2], r"^more: mempolicyctl history --kind knobs\.set --status ok --limit 1 "
                                   r"--cursor c[0-9a-f]+-[0-9a-f]{8}$")
        self.assertAligned("\n".join(lines[:2]), 7)
        cursor = lines[2].split()[-1]
        p2 = self.d.ctl("--json", *shlex.split(lines[2])[2:])
        self.assertOk(p2)
        api = self.d.get("/v1/history?kind=knobs.set&status=ok&limit=1&cursor=" + cursor).json
        self.assertEqual(json.loads(p2.stdout), api)
        self.assertLess(api["operations"][0]["id"], int(lines[1].split()[0]))
        # the same cursor with other filters is refused, not silently paged through something else
        self.assertExit(self.d.ctl("history", "--kind", "knobs.set", "--cursor", cursor), 1,
                        "(request.cursor_mismatch)")
        # a filter matching nothing: only the header
        p = self.d.ctl("history", "--kind", "no.such.kind")
        self.assertOk(p)
        self.assertEqual(p.stdout.splitlines(), ["ID  STARTED  KIND  STATUS  ACTOR  SUMMARY  ERROR"])
        # --since in the future: nothing
        p = self.d.ctl("--json", "history", "--since", "2200-01-01T00:00:00Z")
        self.assertOk(p)
        self.assertEqual(json.loads(p.stdout)["operations"], [])


class CliWireTest(unittest.TestCase):
    """What goes over the wire, against a recording stand-in daemon."""

    def rec(self, **kw):
        r = Recorder(**kw)
        self.addCleanup(r.close)
        return r

    def test_one_pair_is_a_put_with_a_typed_value(self):
        r = self.rec(body={"operation_id": 1, "status": "ok", "dry_run": False, "changes": []})
        self.assertEqual(run(["--socket", r.socket, "knob", "set", "thp.enabled=never"]).returncode, 0)
        self.assertEqual(run(["--socket", r.socket, "knob", "set", "thp.khugepaged.pages_to_scan=4096"]).returncode, 0)
        self.assertEqual(run(["--socket", r.socket, "knob", "set", "--dry-run", "numa.balancing=-1"]).returncode, 0)
        self.assertEqual(r.requests, [
            ("PUT", "/v1/knobs/thp.enabled", "application/json", {"value": "never"}),
            ("PUT", "/v1/knobs/thp.khugepaged.pages_to_scan", "application/json", {"value": 4096}),
            ("PUT", "/v1/knobs/numa.balancing?dry_run=true", "application/json", {"value": -1}),
        ])
        self.assertIsInstance(r.requests[1][3]["value"], int)

    def test_several_pairs_are_one_patch_in_order(self):
        r = self.rec(body={"operation_id": None, "status": "planned", "dry_run": True, "changes": []})
        p = run(["--socket", r.socket, "knob", "set", "thp.defrag=defer", "thp.khugepaged.pages_to_scan=2048",
                 "thp.enabled=never", "--dry-run"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(r.requests), 1)
        method, path, ctype, body = r.requests[0]
        self.assertEqual((method, path, ctype), ("PATCH", "/v1/knobs?dry_run=true", "application/json"))
        self.assertEqual(list(body["knobs"].items()),
                         [("thp.defrag", "defer"), ("thp.khugepaged.pages_to_scan", 2048), ("thp.enabled", "never")])

    def test_history_filters_are_escaped_query_arguments(self):
        r = self.rec(body={"operations": [], "next_cursor": None})
        p = run(["--socket", r.socket, "history", "--kind", "knobs.set", "--status=ok", "--since",
                 "2026-01-02T10:00:00+00:00", "--until", "1800000000000000000", "--limit", "7", "--cursor", "c2a"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(r.requests[0][:2], ("GET", "/v1/history?kind=knobs.set&status=ok&since="
                                             "2026-01-02T10%3A00%3A00%2B00%3A00&until=1800000000000000000"
                                             "&limit=7&cursor=c2a"))

    def test_more_line_quotes_what_the_shell_would_split(self):
        r = self.rec(body={"operations": [], "next_cursor": "c1f-0a0b0c0d"})
        args = ["--kind", "it's odd", "--status", "ok", "--since", "2026-01-02T10:00:00+00:00", "--until", ""]
        p = run(["--socket", r.socket, "history"] + args)
        self.assertEqual(p.returncode, 0, p.stderr)
        more = p.stderr.splitlines()[-1]
        self.assertTrue(more.startswith("more: mempolicyctl history "), p.stderr)
        self.assertEqual(shlex.split(more)[3:], args + ["--cursor", "c1f-0a0b0c0d"])

    def test_job_show_says_what_a_queued_job_waits_for(self):
        job = {"id": 9, "kind": "hugepages.resize", "status": "queued", "source": "scheduler", "schedule_id": 2,
               "operation_id": 17, "created_ns": 1795987020043735909, "started_ns": None, "finished_ns": None,
               "progress": {"pages_done": 0, "pages_total": 5, "batches": 0}, "waiting_for_job_id": 8}
        r = self.rec(body=job)
        p = run(["--socket", r.socket, "job", "show", "9"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^waiting for\s+job 8 \(same page size, ahead of this one\)$")
        del job["waiting_for_job_id"]
        r = self.rec(body=job)
        p = run(["--socket", r.socket, "job", "show", "9"])
        self.assertNotIn("waiting", p.stdout)

    def test_non_json_error_and_malformed_success(self):
        r = self.rec(status=502, raw=b"<html>bad gateway</html>", content_type="text/html")
        p = run(["--socket", r.socket, "topology"])
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("HTTP 502", p.stderr)
        r2 = self.rec(status=200, raw=b"{not json")
        p = run(["--socket", r2.socket, "--json", "topology"])
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("not JSON", p.stderr)

    def test_problem_without_code_still_reports_status(self):
        r = self.rec(status=409, body={"title": "Conflict", "status": 409, "detail": "busy"},
                     content_type="application/problem+json")
        p = run(["--socket", r.socket, "knob", "set", "thp.enabled=never"])
        self.assertEqual((p.returncode, p.stdout, p.stderr), (1, "", "mempolicyctl: busy (HTTP 409)\n"))


class CliRealKernelTest(CliTestBase):
    """One round trip through the real kernel: the CLI changes thp.enabled and thp.khugepaged
    .pages_to_scan in /sys, history records it, and both are restored (also on failure). Run under
    `flock /tmp/mpd-thp.lock` when other test runs may touch THP at the same time."""
    ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
    SCAN = "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"

    def test_set_and_restore_real_knobs(self):
        if not os.path.exists(self.ENABLED):
            self.skipTest("no THP on this kernel")
        old_mode, old_scan = selected(real(self.ENABLED)), real(self.SCAN)
        new_mode = "never" if old_mode != "never" else "madvise"
        new_scan = "4095" if old_scan != "4095" else "4094"
        try:
            p = self.d.ctl("knob", "set", "thp.enabled=" + new_mode, "thp.khugepaged.pages_to_scan=" + new_scan)
            self.assertOk(p)
            self.assertEqual(selected(real(self.ENABLED)), new_mode)
            self.assertEqual(real(self.SCAN), new_scan)
            op_id = re.search(r"operation (\d+): ok", p.stdout).group(1)
            shown = self.d.ctl("history", "show", op_id).stdout
            self.assertRegex(shown, r"thp\.enabled\s+%s\s+%s\s+written" % (old_mode, new_mode))
            self.assertRegex(shown, r"thp\.khugepaged\.pages_to_scan\s+%s\s+%s\s+written" % (old_scan, new_scan))
            self.assertOk(self.d.ctl("knob", "set", "thp.enabled=" + old_mode,
                                     "thp.khugepaged.pages_to_scan=" + old_scan))
        finally:
            with open(self.ENABLED, "w") as f:
                f.write(old_mode)
            with open(self.SCAN, "w") as f:
                f.write(old_scan)
        self.assertEqual((selected(real(self.ENABLED)), real(self.SCAN)), (old_mode, old_scan))
