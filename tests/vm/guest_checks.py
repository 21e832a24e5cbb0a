"""The in-guest suite: runs inside a multi-node QEMU guest (see tests/vm/run), chrooted into the
host root, as root, against the guest's real /sys and /proc.

Adding a check: write a function `check_<name>(d, nodes)` below (they run in file order).
  d      a started tests/e2e/lib.py Daemon (d.get, d.request, d.ctl, d.curl, d.sql, d.restart)
  nodes  the guest as the host booted it: [{"mem_mb": 512, "ncpus": 1, "cpus": [0]}, ...]
A check passes when it returns and fails on any exception; use plain asserts or eq()/expect().
It may return a short string (a measurement) that is printed beside its name.
A check that changes a knob or pool restores it (try/finally), so checks stay independent.
The guest is disposable, but the next check is not.

Protocol (read by tests/vm/run): 'RESULT <name> PASS|FAIL <secs>s <message>' a check,
'DETAIL <text>' lines after a failure (traceback, daemon log)."""
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from lib import Daemon, bracketed, real_file, real_write, shared_tmp  # noqa: E402

HERE_E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e")

NODE_SYS = "/sys/devices/system/node"
THP = "/sys/kernel/mm/transparent_hugepage"


def eq(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def ok_json(r, what):
    """The response is a 200 with a JSON body; returns the body."""
    expect(r.status == 200 and r.json is not None, "%s: %r" % (what, r))
    return r.json


def node_meminfo_kb(n, field="MemTotal"):
    text = real_file("%s/node%d/meminfo" % (NODE_SYS, n))
    m = re.search(r"^Node %d %s:\s+(\d+) kB" % (n, field), text, re.M)
    return int(m.group(1))


def cpulist(text):
    """Kernel list format '0-2,5' -> [0, 1, 2, 5]."""
    out = []
    for part in filter(None, text.strip().split(",")):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def near_size(got_kb, mem_mb):
    """A node's MemTotal is its size less what the kernel keeps for itself: node 0 holds the kernel
    image and the initramfs (~45 MiB on 6.1), every node its page structs (~1.6%)."""
    return mem_mb * 1024 * 0.85 - 64 * 1024 <= got_kb <= mem_mb * 1024


# -- the guest itself (guards the harness: a wrong guest would make every other check meaningless) ---

def check_daemon_health(d, nodes):
    h = ok_json(d.get("/v1/health"), "GET /v1/health")
    eq(h["status"], "ok", "status")
    eq(h["kernel_release"], os.uname().release, "kernel_release")
    expect(h["kernel_release"].startswith("6.1."), "guest kernel is not 6.1: %s" % h["kernel_release"])


def check_guest_numa_layout(d, nodes):
    eq(real_file(NODE_SYS + "/online"), "0-%d" % (len(nodes) - 1), "node/online")
    eq(sorted(os.path.basename(p) for p in glob.glob(NODE_SYS + "/node[0-9]*")),
       sorted("node%d" % i for i in range(len(nodes))), "node directories")
    for i, n in enumerate(nodes):
        eq(cpulist(real_file("%s/node%d/cpulist" % (NODE_SYS, i))), n["cpus"], "node%d cpulist" % i)
        kb = node_meminfo_kb(i)
        expect(near_size(kb, n["mem_mb"]), "node%d MemTotal %d kB is not about %d MiB" % (i, kb, n["mem_mb"]))
    eq(real_file("/proc/sys/kernel/numa_balancing"), "0", "numa_balancing (booted with =disable)")


# -- capabilities: Debian 12's 6.1 kernel lacks what the 6.18 host has; detection must say so -------

def check_capabilities_on_6_1(d, nodes):
    caps = ok_json(d.get("/v1/health"), "GET /v1/health")["capabilities"]
    # Per-size mTHP directories came with 6.8: the kernel has none, and the daemon reports none.
    eq(glob.glob(THP + "/hugepages-*kB"), [], "mTHP directories in the 6.1 guest")
    eq(caps["mthp_sizes"], [], "mthp_sizes")
    eq(caps["thp"], True, "thp")
    # Weighted interleave came with 6.9.
    expect(not os.path.exists("/sys/kernel/mm/mempolicy"), "/sys/kernel/mm/mempolicy exists on 6.1")
    eq(caps["weighted_interleave"], False, "weighted_interleave")
    # MADV_COLLAPSE is new in 6.1 itself; numa_balancing exists (CONFIG_NUMA_BALANCING), here disabled.
    eq(caps["madv_collapse"], True, "madv_collapse")
    eq(caps["numa_balancing"], True, "numa_balancing")
    eq(caps["cgroup_version"], 2, "cgroup_version (init mounts cgroup2)")
    # hugetlb sizes are what the kernel lists; -cpu max has pdpe1gb, so 1G is there too.
    kernel = sorted(int(re.match(r"hugepages-(\d+)kB", os.path.basename(p)).group(1))
                    for p in glob.glob("/sys/kernel/mm/hugepages/hugepages-*kB"))
    eq(kernel, [2048, 1048576], "hugetlb sizes in the guest kernel")
    eq(caps["hugetlb_sizes"], ["2M", "1G"], "hugetlb_sizes")


# -- topology (server/api/topology.c, mempolicyctl topology) -----------------------------------------

def topology_matches_guest(t, nodes, what):
    """A GET /v1/topology answer describes exactly the guest QEMU was told to build."""
    eq(t["node_count"], len(nodes), what + " node_count")
    eq(t["online"], "0-%d" % (len(nodes) - 1), what + " online")
    eq([n["id"] for n in t["nodes"]], list(range(len(nodes))), what + " node ids")
    for i, (got, want) in enumerate(zip(t["nodes"], nodes)):
        w = "%s node%d" % (what, i)
        eq(got["cpus"], want["cpus"], w + " cpus")
        eq(got["has_cpu"], want["ncpus"] > 0, w + " has_cpu")
        eq(got["has_memory"], True, w + " has_memory")
        # MemTotal does not move; MemFree does, so only its bounds are checked.
        eq(got["memory_total_bytes"], node_meminfo_kb(i) * 1024, w + " memory_total_bytes vs meminfo")
        expect(near_size(got["memory_total_bytes"] // 1024, want["mem_mb"]),
               "%s memory_total_bytes %d is not about %d MiB" % (w, got["memory_total_bytes"], want["mem_mb"]))
        expect(0 < got["memory_free_bytes"] <= got["memory_total_bytes"], w + " memory_free_bytes out of bounds")
        # QEMU without -numa dist: the kernel's defaults, 10 local and 20 remote.
        eq(got["distances"], {str(j): 10 if j == i else 20 for j in range(len(nodes))}, w + " distances")
        eq(got["hugepage_sizes"], ["2M", "1G"], w + " hugepage_sizes")


def check_topology_http(d, nodes):
    topology_matches_guest(ok_json(d.get("/v1/topology"), "GET /v1/topology"), nodes, "GET /v1/topology")
    # The CPU-less node of the 4-node guest is reported, memory and all, with no CPUs.
    for i, n in enumerate(nodes):
        if n["ncpus"] == 0:
            eq(real_file("%s/node%d/cpulist" % (NODE_SYS, i)), "", "node%d cpulist in the kernel" % i)


def check_topology_curl(d, nodes):
    p = d.curl("-i", "http://localhost/v1/topology")
    eq(p.returncode, 0, "curl exit status (%s)" % p.stderr.strip())
    head, _, body = p.stdout.partition("\n\n")   # text mode has turned CRLF into LF
    expect(head.startswith("HTTP/1.1 200"), "curl status line: %r" % head.splitlines()[0])
    expect(re.search(r"(?im)^content-type: application/json", head), "curl content-type: %r" % head)
    topology_matches_guest(json.loads(body), nodes, "curl /v1/topology")


def kernel_list(ids):
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's and the CLI's list format); [] -> '-' (the CLI's empty)."""
    runs = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in runs) or "-"


def check_topology_cli(d, nodes):
    p = d.ctl("--json", "topology", user="nobody")   # a read: any user may
    eq(p.returncode, 0, "mempolicyctl --json topology exit status (%s)" % p.stderr.strip())
    topology_matches_guest(json.loads(p.stdout), nodes, "mempolicyctl --json topology")
    p = d.ctl("topology")
    eq(p.returncode, 0, "mempolicyctl topology exit status (%s)" % p.stderr.strip())
    rows = [line.split() for line in p.stdout.splitlines() if line.strip()]
    eq(rows[0][:2], ["NODE", "CPUS"], "node table header")
    for i, n in enumerate(nodes):
        eq(rows[1 + i][:2], [str(i), kernel_list(n["cpus"])], "node table row %d" % i)
        eq(rows[1 + i][-1], "2M,1G", "node table row %d hugepages" % i)
    dist = rows[1 + len(nodes):]
    eq(dist[0], ["DISTANCE"] + [str(i) for i in range(len(nodes))], "distance header")
    for i in range(len(nodes)):
        eq(dist[1 + i], [str(i)] + ["10" if j == i else "20" for j in range(len(nodes))], "distance row %d" % i)


def check_status_cli(d, nodes):
    p = d.ctl("status")
    eq(p.returncode, 0, "mempolicyctl status exit status (%s)" % p.stderr.strip())
    rows = {line[:15].strip(): line[15:].strip() for line in p.stdout.splitlines()}
    eq(rows.get("nodes"), "%d (online 0-%d)" % (len(nodes), len(nodes) - 1), "status nodes")
    eq(rows.get("mTHP sizes"), "-", "status mTHP sizes on 6.1")
    expect("weighted_interleave=no" in rows.get("features", ""), "status features: %r" % rows.get("features"))



# -- knobs (server/api/knobs.c) -----------------------------------------------------------------------

def knob_map(d):
    return {k["name"]: k for k in ok_json(d.get("/v1/knobs"), "GET /v1/knobs")["knobs"]}


def check_knobs_on_6_1(d, nodes):
    knobs = knob_map(d)
    # The per-size and weighted-interleave knobs are discovered at start; 6.1 has neither.
    eq(sorted(n for n in knobs if n.startswith("thp.size.")), [], "per-size THP knobs on 6.1")
    eq(sorted(n for n in knobs if n.startswith("mempolicy.weighted_interleave")), [],
       "weighted interleave knobs on 6.1")
    for name, path in (("thp.enabled", THP + "/enabled"), ("thp.defrag", THP + "/defrag")):
        k = knobs[name]
        text = real_file(path)
        eq(k["available"], True, name + " available")
        eq(k["value"], bracketed(text), name + " value vs " + path)
        eq(k["allowed"], text.replace("[", "").replace("]", "").split(), name + " allowed vs " + path)
    k = knobs["numa.balancing"]
    eq((k["available"], k["value"]), (True, 0), "numa.balancing (booted with numa_balancing=disable)")


def put_knob(d, name, value):
    r = d.request("PUT", "/v1/knobs/" + name, body={"value": value})
    body = ok_json(r, "PUT /v1/knobs/%s %r" % (name, value))
    eq(body["status"], "ok", "PUT %s status" % name)
    return body


def check_knob_put_thp_enabled(d, nodes):
    path = THP + "/enabled"
    old = bracketed(real_file(path))
    try:
        for value in [v for v in knob_map(d)["thp.enabled"]["allowed"] if v != old] + [old]:
            body = put_knob(d, "thp.enabled", value)
            eq(bracketed(real_file(path)), value, "%s after PUT %s" % (path, value))
            eq(d.get("/v1/knobs/thp.enabled").json["value"], value, "GET thp.enabled after PUT")
            op = ok_json(d.get("/v1/history/%d" % body["operation_id"]), "GET /v1/history/{id}")
            eq(op["kernel_release"], os.uname().release, "history kernel_release")
    finally:
        real_write(path, old)


def check_knob_set_cli(d, nodes):
    path = THP + "/defrag"
    old = bracketed(real_file(path))
    new = "never" if old != "never" else "madvise"
    try:
        p = d.ctl("knob", "set", "thp.defrag=" + new, user="nobody")
        expect(p.returncode != 0, "nobody may not set a knob: %s" % p.stdout)
        eq(bracketed(real_file(path)), old, path + " after a refused set")
        p = d.ctl("knob", "set", "thp.defrag=" + new)
        eq(p.returncode, 0, "knob set as root (%s)" % p.stderr.strip())
        eq(bracketed(real_file(path)), new, path + " after knob set")
        p = d.ctl("--json", "knob", "get", "thp.defrag")
        eq(json.loads(p.stdout)["value"], new, "knob get after set")
    finally:
        real_write(path, old)


def check_knob_put_numa_balancing(d, nodes):
    """Only a multi-node kernel does anything with it; 6.1 takes 0..3 (tiering mode since 6.0)."""
    path = "/proc/sys/kernel/numa_balancing"
    try:
        for value in (1, 2, 0):
            put_knob(d, "numa.balancing", value)
            eq(real_file(path), str(value), "%s after PUT %d" % (path, value))
        r = d.request("PUT", "/v1/knobs/numa.balancing", body={"value": 4})
        eq((r.status, (r.json or {}).get("code")), (422, "knob.out_of_range"), "PUT numa.balancing 4")
        eq(real_file(path), "0", path + " after a refused PUT")
    finally:
        real_write(path, "0")


# -- per-node hugetlb pools (issue 4: PUT /v1/hugepages/{size} with per-node targets -> job) ----------

HP_NODE = NODE_SYS + "/node%d/hugepages/hugepages-%dkB/nr_hugepages"


def node_pools(nodes, kb):
    return {i: int(real_file(HP_NODE % (i, kb))) for i in range(len(nodes))}


def restore_pools(kb, before):
    for i, v in sorted(before.items(), reverse=True):
        real_write(HP_NODE % (i, kb), str(v))


def wait_job(d, job_id, timeout):
    """Polls GET /v1/jobs/{id} until the job ends; returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = ok_json(d.get("/v1/jobs/%d" % job_id), "GET /v1/jobs/{id}")
        if j["status"] not in ("queued", "running"):
            return j
        time.sleep(0.05)
    raise AssertionError("job %d still %s after %d s" % (job_id, j["status"], timeout))


def resize(d, size, body, timeout=90):
    """PUT /v1/hugepages/{size}: 202, Location of the job; waits for the job to end, returns it."""
    r = d.request("PUT", "/v1/hugepages/" + size, body=body)
    expect(r.status == 202 and r.json, "PUT /v1/hugepages/%s %s: %r" % (size, json.dumps(body), r))
    eq(r.headers.get("Location"), "/v1/jobs/%d" % r.json["id"], "Location")
    return wait_job(d, r.json["id"], timeout)


def pool_nodes(d, size):
    return {n["node"]: n["nr"] for n in ok_json(d.get("/v1/hugepages/" + size), "GET /v1/hugepages")["nodes"]}


def check_hugepages_per_node_targets(d, nodes):
    """Uneven per-node targets land on exactly those nodes (the CPU-less one included); a later
    resize naming one node leaves the others alone."""
    before = node_pools(nodes, 2048)
    want = {i: 3 + 4 * i for i in range(len(nodes))}            # 3, 7, 11, 15: every node different
    try:
        j = resize(d, "2M", {"nodes": {str(i): n for i, n in want.items()}, "batch": 2})
        eq((j["status"], j["reason"]), ("ok", None), "job status")
        eq(node_pools(nodes, 2048), want, "per-node nr_hugepages in the kernel")
        eq(pool_nodes(d, "2M"), want, "GET /v1/hugepages/2M nodes")
        got = {t["node"]: (t["from"], t["current"], t["got"]) for t in j["result"]["targets"]}
        eq(got, {i: (before[i], want[i], abs(want[i] - before[i])) for i in want}, "job targets")
        # Every batch is recorded against its node: per-node latency statistics count exactly them.
        batches = {t["node"]: t["batches"] for t in j["result"]["targets"]}
        eq(batches, {i: -(-(want[i] - before[i]) // 2) for i in want}, "batches of 2 pages per node")
        for i in want:
            st = ok_json(d.get("/v1/history/stats?size=2M&node=%d&since=%d" % (i, j["created_ns"])), "stats")
            eq(st["count"], batches[i], "stats samples for node%d" % i)
        # Availability is per node: node 0 holds 3 free pages, the last node 3 + 4 * last.
        for node, verdict, from_free, grow in ((0, "grow", 3, 2), (len(nodes) - 1, "available", 5, 0)):
            a = ok_json(d.get("/v1/hugepages/2M/availability?node=%d&count=5" % node), "availability")
            eq((a["verdict"], a["from_free"], a["grow_needed"], a["pool_nr"]),
               (verdict, from_free, grow, want[node]), "availability of 5 pages on node%d" % node)
        want[1] = 1                                               # shrink node 1 only
        j = resize(d, "2M", {"nodes": {"1": 1}})
        eq(j["status"], "ok", "shrink job status")
        eq(node_pools(nodes, 2048), want, "per-node nr_hugepages after shrinking node 1")
    finally:
        restore_pools(2048, before)


def check_hugepages_node_gives_fewer(d, nodes):
    """Asking a node for as many 2 MiB pages as its MemTotal holds: the kernel accepts the writes and
    gives fewer; the job ends partial with what the node's file really shows."""
    last = len(nodes) - 1                                         # not node 0: the kernel lives there
    before = node_pools(nodes, 2048)
    ask = node_meminfo_kb(last) // 2048
    try:
        j = resize(d, "2M", {"nodes": {str(last): ask}, "batch": 64})
        eq((j["status"], j["reason"]), ("partial", "no_progress"), "job status, reason")
        t = j["result"]["targets"][0]
        now = node_pools(nodes, 2048)
        expect(before[last] < now[last] < ask, "node%d got %d of %d pages" % (last, now[last], ask))
        eq((t["node"], t["current"], t["got"], t["stopped"]), (last, now[last], now[last] - before[last],
                                                               "no_progress"), "job target")
        eq({i: v for i, v in now.items() if i != last}, {i: v for i, v in before.items() if i != last},
           "the other nodes' pools")
        eq(pool_nodes(d, "2M")[last], now[last], "GET /v1/hugepages/2M node%d" % last)
        j = resize(d, "2M", {"nodes": {str(last): before[last]}, "batch": 64})
        eq(j["status"], "ok", "shrink back")
        eq(node_pools(nodes, 2048), before, "pools after shrinking back")
        return "node%d gave %d of %d pages" % (last, now[last] - before[last], ask - before[last])
    finally:
        restore_pools(2048, before)


def check_pool_cli(d, nodes):
    """mempolicyctl pool resize with per-node targets waits for the job and prints, per node, what
    was asked and given; pool list shows the pages on each node."""
    last = len(nodes) - 1
    before = node_pools(nodes, 2048)
    want = dict(before)
    want.update({0: 4, last: 6})
    args = ("pool", "resize", "2M", "--node", "0=4", "--node", "%d=6" % last, "--batch", "3")
    try:
        p = d.ctl(*args, user="nobody")
        expect(p.returncode != 0, "nobody may not resize a pool: %s" % p.stdout)
        eq(node_pools(nodes, 2048), before, "pools after a refused resize")
        p = d.ctl(*args)
        eq(p.returncode, 0, "pool resize exit status (%s%s)" % (p.stdout[-300:], p.stderr.strip()))
        eq(node_pools(nodes, 2048), want, "per-node nr_hugepages after pool resize")
        lines = [line.split() for line in p.stdout.splitlines()]
        head = next(i for i, cells in enumerate(lines) if cells[:2] == ["NODE", "FROM"])
        eq(lines[head][:6], ["NODE", "FROM", "TARGET", "ASKED", "GOT", "NOW"], "outcome table header")
        rows = {cells[0]: cells[1:6] for cells in lines[head + 1:] if cells}
        eq(rows, {str(i): [str(before[i]), str(want[i]), str(want[i] - before[i]), str(want[i] - before[i]),
                           str(want[i])] for i in (0, last)}, "outcome table")
        p = d.ctl("pool", "list")
        eq(p.returncode, 0, "pool list exit status (%s)" % p.stderr.strip())
        table = [line.split() for line in p.stdout.splitlines()]
        eq(table[0][-len(nodes):], ["NODE%d" % i for i in range(len(nodes))], "pool list header")
        row = next(cells for cells in table if cells and cells[0] == "2M")
        eq(row[-len(nodes):], ["%d/%d" % (want[i], want[i]) for i in range(len(nodes))], "pool list 2M row")
    finally:
        restore_pools(2048, before)


def check_hugepages_1g_larger_than_node(d, nodes):
    """More 1 GiB pages than a node's memory holds (one, on the default guests' nodes under 1 GiB)
    are refused before any write: the per-node limit is that node's size, not the machine's."""
    small = min(range(len(nodes)), key=lambda i: nodes[i]["mem_mb"])
    count = node_meminfo_kb(small) // 1048576 + 1
    before = node_pools(nodes, 1048576)
    r = d.request("PUT", "/v1/hugepages/1G", body={"nodes": {str(small): count}})
    eq((r.status, (r.json or {}).get("code")), (422, "resize.bad_count"), "PUT 1G node%d: %d pages" % (small, count))
    eq(node_pools(nodes, 1048576), before, "1G pools after a refused resize")


# -- process placement, migration, probes (later issues) ----------------------------------------------


# -- fanotify on the managed files (the drift watcher, server/kernel/fanwatch.c) ----------------------

FAN_CLOSE_WRITE, FAN_MODIFY, FAN_CLASS_NOTIF = 0x08, 0x02, 0x00
FAN_CLOEXEC, FAN_NONBLOCK, FAN_REPORT_PIDFD, FAN_MARK_ADD = 0x01, 0x02, 0x80, 0x01
FAN_WATCHED = [THP + "/defrag", THP + "/khugepaged/alloc_sleep_millisecs", "/proc/sys/vm/nr_hugepages",
               "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
               NODE_SYS + "/node0/hugepages/hugepages-2048kB/nr_hugepages", "/proc/sys/vm/overcommit_memory",
               "/proc/sys/vm/min_free_kbytes", "/proc/sys/vm/watermark_scale_factor"]


def fanotify_events(path):
    """What a group with FAN_REPORT_PIDFD sees when sh writes path's own value back: [(mask, pid,
    has_pidfd_record)], and sh's pid."""
    import ctypes
    import struct
    import subprocess
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
    fd = libc.fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_PIDFD, os.O_RDONLY)
    expect(fd >= 0, "fanotify_init with FAN_REPORT_PIDFD: errno %d" % ctypes.get_errno())
    try:
        expect(libc.fanotify_mark(fd, FAN_MARK_ADD, FAN_MODIFY | FAN_CLOSE_WRITE, -100, path.encode()) == 0,
               "fanotify_mark %s: errno %d" % (path, ctypes.get_errno()))
        text = real_file(path)
        value = bracketed(text) if "[" in text else text
        sh = subprocess.run(["sh", "-c", 'echo "$0" > "$1"; echo $$', value, path], capture_output=True, text=True)
        eq(sh.returncode, 0, "sh writing %s" % path)
        pid = int(sh.stdout)
        buf = os.read(fd, 8192)
        out = []
        while len(buf) >= 24:
            event_len, vers, _, mlen, mask, efd, epid = struct.unpack_from("=IBBHQii", buf)
            has_pidfd, off = False, mlen
            while off + 4 <= event_len:
                itype, _, ilen = struct.unpack_from("=BBH", buf, off)
                if itype == 4:   # FAN_EVENT_INFO_TYPE_PIDFD
                    has_pidfd = True
                    ipidfd = struct.unpack_from("=i", buf, off + 4)[0]
                    if ipidfd >= 0:
                        os.close(ipidfd)
                off += max(ilen, 4)
            if efd >= 0:
                os.close(efd)
            out.append((mask, epid, has_pidfd))
            buf = buf[event_len:]
        return out, pid
    finally:
        os.close(fd)


