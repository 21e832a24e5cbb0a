"""GET /v1/topology: the real machine compared with /sys directly, and a generated 4-node tree
with a CPU-less node for what this machine cannot show."""
import os

from faketree import FakeTree
from lib import DaemonTest, real_file

NODE = "/sys/devices/system/node"


def parse_list(text):
    out = []
    for part in filter(None, text.strip().split(",")):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def size_name(kb):
    for unit, div in (("G", 1 << 20), ("M", 1 << 10)):
        if kb % div == 0:
            return "%d%s" % (kb // div, unit)
    return "%dkB" % kb


def meminfo_kb(path, key):
    with open(path) as f:
        for line in f:
            t = line.split()
            if t[2] == key + ":":
                return int(t[3])
    raise KeyError(key)


class RealTopologyTest(DaemonTest):
    def test_matches_sysfs(self):
        r = self.d.get("/v1/topology")
        self.assertEqual(r.status, 200, r.raw)
        t = r.json
        online = parse_list(real_file(NODE + "/online"))
        self.assertEqual(t["online"], real_file(NODE + "/online"))
        self.assertEqual(t["possible"], real_file(NODE + "/possible"))
        self.assertEqual(t["node_count"], len(online))
        self.assertEqual([n["id"] for n in t["nodes"]], online)
        has_cpu = parse_list(real_file(NODE + "/has_cpu"))
        for i, n in enumerate(t["nodes"]):
            d = "%s/node%d" % (NODE, n["id"])
            self.assertEqual(n["cpus"], parse_list(real_file(d + "/cpulist")))
            self.assertEqual(n["has_cpu"], n["id"] in has_cpu)
            row = [int(x) for x in real_file(d + "/distance").split()]
            self.assertEqual(n["distances"], {str(m): row[j] for j, m in enumerate(online)})
            self.assertEqual(n["memory_total_bytes"], meminfo_kb(d + "/meminfo", "MemTotal") * 1024)
            self.assertGreater(n["memory_free_bytes"], 0)
            self.assertLessEqual(n["memory_free_bytes"], n["memory_total_bytes"])
            hp = d + "/hugepages"
            kbs = sorted(int(e[len("hugepages-"):-2]) for e in os.listdir(hp)) if os.path.isdir(hp) else []
            self.assertEqual(n["hugepage_sizes"], [size_name(kb) for kb in kbs])

    def test_unknown_query_and_wrong_method(self):
        self.assertProblem(self.d.get("/v1/topology?verbose=1"), 400, "request.unknown_query")
        self.assertProblem(self.d.request("POST", "/v1/topology", body={}), 405)


class FakeTopologyTest(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4, cpuless=(3,)))

    def test_four_nodes_with_a_cpuless_one(self):
        r = self.d.get("/v1/topology")
        self.assertEqual(r.status, 200, r.raw)
        t = r.json
        self.assertEqual(t["node_count"], 4)
        self.assertEqual((t["online"], t["possible"]), ("0-3", "0-3"))
        nodes = {n["id"]: n for n in t["nodes"]}
        self.assertEqual(sorted(nodes), [0, 1, 2, 3])
        for n in range(4):
            self.assertEqual(nodes[n]["cpus"], self.tree.cpus[n])
            self.assertEqual(nodes[n]["has_cpu"], n != 3)
            self.assertTrue(nodes[n]["has_memory"])
            mb = self.tree.mem_mb[n]
            self.assertEqual(nodes[n]["memory_total_bytes"], mb << 20)
            self.assertEqual(nodes[n]["memory_free_bytes"], (mb * 1024 * 3 // 4) * 1024)
            self.assertEqual(nodes[n]["hugepage_sizes"], ["2M", "1G"])
            self.assertEqual(nodes[n]["distances"],
                             {str(m): 10 if m == n else 20 if abs(m - n) == 1 else 30 for m in range(4)})
        self.assertEqual(nodes[3]["cpus"], [])

    def test_reads_fresh_and_reports_malformed_files(self):
        rel = "sys/devices/system/node/node1/meminfo"
        saved = self.tree.read(rel)
        try:
            self.tree.write(rel, saved.replace("MemFree:        %d" % (self.tree.mem_mb[1] * 768),
                                               "MemFree:        %d" % 1234))
            n1 = self.d.get("/v1/topology").json["nodes"][1]
            self.assertEqual(n1["memory_free_bytes"], 1234 * 1024)
            self.tree.write(rel, "Node 1 MemFree: 5 kB")   # no MemTotal: not guessed
            self.assertProblem(self.d.get("/v1/topology"), 500, "topology.unreadable")
            self.tree.write("sys/devices/system/node/node2/distance", "20 10")
            self.tree.write(rel, saved)
            self.assertProblem(self.d.get("/v1/topology"), 500, "topology.unreadable")
        finally:
            self.tree.write(rel, saved)
            self.tree.write("sys/devices/system/node/node2/distance", "30 20 10 20")
        self.assertEqual(self.d.get("/v1/topology").status, 200)


class SingleNodeNoHugetlbTest(DaemonTest):
    """One node and no hugetlb support at all: the sizes are an empty list, not an error."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=1, cpuless=(), hugetlb_kb=()))

    def test_one_node_no_hugepages(self):
        t = self.d.get("/v1/topology").json
        self.assertEqual(t["node_count"], 1)
        self.assertEqual(t["nodes"][0]["hugepage_sizes"], [])
        self.assertEqual(t["nodes"][0]["distances"], {"0": 10})
        self.assertEqual(t["nodes"][0]["cpus"], [0, 1])
