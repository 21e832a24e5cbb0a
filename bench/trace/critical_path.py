"""The critical path of each PUT of a limits_trace.py run, walked backward from its answer over the
scheduler's events (perf script): the thread on the path is running, runnable (woken or preempted,
waiting for a CPU: charged to it, with who held the CPUs meanwhile) or asleep; at a wake-up by a
thread of the chain (the bench's client, the daemon's threads, the helper) the walk moves to the
waker. A sleep in D ends with an I/O completion, often in interrupt context on whatever ran there:
charged as the sleeper's I/O wait, its "waker" not followed.

usage: critical_path.py OUTDIR [phase-index ...]   (TRACEWALK=ms prints the walk of PUTs slower)
pool.py and hops.py pool several runs: per phase the components of the path (mean, slowest 2 %),
and per hop the wake-up-to-run latency (mean, p99) with who held the CPUs."""
import bisect, collections, json, os, re, subprocess, sys

out = sys.argv[1]
meta = json.load(open(os.path.join(out, "meta.json")))
client = meta["client"]
threads = {int(t): v for t, v in meta["threads"].items()}
helper = set(meta["helper"])
MHD_NAMES = {}

HDR = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")
KV = re.compile(r"(\w+)=(\S+)")

def parse(path):
    p = subprocess.run(["perf", "script", "-i", path, "-F", "comm,pid,tid,cpu,time,event,trace"],
                       capture_output=True, text=True)
    ev = []
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$", line)
        if not m:
            continue
        comm, pid, tid, cpu, t, name, rest = m.groups()
        ev.append((int(float(t) * 1e9 + 0.5), int(cpu), int(tid), int(pid), comm, name, rest))
    return ev

def role(tid, comm, helpers):
    if tid == 0:
        return "idle"
    if tid == client:
        return "client"
    th = threads.get(tid)
    if th:
        if th["proc"] in helper:
            return "helper"
        if th["nice"] == 10:
            return "d.reader10"
        if th["policy"] == 5:
            return "d.idle"
        return "d.thread"
    if tid in helpers:
        return "loadproc"
    return "other:" + comm.split("/")[0][:12]

