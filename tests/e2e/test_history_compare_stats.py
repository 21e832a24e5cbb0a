"""history compare with samples (issue 20): several runs of one probe in a column (ids=A:B:C,D:E:F)
are samples; the column shows their median and each column after the first its difference of
medians in % with the 95 % interval, the Mann-Whitney U p-value and ministat's verdict, computed
by common/stats and checked here against SciPy (Debian's /usr/bin/python3) on the same figures.
Real kernel, the framework's probe `touch`, which changes no setting; and a resize's p95 with its
own interval on a generated tree."""
import json
import math
import os
import subprocess

from faketree import FakeTree
from lib import DaemonTest
from test_openapi import Validator, load_spec
from test_pools_fake import wait_job as wait_pool_job
from test_probes_framework import wait_job

RUNS = 9   # google/benchmark's threshold: no "unreliable"


def scipy_view(base, arm):
    """p-value and the HL interval in % of the baseline's median, by SciPy and NumPy."""
    prog = r"""
import json, math, sys
import numpy as np, scipy.stats as ss
b, a = (np.asarray(v, float) for v in json.load(sys.stdin))
ties = len(np.unique(np.concatenate([b, a]))) < len(b) + len(a)
method = "asymptotic" if ties or len(b) * len(a) > 2500 else "exact"
p = ss.mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue
d = np.sort((a[None, :] - b[:, None]).ravel())
print(json.dumps({"p": float(p), "method": method, "median_b": float(np.median(b)), "d": d.tolist()}))
"""
    p = subprocess.run(["/usr/bin/python3", "-c", prog], input=json.dumps([base, arm]), capture_output=True,
                       text=True, check=True)
    return json.loads(p.stdout)


