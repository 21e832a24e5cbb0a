"""The limits bench's PUT loop (bench/b_limits.py) under the scheduler's tracepoints, one perf.data
per phase, for critical_path.py (bench/README.md §19, limits.readers, branch h22-readers2). Not a
bench row: it measures what a change waits for, not how long it takes.

usage: limits_trace.py BIN_DIR OUTDIR [n [phases]]     (as root; phases default
       idle,readers,idle,spinners,idle,readers_raw; n PUTs a phase, default 200)
environment: FAKE=1 runs the daemon on a generated tree (no real knob is touched; without it the
real khugepaged/pages_to_scan is changed and restored, so hold the test lock); SYSC=1 also records
fdatasync entries; NOPERF=1 records nothing (the loop alone); CALLG=1 records call chains (off-CPU stacks); SLICE=ns [SLICENICE=n] sets that
EEVDF slice request on the daemon's and helper's threads of that nice value (an evaluation of the
lever from outside, by tid).

OUTDIR/meta.json keeps each phase's PUT windows (CLOCK_MONOTONIC ns, the clock perf records with
-k), the helper processes' pids, and the daemon's and helper's threads with nice and policy."""
import json, os, signal, subprocess, sys, tempfile, time
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
sys.path.insert(0, HERE)
import benchlib as bl
import b_limits as L

bin_dir, out = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
phases = (sys.argv[4] if len(sys.argv) > 4 else "idle,readers,idle,spinners,idle,readers_raw").split(",")
os.makedirs(out, exist_ok=True)
scratch = tempfile.mkdtemp(prefix="mpd-trace-"); os.chmod(scratch, 0o755)
knob_file, args = L.KNOB_FILE, []
if os.environ.get("FAKE"):
    sys.path.insert(0, os.path.join(BENCH, "..", "tests", "e2e"))
    from faketree import FakeTree
    troot = tempfile.mkdtemp(prefix="mpd-trace-tree-", dir="/dev/shm"); os.chmod(troot, 0o755)
    tree = FakeTree(troot, nodes=2, cpuless=())
    args = ["--sysfs-root", tree.sys, "--procfs-root", tree.proc]
    knob_file = tree.sys + "/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"
with open(knob_file) as f:
    original = f.read().strip()
base = max(int(original), 8)
d = bl.Daemon(bin_dir, scratch, tcp=False, args=args).start()
import eevdf_slice as SL
if os.environ.get("SLICE"):
    for p in [d.pid] + bl.children(d.pid):
        for t in os.listdir("/proc/%d/task" % p):
            st = open("/proc/%d/task/%s/stat" % (p, t)).read()
            f = st[st.rindex(")") + 2:].split()
            want = int(os.environ.get("SLICENICE", "0"))
            if int(f[16]) == want and int(f[38]) == 0:
                print("slice", t, SL.setslice(int(t), int(os.environ["SLICE"]), want), file=sys.stderr)
meta = {"daemon": d.pid, "client": os.getpid(), "phases": []}
try:
    L.fill(d)
    L.changes(d, base, 1000)
    for i, ph in enumerate(phases):
        helpers = []
        if ph == "spinners":
            helpers = [L.as_nobody(L.SPINNER) for _ in range(4)]
        elif ph.startswith("readers"):
            helpers = [L.as_nobody(L.READER, d.socket, BENCH,
                                   "raw" if ph == "readers_raw" else "parsed") for _ in range(4)]
        time.sleep(0.2)
        pf = os.path.join(out, "%d-%s.data" % (i, ph))
        perf = None if os.environ.get("NOPERF") else subprocess.Popen(["perf", "record", "-q", "-a", "-k", "CLOCK_MONOTONIC", "-o", pf,
                                 "-e", "sched:sched_switch", "-e", "sched:sched_waking", "-e", "sched:sched_wakeup",
                                 "-e", "sched:sched_wakeup_new", "-e", "sched:sched_migrate_task"] + (["-g"] if os.environ.get("CALLG") else []) + (["-e", "syscalls:sys_enter_fdatasync", "-e", "syscalls:sys_exit_fdatasync", "-e", "syscalls:sys_enter_fsync"] if os.environ.get("SYSC") else []),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        puts = []
        for j in range(n):
            t0 = time.monotonic_ns()
            c = d.connection(timeout=30)
            try:
                st, _, raw, _ = bl.http_call(c, "PUT", "/v1/knobs/" + L.KNOB, {"value": base + (j & 1)})
            finally:
                c.close()
            t1 = time.monotonic_ns()
            puts.append((t0, t1))
            assert st == 200, st
        time.sleep(0.05)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        pids = [p.pid for p in helpers]
        L.stop_all(helpers)
        ms = sorted((b - a) / 1e6 for a, b in puts)
        print(ph, "p50 %.2f p99 %.2f max %.2f" % (ms[len(ms)//2], L.p99(ms), ms[-1]), flush=True)
        meta["phases"].append({"name": ph, "data": pf, "puts": puts, "helpers": pids})
    meta["helper"] = bl.children(d.pid)
    th = {}
    for p in [d.pid] + meta["helper"]:
        for t in os.listdir("/proc/%d/task" % p):
            st = open("/proc/%d/task/%s/stat" % (p, t)).read()
            f = st[st.rindex(")") + 2:].split()
            th[t] = {"proc": p, "nice": int(f[16]), "policy": int(f[38])}
    meta["threads"] = th
finally:
    d.stop()
    if not os.environ.get("FAKE"):
        with open(L.KNOB_FILE, "w") as f:
            f.write(original)
json.dump(meta, open(os.path.join(out, "meta.json"), "w"))
