"""Wake-up-to-run latency per hop of the PUT chain, pooled over runs: hops.py @LABEL DIR [DIR...] [@LABEL DIR...]"""
import collections, json, os, sys
groups = collections.OrderedDict(); cur = None
for a in sys.argv[1:]:
    if a.startswith("@"):
        cur = a[1:]; groups[cur] = []
    else:
        groups[cur].append(a)
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")
res = {}
for label, dirs in groups.items():
    agg = collections.defaultdict(list); occ = collections.defaultdict(collections.Counter)
    for d in dirs:
        sys.argv = ["cpath", d]
        g = {"__name__": "cpath"}
        exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "critical_path.py")).read(), g)
        for i, ph in enumerate(g["meta"]["phases"]):
            g["analyse"](ph, ph["name"])
        for phn, who, by, lat, oc in g["HOPW"]:
            key = (phn, "%s<-%s" % (who, by))
            agg[key].append(lat / 1e6); occ[key].update(oc)
    res[label] = (agg, occ)
keys = sorted(set(k for a, o in res.values() for k in a), key=lambda k: (k[0], k[1]))
print("%-12s %-24s" % ("phase", "hop (woken<-waker)") + "".join("| %-44s" % l for l in res))
for k in keys:
    line = "%-12s %-24s" % k
    for label, (agg, occ) in res.items():
        xs = agg.get(k, [])
        if xs:
            top = ", ".join("%s %.0f%%" % (r, 100 * v / max(1, sum(occ[k].values()))) for r, v in occ[k].most_common(2))
            line += "| n%4d mean %.3f p99 %6.3f [%s]" % (len(xs), sum(xs) / len(xs), pct(xs, .99), top)
        else:
            line += "| %-44s" % "-"
    print(line)
