"""Strings from the daemon reach the administrator's terminal escaped (issue: terminal escapes pass
through the CLI). A stand-in daemon answers with text that carries ESC sequences (a window-title
OSC, a clear-screen CSI), BEL, a carriage return and the C1 control U+009B (a one-byte CSI to some
terminals), as knob values, error details, actor names and cursors would if another user or a
hostile server chose them. Tables, errors and plain lines show them as \\e, \\x07, \\r, \\u009b;
--json stays the daemon's JSON, exactly."""
import json
import subprocess
import unittest

from lib import CTL
from test_cli_bounds import CountingServer

EVIL = "a\x1b]0;owned\x07b\x1b[2Jc\rd\u009be"
SHOWN = "a\\e]0;owned\\x07b\\e[2Jc\\rd\\u009be"
RAW = ("\x1b", "\x07", "\r", "\u009b")


class CliEscapesTest(unittest.TestCase):
    def serve(self, answer):
        s = CountingServer(answer)
        self.addCleanup(s.close)
        return s

    def ctl(self, s, *argv):
        p = subprocess.run([CTL, "--socket", s.socket] + list(argv), capture_output=True, timeout=60)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def assertClean(self, text):
        for c in RAW:
            self.assertNotIn(c, text.replace("\r\n", "\n"), "a raw control character reached the terminal")

    def test_knob_values_in_a_table(self):
        knob = {"name": "thp.enabled", "type": "choice", "value": EVIL, "allowed": [EVIL, "never"],
                "path": "/sys/x", "available": True, "writable": True, "description": EVIL}
        s = self.serve(lambda m, p, n: (200, knob))
        rc, out, err = self.ctl(s, "knob", "get", "thp.enabled")
        self.assertEqual(rc, 0, err)
        self.assertClean(out)
        self.assertIn(SHOWN, out)

    def test_error_details(self):
        problem = {"type": "urn:mempolicyd:problem:knob.unknown", "title": "Not Found", "status": 404,
                   "detail": EVIL, "code": "knob.unknown", "instance": "/v1/knobs/x"}
        s = self.serve(lambda m, p, n: (404, problem))
        rc, out, err = self.ctl(s, "knob", "get", "x")
        self.assertEqual(rc, 1, err)
        self.assertClean(err)
        self.assertIn(SHOWN, err)

    def test_actor_names_and_cursor_in_history(self):
        ops = {"operations": [{"id": 1, "kind": "knobs.set", "source": "api", "actor": {"uid": 1000, "name": EVIL},
                               "started_ns": 1, "finished_ns": 2, "status": EVIL, "errno": None, "error": None}],
               "next_cursor": EVIL}
        s = self.serve(lambda m, p, n: (200, ops))
        rc, out, err = self.ctl(s, "history")
        self.assertEqual(rc, 0, err)
        self.assertClean(out)
        self.assertIn(SHOWN, out)

    def test_history_summary_is_escaped(self):
        # the summary is built from what clients sent (a cgroup path, a program's name)
        ops = {"operations": [{"id": 1, "kind": "process.launch", "source": "api", "actor": None,
                               "started_ns": 1, "finished_ns": 2, "status": "failed", "errno": None, "error": None,
                               "summary": EVIL + " failed"}], "next_cursor": None}
        s = self.serve(lambda m, p, n: (200, ops))
        rc, out, err = self.ctl(s, "history")
        self.assertEqual(rc, 0, err)
        self.assertClean(out)
        self.assertIn(SHOWN + " failed", out)

    def test_json_stays_exact(self):
        knob = {"name": "thp.enabled", "value": EVIL}
        s = self.serve(lambda m, p, n: (200, knob))
        rc, out, err = self.ctl(s, "--json", "knob", "get", "thp.enabled")
        self.assertEqual(rc, 0, err)
        self.assertClean(out)   # JSON escapes control characters itself (\u001b)
        self.assertEqual(json.loads(out), knob)


if __name__ == "__main__":
    unittest.main()
