"""The problem-code registry (common/errcodes.h) is the one list of codes:

* `mempolicyd --list-errors` prints it, and schema/openapi.yaml (`x-problem-codes`) and
  docs/reference/errors.md list exactly it (tools/gen-errors.py --check);
* no source file outside the registry spells a code as a string: lower layers name MPE_* constants
  (mp_fail's type forbids anything else) and only api/problem.c turns kinds into statuses;
* every dotted name in the spec, the README and docs/ that looks like a code (a registry prefix)
  is a registry code or a known operation kind, so a renamed code cannot linger in the prose;
* live problems from a daemon carry a registry code with the status the registry gives it."""
import glob
import os
import re
import subprocess
import unittest

from faketree import FakeTree
from lib import BIN, DaemonTest
from test_kinds import kinds

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DAEMON = os.path.join(BIN, "mempolicyd")


def operation_kinds():
    """Dotted names that share a registry prefix but are operation (history) kinds, not problem
    codes: the daemon's own table (server/ops/kinds.c), so a new kind needs no line here."""
    return set(kinds())


def registry():
    out = subprocess.run([DAEMON, "--list-errors"], check=True, capture_output=True, text=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    return {code: (status, kind, meaning) for code, status, kind, meaning in rows}


class RegistryIsTheOneList(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.reg = registry()

    def test_registry_is_well_formed(self):
        self.assertGreater(len(self.reg), 40)
        for code, (status, kind, meaning) in self.reg.items():
            self.assertRegex(code, r"^[a-z]+\.[a-z_]+$", code)
            for s in status.split("|"):
                self.assertTrue(400 <= int(s) <= 599, (code, status))
            self.assertTrue(kind and meaning, code)
        self.assertEqual([c for c in self.reg if "oom" in c], [], "one out-of-memory code: internal.nomem")
        self.assertIn("internal.nomem", self.reg)

    def test_spec_and_doc_list_the_registry(self):
        p = subprocess.run([os.path.join(ROOT, "tools", "gen-errors.py"), "--check", "--bin", BIN],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_no_code_spelled_outside_the_registry(self):
        files = [f for pat in ("server/**/*.[ch]", "common/*.[ch]", "client/*.[ch]")
                 for f in glob.glob(os.path.join(ROOT, pat), recursive=True)
                 if not f.endswith("common/errcodes.h")]
        self.assertGreater(len(files), 30)
        found = []
        for f in files:
            text = open(f).read()
            for code in self.reg:
                if '"%s"' % code in text:
                    found.append("%s: \"%s\"" % (os.path.relpath(f, ROOT), code))
        self.assertEqual(found, [], "write MPE_* constants, not code strings")

    def test_prose_names_only_registry_codes(self):
        prefixes = sorted({c.split(".")[0] for c in self.reg} | {"jobs", "scheduler"})
        pat = re.compile(r"(?<![\w./-])(%s)\.[a-z_]+(?![\w.(/-])" % "|".join(prefixes))
        docs = [os.path.join(ROOT, "schema", "openapi.yaml"), os.path.join(ROOT, "README.md")] + \
            [f for f in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
             if not f.endswith("bench.md")]   # benchmark row ids (stats.query) are their own namespace
        stale, kinds = [], operation_kinds()
        for f in docs:
            for m in pat.finditer(open(f).read()):
                name = m.group(0)
                if name not in self.reg and name not in kinds and not re.search(r"\.(c|h|md|py)$", name):
                    stale.append("%s: %s" % (os.path.relpath(f, ROOT), name))
        self.assertEqual(stale, [], "names that look like problem codes but are not in the registry")


class JobReasonsAreARegistry(unittest.TestCase):
    """A job's reason is one registry (server/jobs/reasons.h), like the problem codes: listed by the
    daemon, in the spec's Job.reason enum and docs/reference/job-reasons.md (gen-errors.py --check,
    above), and never spelled as text where a job ends."""

    def test_reasons_are_names(self):
        out = subprocess.run([DAEMON, "--list-reasons"], check=True, capture_output=True, text=True).stdout
        rows = [line.split("\t") for line in out.splitlines()]
        names = [r[0] for r in rows]
        self.assertGreaterEqual(len(names), 8)
        for name, meaning in rows:
            # A name, or where the job ended on a registered problem (priv.lost, process.changed)
            # that problem's code, so that a client matches one spelling for both.
            self.assertRegex(name, r"^[a-z]+(_[a-z]+)*(\.[a-z]+(_[a-z]+)*)?$", "a reason is a name, not a sentence")
            if "." in name:
                self.assertIn(name, registry(), "a dotted reason is a registered problem code")
            self.assertTrue(meaning, name)
        self.assertEqual(len(set(names)), len(names))
        for r in ("cancel_requested", "not_started", "daemon_stopping", "restart", "no_progress", "deadline"):
            self.assertIn(r, names)

    def test_no_reason_is_spelled_as_text(self):
        # The store's job_end takes text: only job_reason_name() may fill it.
        found = []
        for f in glob.glob(os.path.join(ROOT, "server", "**", "*.c"), recursive=True):
            for n, line in enumerate(open(f, encoding="utf-8"), 1):
                if re.search(r'\.reason\s*=\s*"|->reason\s*=\s*"|\breason\s*=\s*"', line):
                    found.append("%s:%d: %s" % (os.path.relpath(f, ROOT), n, line.strip()))
        self.assertEqual(found, [], "set JR_* (server/jobs/reasons.h), or job_reason_name(JR_*) for the store")
        spec = open(os.path.join(ROOT, "schema", "openapi.yaml")).read()
        self.assertNotIn("cancelled before it started", spec)


class LiveProblemsUseTheRegistry(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2))

    def test_each_problem_has_its_registry_status(self):
        reg = registry()
        cases = [
            ("GET", "/v1/nothing", None, "request.not_found"),
            ("DELETE", "/v1/knobs", None, "request.method_not_allowed"),
            ("GET", "/v1/knobs/thp.nothing", None, "knob.unknown"),
            ("GET", "/v1/history?limit=0", None, "request.bad_query"),
            ("GET", "/v1/history?colour=red", None, "request.unknown_query"),
            ("GET", "/v1/jobs/999999", None, "job.not_found"),
            ("GET", "/v1/hugepages/3M", None, "hugepages.unknown_size"),
            ("PUT", "/v1/knobs/thp.enabled", {"value": "sometimes"}, "knob.value_not_allowed"),
            ("PUT", "/v1/knobs/thp.enabled", {"value": "never", "colour": 1}, "request.unknown_field"),
        ]
        for method, path, body, code in cases:
            with self.subTest(path=path, code=code):
                r = self.d.request(method, path, body=body)
                self.assertEqual(r.json["code"], code, r.raw)
                self.assertEqual(str(r.status), reg[code][0], r.raw)
                self.assertEqual(r.json["type"], "urn:mempolicyd:problem:" + code)

    def test_unknown_size_in_a_schedule_action_is_unprocessable(self):
        r = self.d.request("POST", "/v1/schedules",
                           body={"cron": "0 2 * * *", "action": {"hugepages": {"size": "3M", "total": 1}}})
        self.assertEqual((r.status, r.json["code"]), (422, "hugepages.unknown_size"), r.raw)
        self.assertEqual(self.d.get("/v1/schedules").json["schedules"], [])


if __name__ == "__main__":
    unittest.main()
