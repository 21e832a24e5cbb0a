"""Benchmark 15: the statistics of an experiment (common/stats, issue 20) over 10,000 samples per
arm: stats_compare (summaries, the difference of medians with its Hodges-Lehmann interval — four
selections among the 10^8 pairwise differences, none formed —, the U test, Welch) and
stats_p95_ci, timed in a small C program built here from common/ with -O2 (bench/stats_bench.c).
Reference: SciPy's mannwhitneyu (asymptotic) plus ttest_ind on the same samples, timed inside one
Python process — what a script would do, without any interval of the medians (forming the 10^8
differences for one would take 800 MB). Goal: stats_compare under 50 ms."""
import json
import os
import subprocess

import benchlib as bl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
N = 10000
ROUNDS = 15
GOAL_MS = 50.0
# stats_hl.c holds the pairwise differences stats_compare calls since it was split out of stats.c;
# without it the row read "not available" (a link error) from then on.
SOURCES = ("bench/stats_bench.c", "common/stats.c", "common/stats_dist.c", "common/stats_hl.c", "common/mmstats.c")

SCIPY = r"""
import json, sys, time
import numpy as np, scipy.stats as ss
n, rounds = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(20261201)
b, a = rng.normal(100, 15, n), rng.normal(105, 15, n)
out = []
for r in range(rounds + 1):
    t0 = time.perf_counter()
    ss.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    ss.ttest_ind(a, b, equal_var=False)
    if r:
        out.append((time.perf_counter() - t0) * 1e3)
print(json.dumps(out))
"""


def build(workdir):
    exe = os.path.join(workdir, "stats_bench")
    p = subprocess.run(["cc", "-O2", "-std=gnu11", "-D_GNU_SOURCE", "-I", ROOT, "-o", exe] +
                       [os.path.join(ROOT, s) for s in SOURCES] + ["-lm"], capture_output=True, text=True)
    if p.returncode != 0:
        raise bl.BenchError("building stats_bench failed: %s" % p.stderr[-300:])
    return exe


def run(ctx):
    title = "stats_compare, %s samples per arm" % "{:,}".format(N)
    try:
        exe = build(ctx.workdir_for("statistics"))
        p = subprocess.run([exe, str(N), str(ROUNDS)], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise bl.BenchError("stats_bench exited %d: %s" % (p.returncode, p.stderr[-300:]))
        got = json.loads(p.stdout)
    except (bl.BenchError, ValueError, subprocess.TimeoutExpired) as e:
        return [bl.unavailable("statistics.compare_10k", title, str(e))]
    ref, ref_name = None, None
    s = subprocess.run(["/usr/bin/python3", "-c", SCIPY, str(N), str(ROUNDS)], capture_output=True, text=True)
    if s.returncode == 0:
        ref, ref_name = json.loads(s.stdout), "scipy mannwhitneyu+ttest_ind, no interval"
    method = ("%d rounds after one untimed, CLOCK_MONOTONIC around each call, in one process; two normal "
              "arms (100 and 105, sd 15), seed 20261201; U test asymptotic at this size" % ROUNDS)
    rows = [bl.row("statistics.compare_10k", title, "ms", got["compare_ms"], ref, ref_name, goal="< %g ms" % GOAL_MS,
                   goal_check=lambda d, r: d < GOAL_MS, method=method,
                   extra={"verdict": got["verdict"], "p_exact": got["p_exact"]}),
            bl.row("statistics.p95_10k", "stats_p95_ci, %s samples" % "{:,}".format(N), "ms", got["p95_ms"],
                   method=method, extra={"p95": got["p95"]})]
    return rows
