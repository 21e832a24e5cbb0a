"""Pooled critical-path components per phase: pool.py @label dir dir @label dir..."""
import collections, os, sys
groups = collections.OrderedDict(); cur = None
for a in sys.argv[1:]:
    if a.startswith("@"): cur = a[1:]; groups[cur] = []
    else: groups[cur].append(a)
def p99(xs):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]
for label, dirs in groups.items():
    per = collections.defaultdict(list)
    p99s = collections.defaultdict(list)
    for d in dirs:
        sys.argv = ["cpath", d]; g = {"__name__": "cpath"}
        exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "critical_path.py")).read(), g)
        for ph in g["meta"]["phases"]:
            r = g["analyse"](ph, ph["name"])
            per[ph["name"]] += r
            p99s[ph["name"]].append(p99([x[0] for x in r]) / 1e6)
    print("### %s (%d runs)" % (label, len(dirs)))
    for phn, rs in per.items():
        rs.sort(key=lambda x: x[0]); n = len(rs); tail = rs[-max(1, n // 50):]
        def comp(sel):
            c = collections.Counter(); oc = collections.Counter()
            for lat, parts, occw, hops in sel:
                for k, v in parts.items():
                    kk = k if isinstance(k, str) else ("%s %s" % k)
                    kk = kk.replace("d.thread", "worker").replace("d.reader10", "page-thread")
                    c[kk] += v
                oc.update(occw)
            return {k: v / len(sel) / 1e6 for k, v in c.items()}, {k: v / len(sel) / 1e6 for k, v in oc.items()}
        ca, oa = comp(rs); ct, ot = comp(tail)
        print("%-12s PUTs %4d, per-run p99 %s ms; mean %.2f ms, slowest 2%% mean %.2f ms" % (phn, n, " ".join("%.1f" % x for x in p99s[phn]), sum(r[0] for r in rs) / n / 1e6, sum(r[0] for r in tail) / len(tail) / 1e6))
        for k in sorted(ct, key=lambda k: -ct[k]):
            if ct[k] > 0.05 or ca.get(k, 0) > 0.02:
                print("      %-22s mean %6.3f   slowest-2%% %6.3f" % (k, ca.get(k, 0), ct[k]))
        print("      CPU held meanwhile (slowest 2%%, cpu-ms/PUT): %s" % ", ".join("%s %.1f" % (k, v) for k, v in sorted(ot.items(), key=lambda kv: -kv[1])[:6]))
