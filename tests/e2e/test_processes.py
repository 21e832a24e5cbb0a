"""GET /v1/processes/{pid} and /samples against the real kernel: processes made by
placement_child.py with the real syscalls (MADV_HUGEPAGE, MAP_HUGETLB, mbind in every mode this
kernel has), read back through the daemon and compared with what the test reads from /proc itself;
who may read which process; samples recorded in history; and every bad input refused with the
right problem, the database untouched. Every answer is checked against schema/openapi.yaml."""
import json
import os
import pwd
import socket
import subprocess
import sys
import time
import unittest

from lib import USER_CWD, Daemon, HeldProgram, Response, real_file, real_write, shared_copy
from test_openapi import SpecDaemonTest, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "placement_child.py")
NR_2M = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"

MPOL_DEFAULT, MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE, MPOL_LOCAL = 0, 1, 2, 3, 4
MPOL_PREFERRED_MANY, MPOL_WEIGHTED_INTERLEAVE = 5, 6
F_STATIC, F_RELATIVE, F_BALANCING = 1 << 15, 1 << 14, 1 << 13


class Child:
    """placement_child.py with specs, alive until stop(); regions = {name: start hex}."""

    def __init__(self, *specs, user=None):
        # another user's child runs a copy it may read, from a directory it may enter
        cmd = [sys.executable, shared_copy("placement_child.py") if user else CHILD] + list(specs)
        if user:
            gid = str(pwd.getpwnam(user).pw_gid)
            cmd = ["setpriv", "--reuid", user, "--regid", gid, "--clear-groups", "--"] + cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  cwd=USER_CWD if user else None)
        line = self.p.stdout.readline()
        if not line:
            self.p.wait(10)
            raise AssertionError("placement_child.py %s failed (exit %s)" % (specs, self.p.returncode))
        self.regions = json.loads(line)
        self.pid = self.p.pid

    def proc(self, name):
        with open("/proc/%d/%s" % (self.pid, name)) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(10)


def start_time(pid):
    stat = real_file("/proc/%d/stat" % pid)
    return int(stat[stat.rindex(")") + 2:].split()[19])


def mapping_at(placement, start):
    for m in placement["mappings"]:
        if m["start"] == start:
            return m
    raise AssertionError("no mapping starts at %s" % start)


