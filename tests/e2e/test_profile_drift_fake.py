"""The drift watcher on a generated tree (what the real kernel cannot be made to do on demand):
a value that changes with no write event — as khugepaged raising vm.min_free_kbytes or memory
offlining shrinking a pool does — is found by the slow timer and recorded with cause `kernel`; and
a new apply re-marks the managed set, so a key that only the second profile manages is watched.

The "kernel's" change is a store through a shared mapping of the pool file, opened before the
group was made: no write(2), so no FAN_MODIFY, and the file stays open (no FAN_CLOSE_WRITE) until
the test is over. Rows are waited for with a deadline, never a sleep. On main there is no
watcher and no /v1/profile/drift."""
import mmap
import os
import shutil
import tempfile

from faketree import FakeTree
from lib import Daemon, DaemonTest, shared_tmp
from test_probes_framework import wait_for
from test_profile_drift import apply_profile

POOL = "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"
SCAN = "sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"

PROFILES = {
    "pool": "[profile]\non-drift = restore\n[hugepages.2M]\nnode0 = 4\n",
    "defrag": "[knobs]\nthp.defrag = defer+madvise ; on-drift = report\n",
    "scan": "[knobs]\nthp.khugepaged.pages_to_scan >= 4096 ; on-drift = report\n",
}


class DriftOnATreeTest(DaemonTest):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-drift-tree-", dir=shared_tmp())
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(self.tmp)
        self.tree.write(SCAN, "4096")
        pdir = os.path.join(self.tmp, "profiles")
        os.mkdir(pdir)
        os.chmod(pdir, 0o755)
        for name, text in PROFILES.items():
            with open(os.path.join(pdir, name + ".conf"), "w") as f:
                f.write(text)
        self.d = Daemon(self.tree, ("--profiles-dir", pdir, "--drift-check-interval", "1"))
        self.d.start()
        self.addCleanup(self.d.cleanup)

    def apply(self, name):
        apply_profile(self, self.d, name)

    def drifts(self, key):
        r = self.d.get("/v1/profile/drift?key=" + key)
        self.assertEqual(r.status, 200, r.raw)
        return r.json["drifts"]

    def test_a_change_with_no_write_is_the_kernel_and_is_restored(self):
        fd = os.open(self.tree.path(POOL), os.O_RDWR)
        self.addCleanup(os.close, fd)
        self.apply("pool")
        self.assertEqual(self.tree.read(POOL), "4")
        m = mmap.mmap(fd, 1)   # "4", as the daemon wrote it
        self.addCleanup(m.close)
        m[0:1] = b"3"      # the pool shrank, and nobody wrote
        row = wait_for(lambda: self.drifts("hugepages.2M.node0"), 30, "the timer's drift row")[0]
        self.assertEqual(row["result"]["cause"], "kernel", row)
        self.assertIsNone(row["result"]["writer"])
        self.assertEqual(row["result"]["actual"], "3")
        self.assertEqual(row["action"], "restored", row)
        self.assertEqual(self.tree.read(POOL), "4")
        m_text = self.d.get("/metrics").raw
        self.assertIn('mempolicyd_profile_drift_total{cause="kernel",action="restored"} 1', m_text)

    def test_a_new_apply_re_marks_the_managed_set(self):
        self.apply("defrag")
        self.apply("scan")
        self.tree.write(SCAN, "8")   # below >= 4096: a drift of the key only the second profile has
        row = wait_for(lambda: self.drifts("thp.khugepaged.pages_to_scan"), 30, "the re-marked key's row")[0]
        self.assertEqual(row["result"]["cause"], "process", row)
        self.assertEqual(row["result"]["writer"]["pid"], os.getpid())
        self.assertEqual(row["drift"]["comparator"], ">=")
        self.assertEqual(row["action"], "reported")
        # defrag is no longer managed: the profile in force does not name it
        keys = [k["key"] for k in self.d.get("/v1/profile").json["keys"]]
        self.assertEqual(keys, ["thp.khugepaged.pages_to_scan"])