def check_fanotify_on_6_1(d, nodes):
    """Debian 12's 6.1: each managed kind of file gives FAN_MODIFY and FAN_CLOSE_WRITE carrying the
    writer's pid, and FAN_REPORT_PIDFD (5.15) is there (the writer was reaped by the time the
    events are read here, so its pidfd record says FAN_NOPIDFD: the record is what is checked)."""
    seen = []
    for path in FAN_WATCHED:
        if not os.path.exists(path):
            continue
        events, pid = fanotify_events(path)
        masks = 0
        for mask, epid, has_pidfd in events:
            eq(epid, pid, "%s: the event's pid" % path)
            expect(has_pidfd, "%s: no pidfd record" % path)
            masks |= mask
        eq(masks & (FAN_MODIFY | FAN_CLOSE_WRITE), FAN_MODIFY | FAN_CLOSE_WRITE, "%s: events" % path)
        seen.append(os.path.basename(path))
    expect(len(seen) >= 7, "files checked: %s" % seen)
    return "MODIFY+CLOSE_WRITE with the writer's pid and a pidfd record on %d files" % len(seen)


def check_drift_recorded_on_6_1(d, nodes):
    """A profile applied by a daemon of its own; sh writes defrag and stays until its drift is
    recorded: the row names it (pid, comm), and restore puts the value back."""
    import subprocess
    import tempfile
    pdir = tempfile.mkdtemp(prefix="mpd-vm-profiles-", dir=shared_tmp())   # the guest's /tmp is read-only
    os.chmod(pdir, 0o755)
    with open(pdir + "/vm.conf", "w") as f:
        f.write("[profile]\non-drift = restore\n[knobs]\nthp.defrag = defer+madvise\n")
    old = bracketed(real_file(THP + "/defrag"))
    dd = Daemon(None, ("--profiles-dir", pdir))
    sh = None
    try:
        dd.start(timeout=60)
        r = dd.request("POST", "/v1/profile", {"name": "vm"})
        eq(r.status, 202, "POST /v1/profile")
        job = r.json["id"]
        deadline = time.monotonic() + 120
        while dd.get("/v1/jobs/%d?wait=30" % job).json["status"] in ("queued", "running"):
            expect(time.monotonic() < deadline, "the profile.apply job did not end")
        eq(bracketed(real_file(THP + "/defrag")), "defer+madvise", "defrag after the apply")
        while "drift watcher: 1 managed keys" not in open(dd.log).read():   # the group is there
            expect(time.monotonic() < deadline, "the watcher did not mark the profile's keys")
            time.sleep(0.01)
        sh = subprocess.Popen(["sh", "-c", "echo never > %s/defrag && echo written && read _" % THP],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        eq(sh.stdout.readline().strip(), "written", "sh wrote")
        t0 = time.monotonic()
        while not dd.get("/v1/profile/drift").json["drifts"]:
            expect(time.monotonic() - t0 < 60, "no drift row")
            time.sleep(0.01)
        row = dd.get("/v1/profile/drift").json["drifts"][0]
        w = row["result"]["writer"]
        eq((row["action"], row["result"]["cause"], w["pid"], w["comm"]), ("restored", "process", sh.pid, "sh"),
           "the drift row")
        eq(bracketed(real_file(THP + "/defrag")), "defer+madvise", "defrag put back")
        return "recorded and restored %.0f ms after the write" % ((time.monotonic() - t0) * 1000)
    finally:
        if sh:
            sh.stdin.close()
            sh.wait()
        dd.cleanup()
        real_write(THP + "/defrag", old)
        import shutil
        shutil.rmtree(pdir, ignore_errors=True)


# -- processes launched under a policy (POST /v1/processes) ---------------------------------------
# The child maps and writes MB MiB of private anonymous memory, then sleeps; its placement is read
# back from /proc/PID/numa_maps (the one mapping with that many anonymous pages: MADV_DONTFORK
# gives it a VMA flag of its own, so it never merges with a neighbour).
CHILD_MB = 16
CHILD = ("import mmap,sys,time\n"
         "n=int(sys.argv[1])<<20\n"
         "m=mmap.mmap(-1,n,flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS)\n"
         "m.madvise(mmap.MADV_DONTFORK)\n"
         "m.write(b'x'*n)\n"
         "time.sleep(120)\n")


def launch(d, body, what):
    body = dict(body, argv=["/usr/bin/python3", "-c", CHILD, str(CHILD_MB)])
    r = d.request("POST", "/v1/processes", body=body)
    expect(r.status == 201, "%s: %r" % (what, r))
    return r.json


def child_mapping(pid, timeout=60):
    """The child's big mapping once every page is written: (policy text, {node: pages})."""
    want = CHILD_MB << 8
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open("/proc/%d/numa_maps" % pid) as f:
            for line in f:
                m = re.search(r" anon=(\d+)", line)
                if m and int(m.group(1)) == want and "file=" not in line:
                    counts = {int(a): int(b) for a, b in re.findall(r" N(\d+)=(\d+)", line)}
                    policy = line.split(" ", 1)[1].split(" anon=")[0].strip()
                    return policy, counts
        time.sleep(0.2)
    raise AssertionError("pid %d never wrote its %d MiB" % (pid, CHILD_MB))


def kill(pid):
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def check_launch_bind_places_pages_on_the_node(d, nodes):
    for n in range(len(nodes)):
        c = launch(d, {"policy": {"mode": "bind", "nodes": str(n)}}, "bind %d" % n)
        try:
            policy, counts = child_mapping(c["pid"])
            eq(policy, "bind:%d" % n, "policy of the mapping")
            eq(set(counts), {n}, "nodes of the pages under bind:%d" % n)
        finally:
            kill(c["pid"])


def check_launch_preferred_places_pages_on_the_node(d, nodes):
    for mode, shown in (("preferred", "prefer"), ("preferred-many", "prefer (many)")):
        n = len(nodes) - 1   # the last node: not the local one of the daemon's CPU 0
        c = launch(d, {"policy": {"mode": mode, "nodes": str(n)}}, mode)
        try:
            policy, counts = child_mapping(c["pid"])
            eq(policy, "%s:%d" % (shown, n), "policy of the mapping")
            eq(set(counts), {n}, "nodes of the pages under %s:%d (the node has room)" % (mode, n))
        finally:
            kill(c["pid"])


def check_launch_interleave_spreads_pages(d, nodes):
    k = len(nodes)
    # THP off for it: a huge page interleaves as one unit (512 pages on one node)
    c = launch(d, {"policy": {"mode": "interleave", "nodes": "0-%d" % (k - 1)}, "thp": "disable"}, "interleave")
    try:
        policy, counts = child_mapping(c["pid"])
        eq(policy, "interleave:0-%d" % (k - 1), "policy of the mapping")
        eq(set(counts), set(range(k)), "interleave reaches every node")
        share = (CHILD_MB << 8) // k
        for n, pages in counts.items():
            # anonymous pages interleave by their offset in the mapping: an even share, +-1
            expect(abs(pages - share) <= 1, "node %d has %d pages, want %d +- 1" % (n, pages, share))
    finally:
        kill(c["pid"])
    return "%d pages on each of %d nodes" % (share, k)


def check_launch_refuses_what_6_1_lacks(d, nodes):
    db = d.db_snapshot()
    for body in ({"policy": {"mode": "weighted-interleave", "nodes": "0"}}, {"thp": "except-advised"}):
        r = d.request("POST", "/v1/processes", body=dict(body, argv=["true"]))
        eq((r.status, r.json and r.json.get("code")), (409, "process.unsupported"), "6.1 lacks %r" % body)
    r = d.request("POST", "/v1/processes", body={"argv": ["true"], "policy": {"mode": "bind", "nodes": str(len(nodes))}})
    eq((r.status, r.json.get("code")), (422, "nodes.not_in_topology"), "a node past the last")
    eq(d.db_snapshot(), db, "the database after refusals")


def numastat_p(pid):
    """numastat -p PID: the Total row, MB per node (numactl's own reading of numa_maps)."""
    import subprocess
    out = subprocess.run(["numastat", "-p", str(pid)], capture_output=True, text=True, check=True).stdout
    total = [l.split()[1:] for l in out.splitlines() if l.startswith("Total")][0]
    return [float(x) for x in total[:-1]]   # the last column is the sum


def wait_job(d, job_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = ok_json(d.get("/v1/jobs/%d" % job_id), "GET job")
        if j["status"] not in ("queued", "running"):
            return j
        time.sleep(0.1)
    raise AssertionError("job %d did not finish" % job_id)


def check_migrate_moves_pages_and_matches_numastat(d, nodes):
    src, dst = 0, len(nodes) - 1
    c = launch(d, {"policy": {"mode": "preferred", "nodes": str(src)}}, "preferred %d" % src)
    try:
        _, counts = child_mapping(c["pid"])
        eq(set(counts), {src}, "pages before the migration")
        ns_before = numastat_p(c["pid"])
        r = d.request("POST", "/v1/processes/%d/migrate" % c["pid"],
                      body={"from": str(src), "to": str(dst), "start_time": c["start_time"]})
        expect(r.status == 202, "migrate: %r" % r)
        job = wait_job(d, r.json["id"])
        ns_after = numastat_p(c["pid"])
        eq(job["status"], "ok", "the migrate job (%s)" % job.get("error"))
        _, counts = child_mapping(c["pid"])
        eq(set(counts), {dst}, "pages of the 16 MiB after the migration")
        res = job["result"]
        for side, ns in (("before", ns_before), ("after", ns_after)):
            mine = {n["node"]: n["bytes"] / 1048576.0 for n in res[side]}
            for node in range(len(nodes)):
                # numastat prints MB with two decimals
                expect(abs(mine.get(node, 0.0) - ns[node]) <= 0.02,
                       "%s, node %d: recorded %.2f MB, numastat -p %.2f MB" % (side, node, mine.get(node, 0.0), ns[node]))
        expect(res["pages_moved"] >= CHILD_MB << 8, "pages_moved %d" % res["pages_moved"])
        expect(res["vmstat_delta"]["pgmigrate_success"] >= CHILD_MB << 8, "pgmigrate_success delta")
        return "%d pages %d->%d in %.1f ms" % (res["pages_moved"], src, dst, res["elapsed_ns"] / 1e6)
    finally:
        kill(c["pid"])


# The same child, but 16 of its pages are held by a pipe nobody reads: vmsplice(2) without
# SPLICE_F_GIFT takes a reference to each page it splices, and migrate_pages(2) cannot move a page
# with a reference it does not expect (-EAGAIN until it gives up): the kernel reports them as not
# moved. 16 pages fill the pipe (64 KiB) without blocking.
PINNED = 16
PINNER = ("import ctypes,mmap,os,sys,time\n"
          "n=int(sys.argv[1])<<20\n"
          "m=mmap.mmap(-1,n,flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS)\n"
          "m.madvise(mmap.MADV_DONTFORK)\n"
          "m.write(b'x'*n)\n"
          "class Iov(ctypes.Structure):\n"
          " _fields_=[('base',ctypes.c_void_p),('len',ctypes.c_size_t)]\n"
          "libc=ctypes.CDLL(None,use_errno=True)\n"
          "r,w=os.pipe()\n"
          "v=Iov(ctypes.addressof(ctypes.c_char.from_buffer(m)),%d*4096)\n"
          "k=libc.vmsplice(w,ctypes.byref(v),1,0)\n"
          "sys.exit(3) if k!=%d*4096 else time.sleep(120)\n" % (PINNED, PINNED))


def pipe_holds(pid, nbytes, timeout=30):
    """Waits until one of pid's pipes holds nbytes unread (FIONREAD through /proc/PID/fd)."""
    import fcntl
    import struct
    import termios
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for fd in os.listdir("/proc/%d/fd" % pid):
            path = "/proc/%d/fd/%s" % (pid, fd)
            try:
                if not os.readlink(path).startswith("pipe:"):
                    continue
                f = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                n = struct.unpack("i", fcntl.ioctl(f, termios.FIONREAD, b"\0\0\0\0"))[0]
            finally:
                os.close(f)
            if n >= nbytes:
                return
        time.sleep(0.1)
    raise AssertionError("pid %d never spliced its %d bytes into a pipe" % (pid, nbytes))


def check_migrate_that_leaves_pages_records_partial(d, nodes):
    """migrate_pages(2) with pages the kernel cannot move, in both modes — through the privileged
    helper (the suite's daemon) and in one process (a second daemon, --user root): the job records
    the kernel's count of them (pages_not_moved > 0) and status partial, reason not_moved; the
    rest of the mapping moved. (Before, the helper's count was dropped: 0 and ok.)"""
    notes = ["helper: " + migrate_partial(d, nodes)]
    one = Daemon(user="root")
    one.start(timeout=60)
    try:
        notes.append("in-process: " + migrate_partial(one, nodes))
    finally:
        eq(one.stop(), 0, "the --user root daemon's exit")
        one.cleanup()
    return "; ".join(notes)


def migrate_partial(d, nodes):
    src, dst = 0, len(nodes) - 1
    r = d.request("POST", "/v1/processes", body={"argv": ["/usr/bin/python3", "-c", PINNER, str(CHILD_MB)],
                                                 "policy": {"mode": "preferred", "nodes": str(src)},
                                                 "thp": "disable"})
    expect(r.status == 201, "launch: %r" % r)
    c = r.json
    try:
        _, counts = child_mapping(c["pid"])
        eq(set(counts), {src}, "pages before the migration")
        pipe_holds(c["pid"], PINNED * 4096)
        r = d.request("POST", "/v1/processes/%d/migrate" % c["pid"],
                      body={"from": str(src), "to": str(dst), "start_time": c["start_time"]})
        expect(r.status == 202, "migrate: %r" % r)
        job = wait_job(d, r.json["id"])
        res = job.get("result") or {}
        eq((job["status"], job.get("reason")), ("partial", "not_moved"),
           "the job with pinned pages (%s, %r)" % (job.get("error"), res.get("pages_not_moved")))
        expect(res["pages_not_moved"] >= 1, "pages_not_moved %r" % res["pages_not_moved"])
        _, counts = child_mapping(c["pid"])
        expect(counts.get(src, 0) >= 1 and counts.get(dst, 0) >= 1,
               "some pages stayed on %d, the rest moved to %d: %r" % (src, dst, counts))
        return "%d pages not moved, %r after" % (res["pages_not_moved"], counts)
    finally:
        kill(c["pid"])


CG = "/sys/fs/cgroup"


def placement_of_mapping(d, pid, policy_prefix=None):
    """The daemon's view of the child's big mapping: {node: pages}, and the whole answer."""
    r = ok_json(d.get("/v1/processes/%d" % pid), "GET /v1/processes/%d" % pid)
    want = CHILD_MB << 8
    for m in r["mappings"]:
        if m["kind"] == "anon" and m["pages"] == want and (policy_prefix is None or m["policy"].startswith(policy_prefix)):
            return {int(k): v for k, v in m["nodes"].items()}, r
    raise AssertionError("the daemon shows no %d-page anonymous mapping of pid %d" % (want, pid))


def check_cgroup_mems_confine_a_process_started_in_it(d, nodes):
    """cgroup v2: a cgroup made here, its cpuset.mems set through the API to the last node; a
    program started in it writes 16 MiB, and the daemon's placement reader (checked against
    numa_maps) finds every page on that node. Then the mems move to node 0 and v2 migrates the
    pages there. Everything made is removed, the root's subtree_control restored."""
    n = len(nodes) - 1
    cg = CG + "/mpdvm"
    sc = real_file(CG + "/cgroup.subtree_control").split()
    if "cpuset" not in sc:
        real_write(CG + "/cgroup.subtree_control", "+cpuset")
    pid = None
    os.mkdir(cg)
    try:
        root = ok_json(d.get("/v1/cgroups"), "GET /v1/cgroups")
        eq((root["version"], root["mount"]), (2, "fs/cgroup"), "the guest's hierarchy")
        eq(root["mems_effective"], "0-%d" % n, "the root's effective mems")
        r = d.request("PUT", "/v1/cgroups/mpdvm", body={"mems": str(n)})
        eq(r.status, 200, "PUT mems: %r" % r)
        eq(real_file(cg + "/cpuset.mems.effective"), str(n), "cpuset.mems.effective")
        r = d.request("PUT", "/v1/cgroups/mpdvm", body={"mems": str(n + 1)})
        eq((r.status, r.json["code"]), (422, "nodes.not_in_topology"), "a node past the last")
        import subprocess
        p = subprocess.Popen(["/bin/sh", "-c", "echo $$ > %s/cgroup.procs && exec /usr/bin/python3 -c \"$0\" %d"
                              % (cg, CHILD_MB), CHILD])
        pid = p.pid
        _, counts = child_mapping(pid)
        eq(set(counts), {n}, "numa_maps: pages of a process in a cgroup with mems %d" % n)
        got, whole = placement_of_mapping(d, pid)
        eq(got, counts, "the daemon's per-node pages against numa_maps")
        eq(whole["mems_allowed"], str(n), "Mems_allowed_list as the daemon reads it")
        expect(any(x["node"] == n and x["total_bytes"] >= CHILD_MB << 20 for x in whole["nodes"]),
               "node %d holds the 16 MiB in the per-node table: %r" % (n, whole["nodes"]))
        if n > 0:
            r = d.request("PUT", "/v1/cgroups/mpdvm", body={"mems": "0"})
            eq(r.status, 200, "PUT mems 0: %r" % r)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                got, whole = placement_of_mapping(d, pid)
                if set(got) == {0}:
                    break
                time.sleep(0.2)
            eq(set(got), {0}, "v2 migrates the pages when mems change")
            eq(whole["mems_allowed"], "0", "Mems_allowed_list after the change")
        ops = ok_json(d.get("/v1/history?kind=cgroup.mems"), "history")["operations"]
        expect(len(ops) >= 1 and ops[0]["status"] == "ok", "cgroup.mems recorded: %r" % ops[:2])
        return "16 MiB on node %d, then moved to node 0" % n
    finally:
        if pid:
            kill(pid)
            os.waitpid(pid, 0)
        os.rmdir(cg)
        if "cpuset" not in sc:
            real_write(CG + "/cgroup.subtree_control", "-cpuset")


def check_placement_reader_on_an_interleaved_process(d, nodes):
    """The daemon's per-mapping counts equal numa_maps for pages spread over every node, and the
    per-node totals add up to the resident bytes."""
    k = len(nodes)
    c = launch(d, {"policy": {"mode": "interleave", "nodes": "0-%d" % (k - 1)}, "thp": "disable"}, "interleave")
    try:
        _, counts = child_mapping(c["pid"])
        got, whole = placement_of_mapping(d, c["pid"], "interleave")
        eq(got, counts, "the daemon's per-node pages against numa_maps")
        eq(sum(x["total_bytes"] for x in whole["nodes"]), whole["totals"]["resident_bytes"], "per-node sum")
        pol = [x for x in whole["policies"] if x["mode"] == "interleave"]
        eq(len(pol), 1, "one interleave policy")
        eq(pol[0]["locality"], 1.0, "every interleaved page on a node of the policy")
    finally:
        kill(c["pid"])


def injected_failure(d, nodes):
    """tests/vm/run --fault check: a check that fails, for the harness's own test."""
    eq(len(nodes), -1, "the number of nodes (failing on purpose)")


# -- probes (POST /v1/probes/{kind}): the seed experiments on a real multi-node kernel ---------------

def probe_job(d, kind, body, timeout=120):
    """Starts a probe and waits for its job; returns the job (asserted ok) and its one pass's result."""
    r = d.request("POST", "/v1/probes/" + kind, body=body)
    expect(r.status == 202 and r.json, "POST /v1/probes/%s %s: %r" % (kind, json.dumps(body), r))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = ok_json(d.get("/v1/jobs/%d" % r.json["id"]), "GET /v1/jobs/{id}")
        if j["status"] not in ("queued", "running"):
            break
        time.sleep(0.1)
    eq(j["status"], "ok", "probe %s job status (%s)" % (kind, j.get("error")))
    passes = j["result"]["passes"]
    eq(len(passes), 1, "probe %s passes" % kind)
    return j, passes[0]["result"]


def check_probe_thp_fault_preferred_remote_node(d, nodes):
    """Seed 000's fixed behaviour: THP faults from a CPU of node 0 under `preferred` node 1 take
    their huge pages from node 1 (the bug put them on the local node)."""
    thp = bracketed(real_file(THP + "/enabled"))
    try:
        if thp == "never":
            real_write(THP + "/enabled", "madvise")
        cpu = nodes[0]["cpus"][0]
        _, r = probe_job(d, "thp-fault", {"size": "32M", "loops": 2, "cpus": str(cpu),
                                           "policy": {"mode": "preferred", "nodes": "1"}})
        eq(r["ran_on"]["node"], 0, "the probe ran on node 0")
        eq(r["policy"], {"mode": "preferred", "nodes": "1"}, "the child's policy")
        eq(r["succeeded"] + r["failed"], r["tried"], "succeeded + failed = tried")
        expect(r["succeeded"] > 0, "no huge page at all: %r" % r)
        huge = {k: v["huge"] for k, v in r["nodes"].items() if v["huge"]}
        eq(huge, {"1": r["succeeded"]}, "huge pages per node (all on the preferred node 1)")
        eq(r["huge_on_policy_nodes"], r["succeeded"], "huge_on_policy_nodes")
        return "%d/%d huge pages on node 1 from cpu %d" % (r["succeeded"], r["tried"], cpu)
    finally:
        real_write(THP + "/enabled", thp)


def check_probe_remote_access_matrix(d, nodes):
    """Every (CPU node, memory node) pair is measured beside the kernel's distances (10 local, 20
    remote here). QEMU's TCG emulates no remote cost, so whether a difference is seen is decided
    against the spread of the local pairs themselves: remote counts as slower only when every
    remote pair is slower than the slowest local pair by 10 %; otherwise the check records that the
    emulator shows none. What it asserts: every pair with a CPU is measured, on the node it names."""
    _, r = probe_job(d, "remote-access", {"size": "8M", "passes": 1, "chase_steps": 1000000})
    n = len(nodes)
    eq(r["nodes"], list(range(n)), "nodes")
    eq(r["kernel_distance"], [[10 if i == j else 20 for j in range(n)] for i in range(n)], "kernel distances")
    local, remote = [], []
    for b in range(n):
        for a in range(n):
            lat = r["latency_ns"][b][a]
            if nodes[b]["ncpus"] == 0:
                eq(lat, None, "no measurement from CPU-less node %d" % b)
                continue
            expect(lat and lat > 0, "latency cpu node %d, memory node %d: %r" % (b, a, lat))
            eq(r["placed_pct"][b][a], 100.0, "buffer wholly on node %d" % a)
            eq(r["measured_distance"][b][b], 10.0, "measured distance local")
            (local if a == b else remote).append(lat)
    if min(remote) > 1.1 * max(local):
        return "remote slower than every local pair: %.0f-%.0f ns vs %.0f-%.0f ns" % (
            min(remote), max(remote), min(local), max(local))
    return "the emulator shows no remote cost (TCG): local %.0f-%.0f ns, remote %.0f-%.0f ns" % (
        min(local), max(local), min(remote), max(remote))


def check_experiment_seed_000_preferred_node_1_vs_local(d, nodes):
    """Seed 000 as an experiment: thp-fault from a CPU of node 0, arms `preferred` node 1 and
    `local`, in ABBA rounds. Node 1's allocations (numastat numa_hit) are the arms' difference: all
    of the region under preferred 1, next to none under local; the experiment says so at 95 %."""
    thp = bracketed(real_file(THP + "/enabled"))
    try:
        if thp == "never":
            real_write(THP + "/enabled", "madvise")
        cpu = str(nodes[0]["cpus"][0])
        body = {"arms": [{"name": "pref1", "policy": {"mode": "preferred", "nodes": "1"}, "cpus": cpu},
                         {"name": "local", "policy": {"mode": "local"}, "cpus": cpu}],
                "workload": {"probe": "thp-fault", "params": {"size": "16M", "loops": 1}},
                "rounds": 10, "warmup": 0, "seed": 0}
        r = d.request("POST", "/v1/experiments", body=body)
        expect(r.status == 202 and r.json, "POST /v1/experiments: %r" % r)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            j = ok_json(d.get("/v1/jobs/%d" % r.json["id"]), "GET /v1/jobs/{id}")
            if j["status"] not in ("queued", "running"):
                break
            time.sleep(0.2)
        eq(j["status"], "ok", "experiment status (%s)" % j.get("error"))
        cmps = {c["metric"]: c for c in j["result"]["comparisons"]}
        c = cmps.get("numastat.1.numa_hit")
        expect(c is not None, "no comparison of node 1's allocations: %s" % sorted(cmps))
        eq((c["baseline"], c["arm"]), ("pref1", "local"), "the comparison's arms")
        expect(c["different"] and c["median_diff_pct"] < -50, "local allocates far less on node 1: %r" % c)
        eq(bracketed(real_file(THP + "/enabled")), "madvise" if thp == "never" else thp, "thp.enabled as it was")
        return "node 1 numa_hit local vs preferred 1: %s" % c["verdict"]
    finally:
        real_write(THP + "/enabled", thp)


def check_experiment_seed_004_numa_balancing_on_vs_off(d, nodes):
    """Seed 004 as an experiment: numa-hinting (memory on node 0, threads on node 1) with
    numa.balancing 1 against 0, in ABBA rounds. What it asserts: the experiment ends ok with a
    verdict for the hinting counters and the time, and numa_balancing is as it was; the verdict
    itself is reported, not asserted (under TCG a second is little scanning)."""
    path = "/proc/sys/kernel/numa_balancing"
    before = real_file(path)
    body = {"arms": [{"name": "on", "knobs": {"numa.balancing": "1"}}, {"name": "off", "knobs": {"numa.balancing": "0"}}],
            "workload": {"probe": "numa-hinting", "params": {"size": "16M", "threads": 1, "duration_s": 1}},
            "rounds": 10, "warmup": 0, "seed": 0}
    try:
        r = d.request("POST", "/v1/experiments", body=body)
        expect(r.status == 202 and r.json, "POST /v1/experiments: %r" % r)
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            j = ok_json(d.get("/v1/jobs/%d" % r.json["id"]), "GET /v1/jobs/{id}")
            if j["status"] not in ("queued", "running"):
                break
            time.sleep(0.5)
        eq(j["status"], "ok", "experiment status (%s)" % j.get("error"))
        eq(real_file(path), before, "numa_balancing as it was")
        cmps = {c["metric"]: c for c in j["result"]["comparisons"]}
        expect("wall_s" in cmps, "a verdict on the time: %s" % sorted(cmps))
        hint = cmps.get("vmstat.numa_hint_faults")
        return "wall_s: %s; numa_hint_faults: %s" % (cmps["wall_s"]["verdict"],
                                                     hint["verdict"] if hint else "none in either arm")
    finally:
        real_write(path, before)

# -- profiles (issue 18): per-node pools and cgroup mems applied and verified; a crash mid-apply ------

def profile_daemon(text, *args):
    """A second daemon (the suite's has no profiles directory) with profile vm.conf = text."""
    top = tempfile.mkdtemp(prefix="mpd-vmprof-", dir=shared_tmp())
    os.chmod(top, 0o755)
    pdir = os.path.join(top, "profiles.d")
    os.mkdir(pdir)
    os.chmod(pdir, 0o755)
    with open(os.path.join(pdir, "vm.conf"), "w") as f:
        f.write(text)
    return Daemon(args=("--profiles-dir", pdir) + args), top


def activate(d, body, timeout=120):
    """POST /v1/profile: 202 with the profile.apply job; waits for it to end, returns it."""
    r = d.request("POST", "/v1/profile", body=body)
    expect(r.status == 202 and r.json, "POST /v1/profile %s: %r" % (json.dumps(body), r))
    return wait_job(d, r.json["id"], timeout)


def check_profile_applies_per_node_pools_and_cgroup_mems(d, nodes):
    """A profile with a different 2 MiB target on every node, the 1 GiB pool of the largest node
    left alone, a knob and a cgroup's mems: applied as one profile.apply, then verified in the
    kernel (each node's nr_hugepages, cpuset.mems.effective, the knob) and by GET /v1/profile (every
    key in_sync, its actual value). Everything is put back."""
    last = len(nodes) - 1
    want = {i: 2 + 3 * i for i in range(len(nodes))}              # 2, 5, 8, 11: every node different
    before = node_pools(nodes, 2048)
    defrag0 = bracketed(real_file(THP + "/defrag"))
    target = "defer" if defrag0 != "defer" else "madvise"
    cg = CG + "/mpdprof"
    sc = real_file(CG + "/cgroup.subtree_control").split()
    text = "[knobs]\nthp.defrag = %s\n[hugepages.2M]\n%s[cgroup mpdprof]\nmems = %d\n" % (
        target, "".join("node%d = %d\n" % (i, n) for i, n in want.items()), last)
    pd, top = profile_daemon(text)
    if "cpuset" not in sc:
        real_write(CG + "/cgroup.subtree_control", "+cpuset")
    os.mkdir(cg)
    try:
        pd.start(timeout=60)
        j = activate(pd, {"name": "vm"})
        eq(j["status"], "ok", "the apply: %r" % j)
        eq(node_pools(nodes, 2048), want, "per-node nr_hugepages in the kernel")
        eq(real_file(cg + "/cpuset.mems.effective"), str(last), "cpuset.mems.effective")
        eq(bracketed(real_file(THP + "/defrag")), target, "thp.defrag")
        p = ok_json(pd.get("/v1/profile"), "GET /v1/profile")
        eq((p["name"], p["state"]), ("vm", "applied"), "the profile state")
        keys = {k["key"]: k for k in p["keys"]}
        for i, n in want.items():
            k = keys["hugepages.2M.node%d" % i]
            eq((k["verdict"], k["actual"]), ("in_sync", str(n)), "hugepages.2M.node%d" % i)
        eq(keys["cgroup[mpdprof].mems"]["verdict"], "in_sync", "the cgroup's mems")
        eq(keys["thp.defrag"]["verdict"], "in_sync", "thp.defrag")
        return "%d nodes: pools %s, mems %d" % (len(nodes), want, last)
    finally:
        pd.cleanup()
        shutil.rmtree(top, ignore_errors=True)
        restore_pools(2048, before)
        real_write(THP + "/defrag", defrag0)
        os.rmdir(cg)
        if "cpuset" not in sc:
            real_write(CG + "/cgroup.subtree_control", "-cpuset")


def check_profile_foreign_per_node_pool_write_attributed_and_restored(d, nodes):
    """A profile with a 2 MiB target on the last node only (the 4-node guest's CPU-less one),
    on-drift = restore: sh writes that node's own nr_hugepages file and stays until the drift is
    recorded. The profile.drift row names the key, the shell (pid, comm, uid) as the cause and
    `restored`; the kernel's pool is the target again and the other nodes' pools are untouched.
    The daemon's apply and restore writes are no drift: exactly one row."""
    import subprocess
    last = len(nodes) - 1
    key = "hugepages.2M.node%d" % last
    path = HP_NODE % (last, 2048)
    before = node_pools(nodes, 2048)
    want = before[last] + 6                   # grown by the apply, whatever the node held
    foreign = before[last] + 2                # the shell's value: neither the target nor the old one
    pd, top = profile_daemon("[profile]\non-drift = restore\n[hugepages.2M]\nnode%d = %d\n" % (last, want))
    sh = None
    try:
        pd.start(timeout=60)
        j = activate(pd, {"name": "vm"})
        eq(j["status"], "ok", "the apply: %r" % j)
        eq(node_pools(nodes, 2048)[last], want, "node%d's pool after the apply" % last)
        deadline = time.monotonic() + 60
        while "drift watcher: 1 managed keys, 1 with a mark" not in pd.log_text():
            expect(time.monotonic() < deadline, "the watcher did not mark the pool file:\n" + pd.log_text())
            time.sleep(0.01)
        drifts = lambda: ok_json(pd.get("/v1/profile/drift?key=" + key), "GET /v1/profile/drift")["drifts"]
        eq(drifts(), [], "drift rows before the foreign write (the apply's own writes)")
        sh = subprocess.Popen(["sh", "-c", "echo %d > %s && echo written && read _" % (foreign, path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        eq(sh.stdout.readline().strip(), "written", "sh wrote")
        t0 = time.monotonic()
        while not [r for r in drifts() if r["action"] == "restored"]:
            expect(time.monotonic() - t0 < 60, "no restored drift row for %s: %r" % (key, drifts()))
            time.sleep(0.01)
        took = time.monotonic() - t0
        rows = drifts()
        eq(len(rows), 1, "drift rows for %s (the restore write is no second drift): %r" % (key, rows))
        row = rows[0]
        w = row["result"]["writer"] or {}
        eq((row["drift"]["key"], row["drift"]["expected"], row["result"]["actual"]), (key, [str(want)], str(foreign)),
           "the drift row's key, expected and actual")
        eq((row["action"], row["result"]["cause"], w.get("pid"), w.get("comm"), w.get("uid")),
           ("restored", "process", sh.pid, "sh", 0), "the drift row's action and writer")
        eq(node_pools(nodes, 2048)[last], want, "node%d's pool put back" % last)
        eq({i: v for i, v in node_pools(nodes, 2048).items() if i != last},
           {i: v for i, v in before.items() if i != last}, "the other nodes' pools")
        return "node%d: sh pid %d recorded, pool put back to %d (%.0f ms)" % (last, sh.pid, want, took * 1000)
    finally:
        if sh:
            sh.stdin.close()
            sh.wait()
        pd.cleanup()
        shutil.rmtree(top, ignore_errors=True)
        restore_pools(2048, before)


def check_profile_crash_mid_apply_completed_at_next_start(d, nodes):
    """SIGKILL between writes, no sleep: a child holds the last node's 2 MiB pages in use, so the
    profile's shrink of that pool to 0 cannot end (the kernel keeps them as surplus) and the apply,
    its knob written, retries until its deadline. Killed there; the knob put back as a reboot
    would, the pages let go; the next daemon (no --profile) marks the job interrupted and applies
    the profile again before it is ready: the knob and the pool reach the profile's values."""
    import signal
    import subprocess
    last = len(nodes) - 1
    held = 4
    before = node_pools(nodes, 2048)
    defrag0 = bracketed(real_file(THP + "/defrag"))
    target = "defer" if defrag0 != "defer" else "madvise"
    pd, top = profile_daemon("[knobs]\nthp.defrag = %s\n[hugepages.2M]\nnode%d = 0\n" % (target, last))
    child = None
    try:
        real_write(HP_NODE % (last, 2048), str(held))
        eq(node_pools(nodes, 2048)[last], held, "node%d's pool grown by hand" % last)
        child = subprocess.Popen(["/usr/bin/numactl", "--membind=%d" % last, "--", sys.executable,
                                  os.path.join(HERE_E2E, "placement_child.py"), "hugetlb:%d" % held],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = child.stdout.readline()
        expect("hugetlb" in json.loads(line), "the child holds the pages: %r" % line)
        pd.start(timeout=60)
        r = pd.request("POST", "/v1/profile", body={"name": "vm", "deadline_ms": 600000})
        expect(r.status == 202, "POST /v1/profile: %r" % r)
        job = r.json["id"]
        deadline = time.monotonic() + 60
        while bracketed(real_file(THP + "/defrag")) != target:
            expect(time.monotonic() < deadline, "the apply's knob write")
            time.sleep(0.02)
        eq(ok_json(pd.get("/v1/jobs/%d" % job), "the job")["status"], "running", "the job mid-apply")
        eq(node_pools(nodes, 2048)[last], held, "node%d's pool under the child" % last)
        pd.proc.send_signal(signal.SIGKILL)
        pd.proc.wait(30)
        pd.proc = None
        real_write(THP + "/defrag", defrag0)
        child.stdin.close()
        child.wait(30)
        child = None
        pd.start(timeout=120)
        deadline = time.monotonic() + 120
        while " ended: " not in pd.log_text():
            expect(time.monotonic() < deadline, "the start-time apply to end:\n" + pd.log_text())
            time.sleep(0.05)
        eq(ok_json(pd.get("/v1/jobs/%d" % job), "the killed job")["status"], "interrupted", "the killed job")
        # The job's row follows the state it installed (the runner records the end after run()).
        deadline = time.monotonic() + 30
        while True:
            jobs = pd.sql("SELECT source, status FROM jobs WHERE kind = 'profile.apply' ORDER BY id")
            if jobs == [("api", "interrupted"), ("start", "ok")] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        eq(jobs, [("api", "interrupted"), ("start", "ok")], "the profile.apply jobs")
        eq(bracketed(real_file(THP + "/defrag")), target, "thp.defrag after the next start")
        eq(node_pools(nodes, 2048)[last], 0, "node%d's pool after the next start" % last)
        eq(ok_json(pd.get("/v1/profile"), "GET /v1/profile")["state"], "applied", "the profile state")
        return "job %d interrupted, completed by the next start" % job
    finally:
        if child:
            child.kill()
            child.wait()
        pd.cleanup()
        shutil.rmtree(top, ignore_errors=True)
        restore_pools(2048, before)
        real_write(THP + "/defrag", defrag0)


# Last, so that it covers everything above: no WARN, no oops, nothing else that taints the kernel.
def check_kernel_not_tainted(d, nodes):
    eq(real_file("/proc/sys/kernel/tainted"), "0", "/proc/sys/kernel/tainted")


def main():
    nodes = json.loads(os.environ["MPD_VM_NODES"])
    pattern = os.environ.get("MPD_VM_PATTERN", "")
    checks = [(name[6:], f) for name, f in globals().items()
              if name.startswith("check_") and callable(f) and pattern in name]
    if os.environ.get("MPD_VM_FAULT") == "check":
        checks.append(("injected_failure", injected_failure))
    failed = 0
    d = Daemon()
    try:
        d.start(timeout=60)
    except Exception as e:
        print("RESULT daemon_start FAIL 0.0s %s" % str(e).splitlines()[0])
        for line in str(e).splitlines()[1:]:
            print("DETAIL " + line)
        return 1
    for name, f in checks:
        t0 = time.monotonic()
        try:
            note = f(d, nodes)
            print("RESULT %s PASS %.2fs%s" % (name, time.monotonic() - t0, " " + note if note else ""), flush=True)
        except Exception as e:
            failed += 1
            msg = (str(e) or type(e).__name__).splitlines()[0]
            print("RESULT %s FAIL %.2fs %s" % (name, time.monotonic() - t0, msg), flush=True)
            for line in traceback.format_exc().splitlines():
                print("DETAIL " + line)
            if d.proc and d.proc.poll() is not None:   # a crashed daemon: log it, restart it for the rest
                for line in d.log_text().splitlines()[-30:]:
                    print("DETAIL daemon: " + line)
                d.start(timeout=60)
    t0 = time.monotonic()
    rc = d.stop()
    ok = rc == 0
    if not ok:
        for line in d.log_text().splitlines()[-30:]:
            print("DETAIL daemon: " + line)
    d.cleanup()
    print("RESULT daemon_clean_exit %s %.2fs%s" % ("PASS" if ok else "FAIL", time.monotonic() - t0,
                                                   "" if ok else " mempolicyd exited with %s" % rc))
    return 1 if failed or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