class ProcessPlacementReal(SpecDaemonTest):
    tree_factory = None   # the real /proc and /sys

    def child(self, *specs, user=None):
        c = Child(*specs, user=user)
        self.addCleanup(c.stop)
        return c

    def test_every_policy_mode_this_kernel_has_reads_back(self):
        """mbind in every mode and flag: the daemon reports the mode, flags and nodes the kernel
        applied, all 16 pages on node 0 (the only node here, or the named one), locality 1."""
        node = 0
        cases = [("bind", MPOL_BIND, 0, "bind", [], "0"),
                 ("pref", MPOL_PREFERRED, 0, "preferred", [], "0"),
                 ("il", MPOL_INTERLEAVE, 0, "interleave", [], "0"),
                 ("loc", MPOL_LOCAL, 0, "local", [], None),
                 ("pm", MPOL_PREFERRED_MANY, 0, "preferred-many", [], "0"),
                 ("wi", MPOL_WEIGHTED_INTERLEAVE, 0, "weighted-interleave", [], "0"),
                 ("st", MPOL_BIND, F_STATIC, "bind", ["static"], "0"),
                 ("rel", MPOL_INTERLEAVE, F_RELATIVE, "interleave", ["relative"], "0"),
                 ("bal", MPOL_BIND, F_BALANCING, "bind", ["balancing"], "0")]
        specs = ["policy:%s:%d:%d:%s" % (n, mode, flags, "" if want is None else node)
                 for n, mode, flags, _, _, want in cases]
        c = self.child(*specs)
        numa_maps = c.proc("numa_maps")
        p = self.call("GET", "/v1/processes/%d" % c.pid).json
        seen = 0
        for name, _, _, mode, flags, nodes in cases:
            with self.subTest(mode=name):
                if isinstance(c.regions[name], dict):
                    continue   # the kernel has no such mode (EINVAL): nothing to read back
                m = mapping_at(p, c.regions[name])
                line = [l for l in numa_maps.splitlines() if l.startswith(c.regions[name] + " ")][0]
                self.assertIn(m["policy"], line)     # the kernel's own text, spaces and all
                pol = [x for x in p["policies"] if x["policy"] == m["policy"]][0]
                self.assertEqual((pol["mode"], pol["flags"], pol["nodes"]), (mode, flags, nodes))
                self.assertEqual(m["pages"], 16)
                self.assertEqual(m["page_size_kb"], 4)
                self.assertEqual(m["nodes"], {str(node): 16})
                self.assertEqual(m["locality"], None if nodes is None else 1.0)
                self.assertEqual(m["end"], "%x" % (int(m["start"], 16) + (64 << 10)))
                seen += 1
        self.assertGreaterEqual(seen, 6)   # 6.18 and 6.1 both have bind..preferred-many
        self.assertEqual(p["locality"]["share"], 1.0)
        self.assertEqual(p["mems_allowed"], real_file("/proc/%d/status" % c.pid).split("Mems_allowed_list:")[1].split()[0])

    def test_thp_region_is_seen_as_thp(self):
        """An 8 MiB MADV_HUGEPAGE region, touched: the daemon's THP equals the kernel's own
        AnonHugePages (smaps_rollup), on the node that holds the mapping."""
        if "[never]" in real_file(THP_ENABLED):
            old = real_file(THP_ENABLED)
            real_write(THP_ENABLED, "madvise")
            self.addCleanup(real_write, THP_ENABLED, old[old.index("[") + 1:old.index("]")])
        c = self.child("thp:8")
        rollup_kb = int(c.proc("smaps_rollup").split("AnonHugePages:")[1].split()[0])
        if rollup_kb == 0:
            self.skipTest("the kernel gave no huge page to the MADV_HUGEPAGE region (fragmented memory)")
        p = self.call("GET", "/v1/processes/%d" % c.pid).json
        self.assertTrue(p["totals"]["smaps_read"])
        self.assertEqual(p["totals"]["thp_bytes"], rollup_kb * 1024)
        self.assertEqual(p["totals"]["rollup_thp_bytes"], rollup_kb * 1024)
        m = mapping_at(p, c.regions["thp"])
        self.assertEqual(m["pages"], 2048)            # counted in base pages, 512 per THP
        self.assertGreaterEqual(m["thp_bytes"], 2 << 20)
        node = [n for n in p["nodes"] if str(n["node"]) in m["nodes"]][0]
        self.assertGreaterEqual(node["thp_bytes"], m["thp_bytes"])
        self.assertEqual(sum(n["thp_bytes"] for n in p["nodes"]) + p["totals"]["thp_unattributed_bytes"],
                         p["totals"]["thp_bytes"])
        self.assertEqual(p["totals"]["base_bytes"] + p["totals"]["thp_bytes"] + p["totals"]["hugetlb_bytes"],
                         p["totals"]["resident_bytes"])

    def test_hugetlb_pages_at_their_own_size(self):
        """Four 2 MiB hugetlb pages from the 2M pool (grown for the test and put back): pages
        counted 1 each at 2048 kB, per node, never as base pages."""
        before = int(real_file(NR_2M))
        self.addCleanup(real_write, NR_2M, str(before))
        real_write(NR_2M, str(before + 4))
        if int(real_file(NR_2M)) < before + 4:
            self.skipTest("the kernel could not grow the 2M pool by 4 pages")
        c = self.child("hugetlb:4")
        self.addCleanup(c.stop)   # before the pool is shrunk (cleanups run last-in first-out)
        p = self.call("GET", "/v1/processes/%d" % c.pid).json
        m = mapping_at(p, c.regions["hugetlb"])
        self.assertTrue(m["huge"])
        self.assertEqual(m["page_size_kb"], 2048)
        self.assertEqual(m["pages"], 4)
        self.assertEqual(m["bytes"], 8 << 20)
        self.assertEqual(m["thp_bytes"], 0)
        self.assertEqual(p["totals"]["hugetlb_bytes"], 8 << 20)
        per_node = {str(n["node"]): n["hugetlb"]["2M"]["pages"] for n in p["nodes"] if "2M" in n["hugetlb"]}
        self.assertEqual(per_node, {k: v for k, v in m["nodes"].items()})
        self.assertEqual(sum(per_node.values()), 4)

    def test_mappings_with_nothing_resident_and_without_the_list(self):
        c = self.child("untouched:64", "anon:64")
        p = self.call("GET", "/v1/processes/%d" % c.pid).json
        m = mapping_at(p, c.regions["untouched"])
        self.assertEqual((m["pages"], m["page_size_kb"], m["nodes"], m["bytes"]), (0, 0, {}, 0))
        self.assertEqual(p["totals"]["mappings"], len(p["mappings"]))
        self.assertEqual(p["totals"]["mappings"], len(c.proc("numa_maps").splitlines()))
        short = self.call("GET", "/v1/processes/%d?mappings=false" % c.pid).json
        self.assertNotIn("mappings", short)
        self.assertEqual(short["nodes"], p["nodes"])
        self.assertEqual(short["start_time"], start_time(c.pid))

    def test_a_sample_is_an_operation_and_samples_are_its_history(self):
        c = self.child("anon:256")
        ids = []
        for _ in range(3):
            r = self.call("GET", "/v1/processes/%d?sample=true&mappings=false" % c.pid).json
            ids.append(r["operation_id"])
        op = self.call("GET", "/v1/history/%d" % ids[-1]).json
        self.assertEqual(op["kind"], "process.sample")
        self.assertEqual(op["request"], {"pid": c.pid, "start_time": start_time(c.pid)})
        self.assertEqual(op["actor"]["uid"], 0)
        self.assertEqual(op["result"]["nodes"], r["nodes"])
        self.assertNotIn("mappings", op["result"])
        s = self.call("GET", "/v1/processes/%d/samples" % c.pid).json
        self.assertEqual([x["operation_id"] for x in s["samples"]], ids)
        self.assertEqual(s["start_time"], start_time(c.pid))
        s = self.call("GET", "/v1/processes/%d/samples?limit=2" % c.pid).json
        self.assertEqual([x["operation_id"] for x in s["samples"]], ids[1:])
        # Once the process is gone its samples are still found by pid (the last one sampled) ...
        st = start_time(c.pid)
        c.stop()
        s = self.call("GET", "/v1/processes/%d/samples" % c.pid).json
        self.assertEqual((s["start_time"], len(s["samples"])), (st, 3))
        # ... and another start time with this pid has none.
        s = self.call("GET", "/v1/processes/%d/samples?start_time=%d" % (c.pid, st + 1)).json
        self.assertEqual(s["samples"], [])
        self.call("GET", "/v1/processes/%d" % c.pid, status=404)

    def test_a_launch_watch_records_placement_samples(self):
        """POST /v1/processes with watch: each sample while the program runs is its placement,
        read back through /samples; under bind:0 the task policy governs every mapping."""
        # it runs until three samples are recorded, then exits: counts, not a lifetime's worth
        held = HeldProgram(self.d.dir)
        r = self.d.request("POST", "/v1/processes", body={"argv": held.argv, "policy": {"mode": "bind", "nodes": "0"},
                                                          "watch": {"interval_ms": 200}})
        self.assertEqual(r.status, 201, r.raw)
        pid, st = r.json["pid"], r.json["start_time"]

        def recorded():
            return self.call("GET", "/v1/processes/%d/samples?start_time=%d" % (pid, st)).json["samples"]
        deadline = time.monotonic() + 30
        while len(recorded()) < 3:
            self.assertLess(time.monotonic(), deadline, "fewer than 3 samples in 30 s")
            time.sleep(0.05)
        held.release()
        while not ((samples := recorded()) and "exited" in samples[-1]["result"]):
            self.assertLess(time.monotonic(), deadline, "no exit sample: %s" % samples)
            time.sleep(0.05)
        running = [x["result"] for x in samples if "exited" not in x["result"]]
        # The sample taken as the program ends may find it a zombie already (numa_maps of a
        # zombie is empty): that one says so (placement_error) instead of a placement. Any other
        # must be the placement.
        if running and "placement_error" in running[-1]:
            running = running[:-1]
        self.assertGreaterEqual(len(running), 2, samples)
        for res in running:
            self.assertEqual((res["pid"], res["start_time"]), (pid, st))
            self.assertGreater(res["totals"]["resident_bytes"], 0)
            self.assertEqual([p["mode"] for p in res["policies"]], ["bind"])
            self.assertEqual(res["locality"]["share"], 1.0)

    def test_cli_proc_show_and_watch(self):
        """The tables say what the API says: the node row and its THP, every policy, and one row
        per recorded sample; --json is the API's answer."""
        c = self.child("anon:512", "policy:b:%d:0:0" % MPOL_BIND)
        api = self.call("GET", "/v1/processes/%d?mappings=false" % c.pid).json
        p = self.d.ctl("proc", "show", str(c.pid))
        self.assertEqual(p.returncode, 0, p.stderr)
        # the start as a wall-clock time, and the clock ticks --start-time takes
        self.assertRegex(p.stdout, r"process %d \(python3\), started at 20\d\d-\d\d-\d\dT[0-9:.]+Z \(start time %d\)"
                         % (c.pid, start_time(c.pid)))
        self.assertRegex(p.stdout, r"(?m)^NODE\s+BASE\s+THP\s+TOTAL")
        self.assertRegex(p.stdout, r"(?m)^bind:0\s+1\s+64 KiB\s+100\.0%")
        for n in api["nodes"]:
            self.assertRegex(p.stdout, r"(?m)^%d\s" % n["node"])
        p = self.d.ctl("proc", "show", str(c.pid), "--mappings")
        self.assertIn(c.regions["b"], p.stdout)
        j = self.d.ctl("--json", "proc", "show", str(c.pid))
        self.assertEqual(json.loads(j.stdout)["nodes"], self.call("GET", "/v1/processes/%d?mappings=false" % c.pid).json["nodes"])
        for _ in range(3):
            self.call("GET", "/v1/processes/%d?sample=true&mappings=false" % c.pid)
        p = self.d.ctl("proc", "watch", str(c.pid))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("%d samples" % 3, p.stdout)
        self.assertEqual(len([l for l in p.stdout.splitlines() if l.startswith("20")]), 3)
        p = self.d.ctl("proc", "show", str(c.pid), "--start-time", str(start_time(c.pid) + 1))
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("(process.changed)", p.stderr)

    def test_bad_input_is_refused_and_changes_nothing(self):
        c = self.child("anon:64")
        st = start_time(c.pid)
        db = self.d.db_snapshot()
        for url, status, code in (
                ("/v1/processes/abc", 400, "process.bad_pid"),
                ("/v1/processes/0", 400, "process.bad_pid"),
                ("/v1/processes/-1", 400, "process.bad_pid"),
                ("/v1/processes/+1", 400, "process.bad_pid"),
                ("/v1/processes/%%20%d" % c.pid, 400, "process.bad_pid"),
                ("/v1/processes/%d%%00" % c.pid, 400, "request.bad_path"),
                ("/v1/processes/%d%%0A" % c.pid, 400, "request.bad_path"),
                ("/v1/processes/4194305", 400, "process.bad_pid"),
                ("/v1/processes/99999999999999999999999", 400, "process.bad_pid"),
                ("/v1/processes/4194304", 404, "process.not_found"),
                ("/v1/processes/%d?start_time=%d&sample=true" % (c.pid, st + 1), 409, "process.changed"),
                ("/v1/processes/%d?start_time=0" % c.pid, 400, "request.bad_query"),
                ("/v1/processes/%d?start_time=-5" % c.pid, 400, "request.bad_query"),
                ("/v1/processes/%d?mappings=maybe" % c.pid, 400, "request.bad_query"),
                ("/v1/processes/%d?sample=2" % c.pid, 400, "request.bad_query"),
                ("/v1/processes/%d?pid=1" % c.pid, 400, "request.unknown_query"),
                ("/v1/processes/%d/samples?limit=0" % c.pid, 400, "request.bad_query"),
                ("/v1/processes/%d/samples?limit=10001" % c.pid, 400, "request.bad_query"),
                ("/v1/processes/x/samples", 400, "process.bad_pid")):
            with self.subTest(url=url):
                r = self.call("GET", url, status=status)
                self.assertProblem(r, status, code)
        self.assertEqual(self.d.db_snapshot(), db)

    def test_a_process_that_has_exited_is_not_found(self):
        """A zombie (exited, not yet reaped) has no memory to place: 404, like a pid that is gone,
        and nothing is recorded even with sample=true."""
        p = subprocess.Popen(["true"])
        deadline = time.monotonic() + 10
        while "State:\tZ" not in real_file("/proc/%d/status" % p.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.addCleanup(p.wait)
        db = self.d.db_snapshot()
        r = self.call("GET", "/v1/processes/%d?sample=true" % p.pid, status=404)
        self.assertProblem(r, 404, "process.not_found")
        self.assertEqual(self.d.db_snapshot(), db)


OUTSIDER = "mpdtest-procreader"

AS_USER = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from lib import UnixHTTPConnection
out = []
for path in json.load(sys.stdin):
    c = UnixHTTPConnection(sys.argv[1])
    c.request("GET", path)
    r = c.getresponse(); raw = r.read()
    out.append([r.status, json.loads(raw).get("code")])
    c.close()
print(json.dumps(out))
"""


class WhoMayReadAProcess(unittest.TestCase):
    """Root reads any process; another user only its own; over TCP nobody. The rule relied on is
    the uid part of the kernel's PTRACE_MODE_READ check, which guards numa_maps itself."""

    @classmethod
    def setUpClass(cls):
        subprocess.run(["userdel", OUTSIDER], capture_output=True)
        subprocess.run(["useradd", "-M", "-N", "-g", "nogroup", OUTSIDER], check=True, capture_output=True)
        cls.port = free_port()
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="mpd-proc-auth-")
        os.chmod(cls.tmp, 0o755)
        cls.d = Daemon(None, ["--listen-tcp", "127.0.0.1:%d" % cls.port], workdir=cls.tmp).start()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.d.cleanup()
        finally:
            subprocess.run(["userdel", OUTSIDER], capture_output=True)
            import shutil
            shutil.rmtree(cls.tmp, ignore_errors=True)
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, cls.d.last_log))

    def as_user(self, paths):
        gid = str(pwd.getpwnam(OUTSIDER).pw_gid)
        p = subprocess.run(["setpriv", "--reuid", OUTSIDER, "--regid", gid, "--clear-groups", "--",
                            sys.executable, "-c", AS_USER, self.d.socket, os.path.dirname(shared_copy("lib.py"))],
                           input=json.dumps(paths), capture_output=True, text=True, timeout=60, cwd=USER_CWD)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_own_process_yes_someone_elses_no(self):
        mine = Child("anon:64", user=OUTSIDER)
        self.addCleanup(mine.stop)
        roots = Child("anon:64")
        self.addCleanup(roots.stop)
        db = self.d.db_snapshot()
        got = self.as_user(["/v1/processes/%d" % mine.pid, "/v1/processes/%d" % roots.pid,
                            "/v1/processes/%d?sample=true" % roots.pid])
        self.assertEqual(got[0], [200, None])
        self.assertEqual(got[1], [403, "auth.forbidden"])
        self.assertEqual(got[2], [403, "auth.forbidden"])
        self.assertEqual(self.d.db_snapshot(), db)
        # root reads both
        for pid in (mine.pid, roots.pid):
            self.assertEqual(self.d.get("/v1/processes/%d" % pid).status, 200)
        # and the user's own sample is recorded with the user as the actor
        got = self.as_user(["/v1/processes/%d?sample=true&mappings=false" % mine.pid])
        self.assertEqual(got[0][0], 200)
        op = self.d.get("/v1/history?kind=process.sample&limit=1").json["operations"][0]
        self.assertEqual(op["actor"]["name"], OUTSIDER)

    def test_nobody_over_tcp(self):
        c = Child("anon:64")
        self.addCleanup(c.stop)
        import http.client
        h = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h.request("GET", "/v1/processes/%d" % c.pid)
        r = h.getresponse()
        body = json.loads(r.read())
        h.close()
        self.assertEqual((r.status, body["code"]), (403, "auth.forbidden"))


if __name__ == "__main__":
    unittest.main()
