"""The operation kinds are one table (server/ops/kinds.c, printed by `mempolicyd --list-kinds`):
what docs/DESIGN.md's job-kind recipe adds to, and what everything else that needs the list reads.

* every kind has its own summary line in server/store/summary.c (the history table's SUMMARY
  column), so a kind added by the recipe without one fails here, naming the file;
* every kind a source file records (`.kind = "..."`, `op.kind = "..."`, `#define KIND "..."`, a
  job kind's `.name`, a probe's `.job`) is in the table, so the table cannot silently miss one.

test_errors.py takes its list of operation kinds from the same table."""
import glob
import os
import re
import subprocess
import unittest

from lib import BIN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DAEMON = os.path.join(BIN, "mempolicyd")


def kinds():
    out = subprocess.run([DAEMON, "--list-kinds"], check=True, capture_output=True, text=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    return {k: (how, summary) for k, how, summary in rows}


class KindsAreOneTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kinds = kinds()

    def test_table_is_well_formed(self):
        self.assertGreaterEqual(len(self.kinds), 10)
        for k, (how, summary) in self.kinds.items():
            self.assertRegex(k, r"^[a-z]+\.[a-z-]+$", k)
            self.assertIn(how, ("job", "record"), k)
            self.assertIn(summary, ("summary", "no-summary"), k)
        self.assertEqual(self.kinds["hugepages.resize"][0], "job")
        self.assertEqual(self.kinds["knobs.set"][0], "record")

    def test_every_kind_has_its_summary_line(self):
        missing = [k for k, (_, s) in self.kinds.items() if s != "summary"]
        self.assertEqual(missing, [], "kinds without a line in server/store/summary.c's builders table")

    def test_every_recorded_kind_is_in_the_table(self):
        pats = [r'\.kind\s*=\s*"([a-z]+\.[a-z-]+)"', r'\bop\.kind\s*=\s*"([a-z]+\.[a-z-]+)"',
                r'#define\s+KIND\s+"([a-z]+\.[a-z-]+)"', r'\.name\s*=\s*"([a-z]+\.[a-z-]+)"',
                r'\.job\s*=\s*"([a-z]+\.[a-z-]+)"']
        found = {}
        for f in glob.glob(os.path.join(ROOT, "server", "**", "*.c"), recursive=True):
            text = open(f, encoding="utf-8").read()
            for p in pats:
                for m in re.finditer(p, text):
                    found.setdefault(m.group(1), os.path.relpath(f, ROOT))
        self.assertIn("knobs.set", found)         # the scan sees the sources
        self.assertIn("probe.touch", found)
        missing = ["%s (%s)" % (k, f) for k, f in sorted(found.items()) if k not in self.kinds]
        self.assertEqual(missing, [], "kinds recorded by the sources but not in server/ops/kinds.c")


if __name__ == "__main__":
    unittest.main()
