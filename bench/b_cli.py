"""Benchmark 3: wall time of `mempolicyctl status` (process start, connect, GET /v1/health and more,
print) beside `numactl --hardware` (process start, libnuma, sysfs reads, print)."""
import os
import shutil
import subprocess
import time

import benchlib as bl

GOAL_RATIO = 3.0   # issue 12, item 8: status within 3x numactl --hardware


def _wall(cmd, env):
    t0 = time.perf_counter_ns()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    return (time.perf_counter_ns() - t0) / 1e6, p


def run(ctx):
    title = "mempolicyctl status wall time"
    numactl = shutil.which("numactl")
    if not numactl:
        return [bl.unavailable("cli.status", title, "numactl is not installed")]
    d = None
    try:
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("cli"), tcp=False).start()
        env = dict(os.environ, MEMPOLICYD_SOCKET=d.socket)
        ctl = [os.path.join(ctx.bin_dir, "mempolicyctl"), "--socket", d.socket, "status"]
        ref = [numactl, "--hardware"]
        _, p = _wall(ctl, env)
        if p.returncode != 0:
            return [bl.unavailable("cli.status", title, "`mempolicyctl status` exits %d: %s"
                                   % (p.returncode, p.stderr.decode("utf-8", "replace").strip()[:160]))]
        _, p = _wall(ref, env)
        if p.returncode != 0:
            return [bl.unavailable("cli.status", title, "`numactl --hardware` exits %d" % p.returncode)]
        # --help does no I/O with the daemon: what is left is process start-up and dynamic linking,
        # so it splits the status time in two (the socket's libcurl is linked in: bench/README.md).
        helpcmd = [ctl[0], "--help"]
        ds, ns, hs = [], [], []
        for _ in range(ctx.cli_runs):
            ds.append(_wall(ctl, env)[0])
            ns.append(_wall(ref, env)[0])
            hs.append(_wall(helpcmd, env)[0])
        method = ("fork+exec+wait timed with perf_counter around subprocess.run, stdout to /dev/null, the "
                  "commands alternating, median of %d runs each, daemon on a Unix socket in a temporary "
                  "directory" % ctx.cli_runs)
        return [bl.row("cli.status", title, "ms", ds, ns, "numactl --hardware", method=method,
                       goal="<= %gx numactl" % GOAL_RATIO, goal_check=lambda _m, r: r is not None and r <= GOAL_RATIO),
                bl.row("cli.help", "mempolicyctl --help wall time (start-up only)", "ms", hs, ns,
                       "numactl --hardware", method=method)]
    except bl.BenchError as e:
        return [bl.unavailable("cli.status", title, str(e))]
    finally:
        if d:
            d.stop()
