"""The real 2 MiB hugetlb pool of this machine, grown and shrunk through the API and the CLI in
small steps; batches, history and statistics must agree with what /sys shows. The pool is put
back to its original size afterwards, also on failure. Run under `flock /tmp/mpd-pool.lock`."""
import os
import unittest

from lib import DaemonTest, real_file, real_write
from test_pools_fake import wait_job

HP = "/sys/kernel/mm/hugepages/hugepages-2048kB"
NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"


def sys_nr():
    return int(real_file(HP + "/nr_hugepages"))


@unittest.skipUnless(os.path.exists(HP) and os.access(HP + "/nr_hugepages", os.W_OK), "no writable 2 MiB pool")
class RealPool(DaemonTest):
    def setUp(self):
        self.orig = sys_nr()
        self.addCleanup(real_write, HP + "/nr_hugepages", str(self.orig))

    def resize(self, body):
        r = self.d.request("PUT", "/v1/hugepages/2M", body=body)
        self.assertEqual(r.status, 202, r.raw)
        return wait_job(self.d, r.json["id"], timeout=60)

    def test_grow_shrink_api_and_cli(self):
        n0 = self.orig
        # grow by 16 in batches of 4 through the global file
        job = self.resize({"total": n0 + 16, "batch": 4})
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(sys_nr(), n0 + 16)
        rows = self.d.sql("SELECT node, before, written, after, requested, achieved, elapsed_ns, latency_ns "
                          "FROM batches WHERE op_id = ? ORDER BY seq", (job["operation_id"],))
        self.assertEqual([(b, w, a, q, g) for _, b, w, a, q, g, _, _ in rows],
                         [(n0 + 4 * i, n0 + 4 * i + 4, n0 + 4 * i + 4, 4, 4) for i in range(4)])
        for node, *_, el, lat in rows:
            self.assertIsNone(node)
            self.assertGreater(el, 0)
            self.assertEqual(lat, el // 4)
        t = job["result"]["targets"][0]
        self.assertEqual((t["asked"], t["got"], t["stopped"]), (16, 16, "target"))
        self.assertEqual(t["elapsed_ns"], sum(r[6] for r in rows))
        self.assertGreaterEqual(job["result"]["conditions"]["vmstat_delta"]["htlb_buddy_alloc_success"], 16)
        pool = self.d.get("/v1/hugepages/2M").json
        self.assertEqual(pool["nr"], sys_nr())
        self.assertEqual(pool["nodes"][0]["nr"], int(real_file(NODE0)))

        # shrink node 0 through its own file
        node0 = int(real_file(NODE0))
        job = self.resize({"nodes": {"0": node0 - 12}})
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(int(real_file(NODE0)), node0 - 12)
        self.assertEqual(self.d.sql("SELECT node, direction, achieved FROM batches WHERE op_id = ?",
                                    (job["operation_id"],)), [(0, "shrink", 10), (0, "shrink", 2)])

        # a caller who is not an administrator changes nothing
        before = sys_nr()
        p = self.d.ctl("pool", "resize", "2M", "--total", str(n0 + 100), user="nobody")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("auth.forbidden", p.stderr)
        self.assertEqual(sys_nr(), before)

        # back to the start through the CLI, which waits and prints the outcome per node
        p = self.d.ctl("pool", "resize", "2M", "--total", str(n0), "--batch", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sys_nr(), n0)
        self.assertIn("LATENCY/PAGE", p.stdout)
        self.assertRegex(p.stdout, r"\ball\s+%d\s+%d\s+4\s+4\s+%d\b" % (n0 + 4, n0, n0))

        # history and statistics agree with the batches
        ops = self.d.sql("SELECT status FROM operations WHERE kind = 'hugepages.resize'")
        self.assertEqual(ops, [("ok",)] * 3)
        grow = sorted(r[0] for r in self.d.sql(
            "SELECT latency_ns FROM batches WHERE direction = 'grow' AND size_kb = 2048"))
        s = self.d.get("/v1/history/stats?kind=hugepages.resize&size=2M").json
        self.assertEqual(s["count"], len(grow))
        self.assertEqual((s["min"], s["max"]), (grow[0], grow[-1]))
        self.assertEqual(s["q2"], grow[max(1, len(grow) // 2) - 1])
        p = self.d.ctl("history", "stats", "--size", "2M")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"Min\s+Latency\s+%.4f" % (grow[0] / 1e6))
        self.assertIn("%d batches" % len(grow), p.stdout)

    def test_availability_matches_sys(self):
        free = int(real_file("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages"))
        r = self.d.get("/v1/hugepages/2M/availability?node=0&count=%d" % (free + 3))
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual((r.json["free"], r.json["from_free"], r.json["grow_needed"]), (free, free, 3))


GIG = "/sys/kernel/mm/hugepages/hugepages-1048576kB"


@unittest.skipUnless(os.path.exists(GIG) and os.access(GIG + "/nr_hugepages", os.W_OK), "no writable 1 GiB pool")
class RealGiganticPool(DaemonTest):
    """Seed 003's case on this machine's kernel: 1 GiB pages grown one per write (each a contiguous
    1 GiB the kernel must find or make), measured, and given back. Whether the kernel finds them
    depends on the machine; what must hold either way is that the job, its batches and /sys agree."""

    def setUp(self):
        self.orig = int(real_file(GIG + "/nr_hugepages"))
        self.addCleanup(real_write, GIG + "/nr_hugepages", str(self.orig))

    def resize(self, body):
        r = self.d.request("PUT", "/v1/hugepages/1G", body=body)
        self.assertEqual(r.status, 202, r.raw)
        return wait_job(self.d, r.json["id"], timeout=120)

    def test_grow_two_gigantic_pages_and_give_them_back(self):
        job = self.resize({"total": self.orig + 2, "batch": 1, "compact": True})
        now = int(real_file(GIG + "/nr_hugepages"))
        t = job["result"]["targets"][0]
        rows = self.d.sql("SELECT before, written, after, achieved, elapsed_ns, latency_ns FROM batches "
                          "WHERE op_id = ? ORDER BY seq", (job["operation_id"],))
        self.assertEqual(t["current"], now)
        self.assertEqual(t["got"], now - self.orig)
        self.assertEqual(sum(r[3] for r in rows), now - self.orig)
        for before, written, after, achieved, el, lat in rows:
            self.assertEqual(written, before + 1)             # one page per write, as asked
            self.assertEqual(achieved, after - before)
            self.assertEqual(lat, el if achieved in (0, 1) else el // achieved)
        if now == self.orig + 2:
            self.assertEqual((job["status"], t["stopped"]), ("ok", "target"), job)
            self.assertEqual(len(rows), 2)
        else:   # the kernel found fewer: said so, not called success
            self.assertEqual((job["status"], job["reason"]), ("partial", "no_progress"), job)
        self.assertEqual(self.d.get("/v1/hugepages/1G").json["nr"], now)

        job = self.resize({"total": self.orig})
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(int(real_file(GIG + "/nr_hugepages")), self.orig)
        s = self.d.get("/v1/history/stats?kind=hugepages.resize&size=1G&direction=grow").json
        self.assertEqual(s["count"], len(rows))


if __name__ == "__main__":
    unittest.main()
