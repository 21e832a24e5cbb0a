"""Benchmark 15: verification without polling (issue 18). Two daemons on private sockets and
databases against the real kernel; one has a profile of 20 managed keys applied (every key at the
value the kernel has now, so the apply writes nothing), the other none.
  drift.idle     the CPU both use (serving side and helper, utime + stime) over the same window
                 with nothing changing: the watcher's cost is its fanotify group and slow timer.
  drift.latency  a foreign write to a managed knob (this process, os.write, as a shell would)
                 until its profile.drift row is committed (the row's count moves; read from the
                 database in a 1 ms loop); the key's policy is restore, so each round starts in sync."""
import json
import os
import sqlite3
import time

import benchlib as bl

SLEEP = "/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs"
METHOD_IDLE = ("utime + stime of the daemon and its helper (/proc/PID/stat) over {s} s, both daemons idle in the "
               "same window; the profile: 20 keys (knobs and 2M pools at their current values, the pools on the "
               "{check} s timer); percent of one core")
METHOD_LAT = ("os.write of a value out of the profile to {f}, until the drift row's count moved in the database "
              "(polled every 1 ms on a read-only connection); restore puts it back, and the value is back before "
              "the next round; {n} rounds after {warm} unmeasured")


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _cpu_ticks(pid):
    total = 0
    for p in [pid] + bl.children(pid):
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])   # utime, stime (fields 14 and 15)
        except (OSError, IndexError, ValueError):
            pass
    return total


def _profile(ref):
    """20 keys at the kernel's values now: knobs (alloc_sleep_millisecs first), then 2M pools."""
    st, _, _, knobs = bl.http_call(ref.connection(), "GET", "/v1/knobs")
    if st != 200:
        raise bl.BenchError("GET /v1/knobs: %d" % st)
    lines, n = ["[profile]", "on-drift = report", "[knobs]"], 0
    avail = [k for k in knobs["knobs"] if k["available"] and k["writable"]]
    avail.sort(key=lambda k: k["name"] != "thp.khugepaged.alloc_sleep_millisecs")
    for k in avail[:18]:
        opt = " ; on-drift = restore" if k["name"] == "thp.khugepaged.alloc_sleep_millisecs" else ""
        lines.append("%s = %s%s" % (k["name"], k["value"], opt))
        n += 1
    st, _, _, pools = bl.http_call(ref.connection(), "GET", "/v1/hugepages")
    p2m = [p for p in (pools or {}).get("pools", []) if p.get("size") == "2M"]
    if p2m and n < 20:
        lines.append("[hugepages.2M]")
        lines.append("total = %d" % p2m[0]["nr"])
        n += 1
        for node in p2m[0].get("nodes", [])[:20 - n]:
            lines.append("node%d = %d" % (node["node"], node["nr"]))
            n += 1
    if n < 20:
        raise bl.BenchError("this kernel has %d keys a profile can manage here, not 20" % n)
    return "\n".join(lines) + "\n", n


def _apply(d, name):
    st, _, raw, body = bl.http_call(d.connection(), "POST", "/v1/profile", {"name": name})
    if st != 202:
        raise bl.BenchError("POST /v1/profile: %s" % bl.describe(st, raw))
    for _ in range(20):
        st, _, _, job = bl.http_call(d.connection(), "GET", "/v1/jobs/%d?wait=30" % body["id"])
        if job.get("status") not in ("queued", "running"):
            if job.get("status") != "ok":
                raise bl.BenchError("the profile.apply job ended %s" % job.get("status"))
            return
    raise bl.BenchError("the profile.apply job did not end")


def _count(db):
    r = db.execute("SELECT id, json_extract(result, '$.count') FROM operations WHERE kind = 'profile.drift' "
                   "ORDER BY id DESC LIMIT 1").fetchone()
    return tuple(r) if r else (0, 0)


def _latency(d, orig, n, warm):
    db = sqlite3.connect("file:%s?mode=ro" % d.db, uri=True, timeout=30)
    out = []
    try:
        for i in range(warm + n):
            before = _count(db)
            bad = str(int(orig) + 1 + i % 7)
            fd = os.open(SLEEP, os.O_WRONLY)
            t0 = time.perf_counter()
            os.write(fd, bad.encode())
            os.close(fd)
            deadline = t0 + 30
            while _count(db) == before:
                if time.perf_counter() > deadline:
                    raise bl.BenchError("no drift row within 30 s of a write")
                time.sleep(0.001)
            ms = (time.perf_counter() - t0) * 1000
            while _read(SLEEP) != orig:   # restored: the next round starts in sync
                if time.perf_counter() > deadline:
                    raise bl.BenchError("the knob was not restored within 30 s")
                time.sleep(0.001)
            if i >= warm:
                out.append(ms)
    finally:
        db.close()
    return out


def run(ctx):
    seconds = 10 if ctx.rounds <= 2 else 60
    n, warm = (5, 1) if ctx.rounds <= 2 else (21, 3)
    rows = []
    ref = d = None
    orig = _read(SLEEP) if os.path.exists(SLEEP) else None
    try:
        if orig is None:
            raise bl.BenchError("no %s" % SLEEP)
        pdir = ctx.workdir_for("drift-profiles")
        ref = bl.Daemon(ctx.bin_dir, ctx.workdir_for("drift-ref"), tcp=False).start()
        text, nkeys = _profile(ref)
        with open(os.path.join(pdir, "bench.conf"), "w") as f:
            f.write(text)
        d = bl.Daemon(ctx.bin_dir, ctx.workdir_for("drift-watch"), tcp=False, args=["--profiles-dir", pdir]).start()
        _apply(d, "bench")
        hz = os.sysconf("SC_CLK_TCK")
        a0, b0, t0 = _cpu_ticks(d.pid), _cpu_ticks(ref.pid), time.monotonic()
        time.sleep(seconds)
        a1, b1, t1 = _cpu_ticks(d.pid), _cpu_ticks(ref.pid), time.monotonic()
        pct = lambda t: 100.0 * t / hz / (t1 - t0)   # noqa: E731
        rows.append(bl.row("drift.idle", "CPU of an idle daemon verifying %d managed keys (vs one with no profile)"
                           % nkeys, "% core", [pct(a1 - a0)], [pct(b1 - b0)], ref_name="no profile",
                           goal="< 0.1 % of a core", goal_check=lambda dm, r: dm < 0.1,
                           method=METHOD_IDLE.format(s=seconds, check=60), extra={"profile": text}))
        lat = _latency(d, orig, n, warm)
        rows.append(bl.row("drift.latency", "a foreign write to a managed knob until its drift row is recorded, "
                           "median", "ms", lat, goal="median < 100 ms", goal_check=lambda dm, r: dm < 100,
                           method=METHOD_LAT.format(f=SLEEP, n=n, warm=warm)))
    except (bl.BenchError, OSError, sqlite3.Error, json.JSONDecodeError) as e:
        rows.append(bl.unavailable("drift", "verification without polling: idle cost and drift latency", str(e)))
    finally:
        for x in (d, ref):
            if x:
                x.stop()
        if orig is not None:
            with open(SLEEP, "w") as f:
                f.write(orig)
    return rows
