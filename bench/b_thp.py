"""Benchmark 10: fidelity of the thp-fault probe. The kernel's own transhuge-stress (built at bench
time from Debian's linux-source-6.1 package: tools/testing/selftests/vm/transhuge-stress.c, not
committed here) and the thp-fault probe (POST /v1/probes/thp-fault, a job whose child runs the same
loop) fault the same region size, alternating, each for the same number of seconds per round.

Both print MiB/s per pass (region / pass wall time, the selftest's own definition). A round's figure
is the median of its passes, the first pass of each run left out (it meets cold memory in both: a
pass on fresh frames is several times slower than one on frames the last pass just freed). The
goal: the probe's median within 10 % of the selftest's, i.e. the probe measures the kernel, not
its own overhead (its kpageflags read and move_pages query per chunk, the job plumbing).

THP must be `madvise` or `always` (both programs need it); nothing is changed."""
import glob
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time

import benchlib as bl

TARBALL = "/usr/src/linux-source-6.1.tar.xz"
MEMBERS = ("tools/testing/selftests/vm/transhuge-stress.c", "tools/testing/selftests/vm/util.h")
LINE = re.compile(r"([0-9.]+) s/loop, ([0-9.]+) ms/page, +([0-9.]+) MiB/s")
GOAL = "0.90 <= ratio <= 1.10"


def build_selftest(workdir):
    """Extracts the selftest's two files from the kernel source tarball and builds them; returns
    the binary's path."""
    tarballs = sorted(glob.glob("/usr/src/linux-source-6.1*.tar.xz"))
    if not tarballs:
        raise bl.BenchError("%s missing (apt-get install linux-source-6.1; make bench does)" % TARBALL)
    src = os.path.join(workdir, "src")
    os.makedirs(src, exist_ok=True)
    with tarfile.open(tarballs[-1]) as tf:
        top = tf.next().name.split("/")[0]
        for m in MEMBERS:
            f = tf.extractfile(top + "/" + m)
            if f is None:
                raise bl.BenchError("%s has no %s" % (tarballs[-1], m))
            with open(os.path.join(src, os.path.basename(m)), "wb") as out:
                shutil.copyfileobj(f, out)
    exe = os.path.join(workdir, "transhuge-stress")
    p = subprocess.run(["cc", "-O2", "-o", exe, os.path.join(src, "transhuge-stress.c")],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise bl.BenchError("building transhuge-stress failed: %s" % p.stderr[-300:])
    return exe


def run_selftest(exe, size_mib, seconds):
    """MiB/s of every pass of one run of `seconds` (the 6.1 selftest loops until killed)."""
    p = subprocess.Popen([exe, str(size_mib)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    p.send_signal(signal.SIGKILL)
    _, err = p.communicate()
    return [float(m.group(3)) for m in LINE.finditer(err)]


def run_probe(d, size_mib, seconds):
    """MiB/s of every pass of one thp-fault probe of `seconds`."""
    st, hdrs, raw, body = d.request("POST", "/v1/probes/thp-fault",
                                    {"size": size_mib << 20, "duration_s": seconds})
    if st != 202 or not isinstance(body, dict):
        raise bl.BenchError("POST /v1/probes/thp-fault answered " + bl.describe(st, raw))
    loc = hdrs.get("location") or "/v1/jobs/%s" % body.get("id")
    deadline = time.monotonic() + seconds + 60
    while True:
        st, _, raw, job = d.request("GET", loc)
        if st != 200:
            raise bl.BenchError("GET %s answered %d" % (loc, st))
        if job.get("status") not in ("queued", "running"):
            break
        if time.monotonic() > deadline:
            raise bl.BenchError("the probe job did not end")
        time.sleep(0.05)
    if job.get("status") != "ok":
        raise bl.BenchError("the probe job ended %s: %s" % (job.get("status"), job.get("error")))
    return [p["mib_s"] for p in probe_result(job)["passes"]]


def probe_result(job):
    """The workload's result in a finished job: the one pass's result."""
    res = job.get("result") or {}
    passes = res.get("passes")
    if isinstance(passes, list) and passes and isinstance(passes[0], dict) and "result" in passes[0]:
        return passes[0]["result"]
    return res


def _thp_usable():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            sel = re.search(r"\[(\w+)\]", f.read()).group(1)
    except (OSError, AttributeError):
        return "THP is not available"
    return None if sel in ("always", "madvise") else "thp.enabled is %s" % sel


def run(ctx):
    title = "thp-fault probe vs transhuge-stress, MiB/s"
    why = _thp_usable()
    if why:
        return [bl.unavailable("thp_fidelity", title, why)]
    if os.geteuid() != 0:
        return [bl.unavailable("thp_fidelity", title, "needs root (pagemap PFNs)")]
    work = ctx.workdir_for("thp")
    d = None
    try:
        exe = build_selftest(work)
        d = bl.Daemon(ctx.bin_dir, work, tcp=False).start()
        ours, theirs = [], []
        for _ in range(ctx.thp_rounds):
            t = run_selftest(exe, ctx.thp_size_mib, ctx.thp_seconds)[1:]
            o = run_probe(d, ctx.thp_size_mib, ctx.thp_seconds)[1:]
            if not t or not o:
                raise bl.BenchError("a round gave no passes (selftest %d, probe %d)" % (len(t), len(o)))
            theirs.append(bl.median(t))
            ours.append(bl.median(o))
    except bl.BenchError as e:
        return [bl.unavailable("thp_fidelity", title, str(e))]
    finally:
        if d:
            d.stop()
    return [bl.row("thp_fidelity", title, "MiB/s", ours, theirs, "transhuge-stress", better="higher", goal=GOAL,
                   goal_check=lambda _d, r: r is not None and 0.90 <= r <= 1.10,
                   method="%d rounds alternating selftest, probe; %d MiB region, %d s each; per round the "
                          "median MiB/s of the passes after the first" % (ctx.thp_rounds, ctx.thp_size_mib,
                                                                          ctx.thp_seconds))]
