"""The figures common/stats.c is unit-tested against (tests/unit/fixtures/stats_scipy.json) are
SciPy's: regenerated here with Debian's SciPy (/usr/bin/python3, packaging/deps.sh test installs
python3-scipy) by the script that wrote them, they must match the committed file, so the C test
cannot drift onto a file nobody can reproduce. No daemon."""
import json
import math
import os
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "unit", "fixtures")


def same(a, b, path="$"):
    """Equal structures, numbers to 1e-12 relative (another SciPy patch release may differ in the
    last bits of a p-value)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300):
            return "%s: %r != %r" % (path, a, b)
        return None
    if type(a) is not type(b):
        return "%s: %r != %r" % (path, a, b)
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return "%s: keys %s != %s" % (path, sorted(a), sorted(b))
        for k in a:
            d = same(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items != %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r != %r" % (path, a, b)


class StatsFixtureIsScipys(unittest.TestCase):
    def test_fixture_regenerates_from_scipy(self):
        p = subprocess.run(["/usr/bin/python3", os.path.join(FIX, "stats_scipy.py")], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        fresh = json.loads(p.stdout)
        with open(os.path.join(FIX, "stats_scipy.json")) as f:
            committed = json.load(f)
        committed.pop("scipy")
        fresh.pop("scipy")
        self.assertIsNone(same(fresh, committed))

    def test_fixture_covers_both_p_value_methods_and_ties(self):
        with open(os.path.join(FIX, "stats_scipy.json")) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(any("p_exact" in c for c in cases))
        self.assertTrue(any("p_exact" not in c and not c["ties"] for c in cases))   # past the exact limit
        self.assertTrue(any(c["ties"] for c in cases))
        self.assertTrue(any(c["hl_ci"] is None for c in cases))                    # too few for 95 %


if __name__ == "__main__":
    unittest.main()
