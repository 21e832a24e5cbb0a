"""The conditions every recorded operation measures (server/ops/conditions.c) are read through files
the serving process keeps open (kernel/mmcounters.c: /proc/vmstat, /proc/buddyinfo, node/online and
each node's numastat, one pread each from offset 0), not opened and read each time; the kernel
regenerates the text on every such read, so each operation of one daemon still counts its own
work. The machine's real 2 MiB pool is grown twice and put back by one daemon: each grow records the
pages it took from the buddy allocator (htlb_buddy_alloc_success), the shrink none, and every
snapshot has its nodes. The pool is put back to its original size afterwards, also on failure."""
import os
import unittest

from lib import DaemonTest, open_files, real_file, real_write
from test_pools_fake import wait_job

HP = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
HELD = ("/proc/vmstat", "/proc/buddyinfo", "/sys/devices/system/node/online",
        "/sys/devices/system/node/node0/numastat")


@unittest.skipUnless(os.access(HP, os.W_OK) and os.path.exists(HELD[3]), "no writable 2 MiB pool or no node 0")
class HeldCounterFiles(DaemonTest):
    def setUp(self):
        self.orig = int(real_file(HP))
        self.addCleanup(real_write, HP, str(self.orig))

    def test_each_operation_counts_its_own_pages_through_the_held_files(self):
        for target, grown in ((self.orig + 8, 8), (self.orig + 16, 8), (self.orig, 0)):
            r = self.d.request("PUT", "/v1/hugepages/2M", body={"total": target})
            self.assertEqual(r.status, 202, r.raw)
            job = wait_job(self.d, r.json["id"], timeout=60)
            if job["status"] != "ok" and grown:
                self.skipTest("the pool did not grow by %d (memory): %s" % (grown, job.get("error")))
            self.assertEqual(job["status"], "ok", job)
            self.assertEqual(int(real_file(HP)), target)
            cond = job["result"]["conditions"]
            if grown:
                self.assertGreaterEqual(cond["vmstat_delta"].get("htlb_buddy_alloc_success", 0), grown, cond)
            else:
                self.assertNotIn("htlb_buddy_alloc_success", cond["vmstat_delta"], cond)
            self.assertIn("0", cond["numastat_delta"], cond)
            for when in ("before", "after"):
                self.assertEqual(set(cond["buddyinfo"][when]["0"]),
                                 {"zones", "free_blocks", "free_pages", "unusable_index", "fragmentation_index"})
            # One fd each, kept between operations (a read by path would leave none).
            for path in HELD:
                self.assertEqual(open_files(self.d.proc.pid, path), 1, path)


if __name__ == "__main__":
    unittest.main()
