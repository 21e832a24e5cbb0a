"""Benchmark 4: resize overhead. Grow the real 2 MiB hugetlb pool by the same number of pages in the
same batches through mempolicyd (PUT /v1/hugepages/2M, a job) and by raw writes to nr_hugepages
(write the batch target, read the count back), alternating, and compare the per-page latency.

The pool is shared with the other people on this machine: everything here runs under
flock /tmp/mpd-pool.lock, and the original size is restored after every grow and in a finally
(Ctrl-C and SIGTERM included)."""
import fcntl
import os
import pwd
import signal
import time

import benchlib as bl

NR = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
LOCK = "/tmp/mpd-pool.lock"
LOCK_WAIT_S = 600
GOAL = "ratio <= 1.05"
WAIT_S = 10                   # GET /v1/jobs/ID?wait=: held by the daemon until the job ends, no request among the batches
PRIVSEP_USER = "mempolicyd"   # the daemon's --user: its resize steps are written and timed by the helper


def _read():
    with open(NR) as f:
        return int(f.read())


def _write(n):
    fd = os.open(NR, os.O_WRONLY)
    try:
        os.write(fd, b"%d\n" % n)
    finally:
        os.close(fd)


def restore(orig):
    """Puts the pool back to orig pages; True when the kernel reads orig back."""
    for _ in range(5):
        try:
            _write(orig)
        except OSError:
            pass
        if _read() == orig:
            return True
        time.sleep(0.2)
    return False


def raw_grow(orig, pages, batch, reopen=False):
    """mmtests-style batches by raw sysfs writes: write cur+batch, read back. Returns
    ([(asked, got, ns)], wall_ns). By default one pwrite + one pread per batch on kept file
    descriptors, the least any writer can do; with reopen, open/write/close then open/read/close
    each time, as a program that opens the file by name for every batch does."""
    wfd = rfd = -1
    if not reopen:
        wfd = os.open(NR, os.O_WRONLY)
        rfd = os.open(NR, os.O_RDONLY)
    batches = []
    try:
        cur, goal = orig, orig + pages
        t_start = time.perf_counter_ns()
        while cur < goal:
            target = min(cur + batch, goal)
            t0 = time.perf_counter_ns()
            if reopen:
                fd = os.open(NR, os.O_WRONLY)
                try:
                    os.write(fd, b"%d" % target)
                finally:
                    os.close(fd)
                fd = os.open(NR, os.O_RDONLY)
                try:
                    new = int(os.read(fd, 32))
                finally:
                    os.close(fd)
            else:
                os.pwrite(wfd, b"%d" % target, 0)
                new = int(os.pread(rfd, 32, 0))
            t1 = time.perf_counter_ns()
            batches.append((target - cur, new - cur, t1 - t0))
            if new <= cur:
                break
            cur = new
        wall = time.perf_counter_ns() - t_start
    finally:
        if not reopen:
            os.close(wfd)
            os.close(rfd)
    return batches, wall


def _per_page_ns(batches):
    got = sum(b[1] for b in batches)
    return sum(b[2] for b in batches) / got if got > 0 else None


class DaemonPool:
    """Resizes through the daemon's API; remembers the running job so that it can be cancelled."""

    def __init__(self, d):
        self.d = d
        self.conn = d.connection()
        self.job = None
        self.conflict_retries = 0

    def grow(self, orig, pages, batch):
        """Returns (batches [(asked, got, ns)], job elapsed ns, client wall ns, job json)."""
        for _ in range(200):
            t0 = time.time_ns()   # the daemon stamps finished_ns with the same clock (CLOCK_REALTIME)
            st, hdrs, raw, body = bl.http_call(self.conn, "PUT", "/v1/hugepages/2M",
                                               {"total": orig + pages, "batch": batch})
            if st != 409:
                break
            # The previous job already reads finished but the runner has not yet released its
            # conflict key (a short race in the daemon): retry, count it, keep it out of the timing.
            self.conflict_retries += 1
            time.sleep(0.01)
        if st != 202 or not isinstance(body, dict):
            raise bl.BenchError("PUT /v1/hugepages/2M answered %d: %s" % (st, raw[:200]))
        self.job = hdrs.get("location") or "/v1/jobs/%s" % body.get("id")
        while True:
            # One request, held by the daemon until the job ends (?wait=): none is served among
            # the measured batches, which the raw writer never has beside it (polls every 2 ms
            # added 3-7 % per page here). The wall time below does not depend on when it returns.
            st, _, raw, job = bl.http_call(self.conn, "GET", "%s?wait=%d" % (self.job, WAIT_S))
            if st != 200:
                raise bl.BenchError("GET %s answered %d: %s" % (self.job, st, raw[:200]))
            if job.get("status") not in ("queued", "running"):
                break
        fin = job.get("finished_ns")
        if not isinstance(fin, int):
            raise bl.BenchError("the finished job has no finished_ns: %s" % str(job)[:200])
        wall = fin - t0
        self.job = None
        if job.get("status") not in ("ok", "partial"):
            raise bl.BenchError("resize job ended %s: %s" % (job.get("status"), job.get("error")))
        return _job_batches(job), _job_elapsed(job), wall, job

    def cancel(self):
        if self.job:
            try:
                self.d.request("DELETE", self.job)
                for _ in range(100):
                    if self.d.request("GET", self.job)[3].get("status") not in ("queued", "running"):
                        break
                    time.sleep(0.05)
            except (OSError, AttributeError):
                pass
        self.conn.close()