class HistoryCompareSamplesTest(DaemonTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a, cls.b = [], []
        for size, ids in (("4M", cls.a), ("8M", cls.b)):
            for _ in range(RUNS):
                r = cls.d.request("POST", "/v1/probes/touch", {"size": size})
                assert r.status == 202, r.raw
                ids.append(wait_job(cls.d, r.json["id"])["operation_id"])

    def figures(self, ids, metric):
        """Each run's figure of metric, as the one-run-per-column compare shows it."""
        out = []
        for i in range(0, len(ids), 8):
            chunk = ids[i:i + 8] + ([ids[0]] if len(ids[i:i + 8]) == 1 else [])
            r = self.d.get("/v1/history/compare?ids=" + ",".join(map(str, chunk)))
            self.assertEqual(r.status, 200, r.raw)
            row = next(x for x in r.json["rows"] if x["metric"] == metric)
            out += row["values"][:len(ids[i:i + 8])]
        return out

    def grouped(self):
        q = ":".join(map(str, self.a)) + "," + ":".join(map(str, self.b))
        r = self.d.get("/v1/history/compare?ids=" + q)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def test_columns_of_runs_are_samples_with_interval_and_verdict(self):
        j = self.grouped()
        self.assertEqual([c["ids"] for c in j["columns"]], [self.a, self.b])
        self.assertEqual([r["id"] for r in j["runs"]], self.a + self.b)
        rows = {x["metric"]: x for x in j["rows"]}
        # twice the size, twice the pages in every run: a certain +100 %, its interval [100, 100]
        pages = rows["pages"]
        self.assertEqual(pages["n"], [RUNS, RUNS])
        self.assertEqual(pages["means"], pages["values"])   # every run the same pages
        self.assertEqual(pages["change_pct"], [None, 100.0])
        self.assertEqual(pages["ci95_pct"], [None, [100.0, 100.0]])
        self.assertEqual(pages["different"], [None, True])
        cmp = {c["metric"]: c for c in j["comparisons"]}
        self.assertEqual(cmp["pages"]["baseline"], ":".join(map(str, self.a)))
        self.assertEqual(cmp["pages"]["verdict"], "Difference at 95% confidence: +100.0 % \u00b1 0.0 %")
        self.assertFalse(cmp["pages"]["unreliable"])
        v = Validator(load_spec())
        v.check(j, load_spec()["paths"]["/v1/history/compare"]["get"]["responses"]["200"]["content"]["application/json"]["schema"])
        for c in j["comparisons"]:
            self.assertEqual(set(c), {"metric", "baseline", "arm", "n", "median_diff_pct", "ci95_pct", "mean_diff_pct",
                                      "welch_ci95_pct", "p_value", "p_exact", "different", "unreliable", "verdict"})

    def test_agrees_with_scipy_on_the_runs_figures(self):
        j = self.grouped()
        cmp = {c["metric"]: c for c in j["comparisons"]}
        checked = 0
        for metric in ("mib_per_s", "duration_ms", "pages"):
            if metric not in cmp:
                continue
            base, arm = self.figures(self.a, metric), self.figures(self.b, metric)
            s = scipy_view(base, arm)
            c = cmp[metric]
            with self.subTest(metric=metric):
                self.assertEqual(c["p_exact"], s["method"] == "exact")
                self.assertTrue(math.isclose(c["p_value"], s["p"], rel_tol=1e-9, abs_tol=1e-15), (c, s))
                # the exact interval at 9 and 9: the 18th smallest and largest of the 81 differences
                # (P(U <= 17) = 0.0200 <= 0.025 < P(U <= 18)) when there are no ties
                if s["method"] == "exact":
                    d, mb = s["d"], abs(s["median_b"])
                    self.assertAlmostEqual(c["ci95_pct"][0], d[17] / mb * 100, places=9)
                    self.assertAlmostEqual(c["ci95_pct"][1], d[81 - 18] / mb * 100, places=9)
                checked += 1
        self.assertGreaterEqual(checked, 2, cmp.keys())

    def test_cli_prints_the_interval_beside_each_change(self):
        p = self.d.ctl("history", "compare", ":".join(map(str, self.a)), ":".join(map(str, self.b)))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^pages\s+\d+\s+\d+ \(\+100\.00% \[\+100\.00, \+100\.00\]\) \*$")
        self.assertIn("[lo, hi]: the 95% interval of the difference of medians", p.stdout)
        self.assertNotIn("unreliable", p.stdout)
        # fewer than 9 runs a column: said so
        p = self.d.ctl("history", "compare", ":".join(map(str, self.a[:3])), ":".join(map(str, self.b[:3])))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("unreliable: a column has fewer than 9 runs", p.stdout)
        j = json.loads(self.d.ctl("--json", "history", "compare", "%d:%d" % tuple(self.a[:2]), str(self.b[0])).stdout)
        self.assertEqual([c["ids"] for c in j["columns"]], [self.a[:2], self.b[:1]])

    def test_one_run_a_column_is_todays_table(self):
        r = self.d.get("/v1/history/compare?ids=%d,%d" % (self.a[0], self.b[0]))
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(set(r.json), {"runs", "rows"})
        self.assertEqual(set(r.json["rows"][0]), {"metric", "values", "change_pct"})

    def test_bad_columns_are_refused(self):
        a, b = self.a[0], self.b[0]
        for q in ["%d:%d,%d" % (a, a, b), "%d,%d:%d" % (a, b, a), "%d:,%d" % (a, b), ":%d,%d" % (a, b),
                  "%d::%d,%d" % (a, b, b + 100), "%d:%d" % (a, b), ",".join(map(str, range(1, 18))),
                  ":".join(map(str, range(1, 257))) + ",999", "%d:x,%d" % (a, b)]:
            with self.subTest(q=q[:40]):
                self.assertProblem(self.d.get("/v1/history/compare?ids=" + q), 400, "request.bad_query")
        self.assertProblem(self.d.get("/v1/history/compare?ids=%d:999999,%d" % (a, b)), 404, "history.not_found")
        for args in (["%d:" % a, str(b)], ["%d:0" % a, str(b)], ["%d::%d" % (a, b), str(b)]):
            with self.subTest(args=args):
                p = self.d.ctl("history", "compare", *args)
                self.assertEqual(p.returncode, 2, (p.stdout, p.stderr))


class ResizeP95IntervalTest(DaemonTest):
    """A resize's per-page latency p95 carries mmtests' distribution-free 95 % interval from its
    batches (at least 72 of them), checked against SciPy's binomial on the batches table."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2))

    def resize(self, pages):
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": pages}, "batch": 1})
        self.assertEqual(r.status, 202, r.raw)
        job = wait_pool_job(self.d, r.json["id"])
        self.assertEqual(job["status"], "ok", job)
        return job["operation_id"]

    def test_p95_interval_of_each_run(self):
        small, big = self.resize(40), self.resize(140)   # 40 batches, then 100
        r = self.d.get("/v1/history/compare?ids=%d,%d" % (small, big))
        self.assertEqual(r.status, 200, r.raw)
        v = Validator(load_spec())
        v.check(r.json, load_spec()["paths"]["/v1/history/compare"]["get"]["responses"]["200"]["content"]["application/json"]["schema"])
        row = next(x for x in r.json["rows"] if x["metric"] == "latency_ns.p95")
        lat = [x for (x,) in self.d.sql("SELECT latency_ns FROM batches WHERE op_id = ? ORDER BY latency_ns", (big,))]
        self.assertEqual(len(lat), 100)
        prog = ("import json, sys; import scipy.stats as ss; n = int(sys.argv[1]); B = ss.binom(n, 0.95); "
                "print(json.dumps([max(l for l in range(1, n + 1) if B.cdf(l - 1) <= 0.025), "
                "min(u for u in range(1, n + 1) if B.sf(u - 1) <= 0.025)]))")
        l, u = json.loads(subprocess.run(["/usr/bin/python3", "-c", prog, "100"], capture_output=True, text=True,
                                         check=True).stdout)
        self.assertEqual(row["values"][1], lat[95 - 1])
        self.assertEqual(row["value_ci95"], [None, [lat[l - 1], lat[u - 1]]])   # 40 batches: too few
        p = self.d.ctl("history", "compare", str(small), str(big))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^latency_ns\.p95\s+\S+\s+\S+ \[\S+, \S+\]")
