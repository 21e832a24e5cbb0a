"""Benchmark: launch overhead. `mempolicyctl run --membind 0 -- true` (client start, POST
/v1/processes/self: the daemon's validation and one history insert, the answer; then the client's
own set_mempolicy and exec of true, as numactl's) beside `numactl --membind 0 true` (start,
set_mempolicy, exec true). Both are waited for until true exits."""
import os
import shutil
import subprocess
import time

import benchlib as bl


def _wall(cmd, env):
    t0 = time.perf_counter_ns()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    return (time.perf_counter_ns() - t0) / 1e6, p


def run(ctx):
    title = "launch under bind:0: mempolicyctl run wall time"
    numactl = shutil.which("numactl")
    if not numactl:
        return [bl.unavailable("launch.run", title, "numactl is not installed")]
    d = None
    try:
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("launch"), tcp=False).start()
        env = dict(os.environ, MEMPOLICYD_SOCKET=d.socket)
        ctl = [os.path.join(ctx.bin_dir, "mempolicyctl"), "--socket", d.socket, "run", "--membind", "0", "--",
               "true"]
        ref = [numactl, "--membind", "0", "true"]
        for cmd in (ctl, ref):
            _, p = _wall(cmd, env)
            if p.returncode != 0:
                return [bl.unavailable("launch.run", title, "`%s` exits %d: %s" % (
                    " ".join(cmd[-5:]), p.returncode, p.stderr.decode("utf-8", "replace").strip()[:160]))]
        ds, ns = [], []
        for _ in range(ctx.launch_runs):
            ds.append(_wall(ctl, env)[0])
            ns.append(_wall(ref, env)[0])
        method = ("fork+exec+wait of each command timed with perf_counter around subprocess.run, "
                  "alternating, median of %d runs each; `run` execs `true` itself after one request, as "
                  "numactl does; the daemon records a process.launch per run in a database on the same disk" % ctx.launch_runs)
        return [bl.row("launch.run", title, "ms", ds, ns, "numactl --membind 0 true", goal="<= 1.3x numactl",
                       goal_check=lambda _d, r: r is not None and r <= 1.3, method=method)]
    except bl.BenchError as e:
        return [bl.unavailable("launch.run", title, str(e))]
    finally:
        if d:
            d.stop()