def _job_batches(job):
    """The job's own measurement: per target, the sum of its batches' write + read-back time
    (result.targets[].elapsed_ns, CLOCK_MONOTONIC in the daemon) and the pages gained."""
    res = job.get("result")
    ts = res.get("targets") if isinstance(res, dict) else None
    if not ts:
        raise bl.BenchError("the job has no result.targets: %s" % str(res)[:200])
    return [(t.get("asked", 0), t.get("got", 0), t.get("elapsed_ns", 0)) for t in ts]


def _job_elapsed(job):
    """The whole resize operation as the daemon timed it (result.elapsed_ns: reading the pool and
    vmstat, every batch, recording the batches, re-reading the pool)."""
    res = job.get("result")
    v = res.get("elapsed_ns") if isinstance(res, dict) else None
    return v if isinstance(v, int) else None


def _lock():
    f = open(LOCK, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("bench: waiting for %s (another pool user)" % LOCK, flush=True)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    f.close()
                    raise bl.BenchError("%s still held after %ds" % (LOCK, LOCK_WAIT_S))
                time.sleep(0.5)
    return f


def run(ctx):
    title = "2 MiB pool grow, per-page latency"
    if not os.path.exists(NR):
        return [bl.unavailable("pool", title, "%s does not exist" % NR)]
    if os.geteuid() != 0:
        return [bl.unavailable("pool", title, "needs root to write nr_hugepages")]
    lockf = _lock()
    d = dp = ds = dps = None
    orig = _read()
    rows = []
    try:
        # The in-process reference: one root process, no helper (--user root).
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("pool"), tcp=False, args=["--user", "root"]).start()
        st, _, raw, _ = d.request("GET", "/v1/hugepages/2M")
        why = None if st == 200 else "GET /v1/hugepages/2M answers " + bl.describe(st, raw)
        dp = DaemonPool(d) if why is None else None
        ds, why_ps = _privsep_daemon(ctx)
        dps = DaemonPool(ds) if ds else None
        for batch in ctx.pool_batches:
            rows += _one_batch_size(ctx, orig, batch, dp, why, dps, why_ps)
    except bl.BenchError as e:
        rows.append(bl.unavailable("pool", title, str(e)))
    finally:
        # A second Ctrl-C must not cut the restore short: hold the signals until the pool is back.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            for p in (dp, dps):
                if p:
                    p.cancel()
            for x in (d, ds):
                if x:
                    x.stop()
            ok = restore(orig)
            lockf.close()
            if not ok:
                print("bench: WARNING: could not restore %s to %d (reads %d)" % (NR, orig, _read()), flush=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return rows


def _privsep_daemon(ctx):
    """A second daemon with privilege separation (--user): (Daemon, None) or (None, why not)."""
    try:
        pw = pwd.getpwnam(PRIVSEP_USER)
    except KeyError:
        return None, "no user %s (make test creates it)" % PRIVSEP_USER
    wd = ctx.workdir_for("pool-privsep")
    os.chown(wd, pw.pw_uid, pw.pw_gid)   # the database's directory is the user's (server/statedir.h)
    try:
        return bl.Daemon(ctx.bin_dir, wd, tcp=False, args=["--user", PRIVSEP_USER]).start(), None
    except bl.BenchError as e:
        return None, str(e)


def _one_batch_size(ctx, orig, batch, dp, why, dps=None, why_ps="not started"):
    pages = ctx.pool_pages
    raw_pp, raw_wall, reopen_pp, d_pp, d_job, d_wall, got = [], [], [], [], [], [], []
    ps_pp = []
    methods = ("raw", "mempolicyd", "raw-reopen", "privsep")
    for rnd in range(ctx.pool_rounds):
        # The order rotates every round, so that no method always inherits another's freshly freed
        # pages (or a cold cache).
        k = rnd % len(methods)
        for method in methods[k:] + methods[:k]:
            if method == "raw-reopen":
                bs, _ = raw_grow(orig, pages, batch, reopen=True)
                restore_or_fail(orig)
                n = sum(b[1] for b in bs)
                if not n:
                    raise bl.BenchError("raw writes gained no page (memory?)")
                reopen_pp.append(_per_page_ns(bs) / 1e3)
            elif method == "raw":
                bs, wall = raw_grow(orig, pages, batch)
                restore_or_fail(orig)
                n = sum(b[1] for b in bs)
                if not n:
                    raise bl.BenchError("raw writes gained no page (memory?)")
                raw_pp.append(_per_page_ns(bs) / 1e3)
                raw_wall.append(wall / n / 1e3)
            elif method == "privsep":
                if dps is None:
                    continue
                try:
                    bs, _, _, _ = dps.grow(orig, pages, batch)
                finally:
                    restore_or_fail(orig)
                n = sum(b[1] for b in bs)
                if not n:
                    raise bl.BenchError("the resize job through the helper gained no page")
                ps_pp.append(_per_page_ns(bs) / 1e3)
            elif dp is not None:
                try:
                    bs, job_ns, wall, _ = dp.grow(orig, pages, batch)
                finally:
                    restore_or_fail(orig)
                n = sum(b[1] for b in bs)
                if not n:
                    raise bl.BenchError("the resize job gained no page")
                d_pp.append(_per_page_ns(bs) / 1e3)
                if job_ns is not None:
                    d_job.append(job_ns / n / 1e3)
                d_wall.append(wall / n / 1e3)
            else:
                continue
            got.append((method, n))
    base = "pool.b%d" % batch
    t = "grow +%d x 2M, batch %d" % (pages, batch)
    common = ("%d rounds of raw, mempolicyd, raw-reopen and mempolicyd --user in a rotating order, pool "
              "restored to %d after each grow, under flock %s; " % (ctx.pool_rounds, orig, LOCK))
    check = (lambda _d, r: r is not None and r <= 1.05)
    if dps is None:
        ps_rows = [bl.unavailable(base + ".privsep", t + " through the privileged helper", why_ps)]
    else:
        ps_rows = [bl.row(base + ".privsep", t + ": per-page latency through the privileged helper", "us", ps_pp,
                          raw_pp, "raw sysfs", goal=GOAL, goal_check=check,
                          method=common + "mempolicyd --user %s: the job's result.targets as in the batches row; "
                                          "each batch's write + read-back is done and timed by the helper "
                                          "(server/priv/helper.c), back to back in runs of up to 32 "
                                          "batches; the socket round trip is outside it; "
                                          "raw: perf_counter around pwrite + pread" % PRIVSEP_USER)]
    if dp is None:
        return [bl.row(base + ".raw", t + ": raw per-page latency", "us", raw_pp,
                       method=common + "raw: sum of (write+read back) time / pages gained"),
                bl.unavailable(base, t + " through mempolicyd", why)] + ps_rows
    rows = [bl.row(base + ".batches", t + ": per-page latency from the batches", "us", d_pp, raw_pp, "raw sysfs",
                   goal=GOAL, goal_check=check,
                   method=common + "sum of per-batch elapsed / pages gained; mempolicyd: the job's result.targets "
                                   "(elapsed_ns = sum of its batches' write + read-back, got); raw: "
                                   "perf_counter around pwrite + pread",
                   extra={"pages_gained": got}),
            bl.row(base + ".batches_reopen", t + ": the same vs raw reopening the file per write", "us", d_pp,
                   reopen_pp, "raw, reopen", method=common + "as the batches row, but the raw writer opens and "
                   "closes nr_hugepages for every write and every read back: how much of the gap is the "
                   "open/close of the file"),
            bl.row(base + ".wall", t + ": per-page client wall time", "us", d_wall, raw_wall, "raw sysfs",
                   method=common + "mempolicyd: PUT sent (client CLOCK_REALTIME) -> the job's finished_ns "
                                   "(the daemon's CLOCK_REALTIME, same host) / pages, so no polling slack "
                                   "(the job is waited for with ?wait=, no polls); raw: first write -> last read",
                   extra={"conflict_retries": dp.conflict_retries})]
    rows[1:1] = ps_rows
    if d_job:
        # The goal is judged on the batches row; this one and the wall row add the fixed cost of
        # a job (pool and vmstat reads, recording, HTTP) and are shown so it stays visible.
        rows.insert(2, bl.row(base + ".job", t + ": per-page job run time", "us", d_job, raw_wall,
                              "raw sysfs",
                              method=common + "mempolicyd: the job's result.elapsed_ns (the whole operation, daemon "
                                              "monotonic clock) / pages; "
                                              "raw: first write -> last read / pages"))
    return rows


def restore_or_fail(orig):
    if not restore(orig):
        raise bl.BenchError("cannot restore the pool to %d pages (reads %d)" % (orig, _read()))