HOPW = []
def analyse(ph, phase_name):
    ev = parse(ph["data"])
    helpers = set(ph["helpers"])
    comms = {}
    # per tid list of (t, state, info): state 'run' (info cpu), 'wait' (info waker or 'preempt'), 'sleep'
    tl = collections.defaultdict(list)
    cur = {}  # cpu -> tid running
    occ = collections.defaultdict(list)  # cpu -> [(t, tid)]
    wakes = collections.defaultdict(list)  # target tid -> [(t, waker tid)]
    state = {}
    for t, cpu, tid, pid, comm, name, rest in ev:
        kv = dict(KV.findall(rest))
        if name == "sched:sched_switch":
            prev, nxt = int(kv["prev_pid"]), int(kv["next_pid"])
            comms[prev] = kv["prev_comm"]; comms[nxt] = kv["next_comm"]
            ps = kv["prev_state"]
            st = "wait" if ps.startswith("R") else "sleep"
            tl[prev].append((t, st, "preempt" if st == "wait" else ps))
            state[prev] = st
            tl[nxt].append((t, "run", cpu))
            state[nxt] = "run"
            occ[cpu].append((t, nxt))
        elif name in ("sched:sched_waking", "sched:sched_wakeup_new"):
            tgt = int(kv["pid"])
            comms[tgt] = kv["comm"]
            if state.get(tgt) in ("run", "wait"):
                continue
            tl[tgt].append((t, "wait", tid))
            state[tgt] = "wait"
            wakes[tgt].append((t, tid))
        comms.setdefault(tid, comm)
    keys = {k: [x[0] for x in v] for k, v in tl.items()}
    okeys = {c: [x[0] for x in v] for c, v in occ.items()}

    def rl(tid):
        return role(tid, comms.get(tid, "?"), helpers)

    def occupants(a, b):
        """time per role on each cpu during [a,b]"""
        res = collections.Counter()
        for c, v in occ.items():
            ks = okeys[c]
            i = max(0, bisect.bisect_right(ks, a) - 1)
            while i < len(v) and v[i][0] < b:
                s = max(a, v[i][0]); e = min(b, v[i + 1][0] if i + 1 < len(v) else b)
                if e > s:
                    res[rl(v[i][1])] += e - s
                i += 1
        return res

    results = []
    for t0, t1 in ph["puts"]:
        x, now = client, t1
        parts = collections.Counter()
        occw = collections.Counter()
        hops = []
        guard = 0
        while now > t0 and guard < 10000:
            guard += 1
            v = tl.get(x)
            if not v:
                parts["unknown"] += now - t0; break
            i = bisect.bisect_left(keys[x], now) - 1
            if i < 0:
                parts["unknown"] += now - t0; break
            ts, st, info = v[i]
            s = max(ts, t0)
            r = rl(x)
            if os.environ.get('TRACEWALK') and (t1 - t0) > float(os.environ['TRACEWALK']) * 1e6:
                print('    %-10s %6d %-5s %8.3f..%8.3f %s' % (r, x, st, (s - t0) / 1e6, (now - t0) / 1e6, info if st != 'run' else 'cpu%s' % info))
            if st == "run":
                parts[(r, "run")] += now - s
            elif st == "wait":
                parts[(r, "wait")] += now - s
                oc1 = occupants(s, now)
                occw += oc1
                HOPW.append((phase_name, r, "preempt" if info == "preempt" else rl(info), now - s, oc1))
                prevD = i > 0 and v[i - 1][1] == "sleep" and str(v[i - 1][2]).startswith("D")
                if prevD and info != "preempt":
                    # a D sleep ends by an I/O completion, often in irq context on whatever ran there:
                    # the "waker" is not a dependency; the sleep itself is counted next
                    hops.append((ts, rl(x), "io"))
                elif info != "preempt" and ts > t0:
                    # woken at ts by info: hop to the waker if it is on our chain
                    wr = rl(info)
                    if info != x and wr in ("client", "helper", "d.thread", "d.reader10", "d.idle"):
                        hops.append((ts, rl(x), wr))
                        x, now = info, ts
                        continue
                    elif info != x:
                        # woken by something off the chain (irq, timer); the sleep before it
                        hops.append((ts, rl(x), "by:" + wr))
            elif st == "sleep":
                parts[(r, "sleep" + ("D" if str(info).startswith("D") else ""))] += now - s
            now = ts
        if os.environ.get('TRACEWALK') and (t1 - t0) > float(os.environ['TRACEWALK']) * 1e6:
            print('  ^ PUT %.2f ms' % ((t1 - t0) / 1e6))
        results.append((t1 - t0, parts, occw, hops))
    return results

def show(name, results):
    results.sort(key=lambda r: r[0])
    n = len(results)
    def summ(sel, label):
        tot = collections.Counter(); oc = collections.Counter(); nh = 0
        for lat, parts, occw, hops in sel:
            tot.update(parts); oc.update(occw); nh += len(hops)
        k = len(sel)
        print("  %s (%d PUTs): latency mean %.2f ms, hops %.1f" % (label, k, sum(r[0] for r in sel) / k / 1e6, nh / k))
        for key, v in sorted(tot.items(), key=lambda kv: -kv[1]):
            if v / k / 1e6 >= 0.005:
                print("     %-28s %7.3f ms" % (key, v / k / 1e6))
        ot = sum(oc.values())
        if ot:
            print("     CPU occupants while a chain thread waited (cpu-ms per PUT, both CPUs):",
                  ", ".join("%s %.2f" % (kk, vv / k / 1e6) for kk, vv in oc.most_common(8)))
    print("%s: p50 %.2f p99 %.2f ms" % (name, results[n // 2][0] / 1e6, results[min(n - 1, round(0.99 * (n - 1)))][0] / 1e6))
    summ(results, "all")
    summ(results[-max(1, n // 20):], "slowest 5%")
    # hop pattern of the median PUT
    lat, parts, occw, hops = results[n // 2]
    print("  median PUT's hops (backward):", [(h[1], h[2]) for h in hops])

if __name__ != "__main__":
    pass
idx = [int(a) for a in sys.argv[2:]] or range(len(meta["phases"]))
for i in (idx if __name__ == "__main__" else []):
    ph = meta["phases"][i]
    show("%d-%s" % (i, ph["name"]), analyse(ph, ph["name"]))

def detail(i, k=5):
    ph = meta["phases"][i]
    global DETAIL
    res = analyse_detail(ph)
