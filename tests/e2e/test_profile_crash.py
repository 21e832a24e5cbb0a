"""A crash (SIGKILL) in the middle of a profile's apply, on the real kernel, completed at the next
start (docs/reference/profiles.md, At start). The kill lands between writes without a sleep: the
profile sets a THP knob and shrinks the 2 MiB pool to 0 while a child holds the pool's pages in use,
so the kernel keeps them (as surplus) and the apply's resize cannot reach its target: once the knob
reads the profile's value, the apply has written its knobs and is retrying the pool, and stays so
until its deadline (10 minutes). SIGKILL then. The kernel is put back as a reboot would (the knob to
its old value) and the child lets its pages go; the next daemon (no --profile) marks the job
interrupted, applies that profile again before it is ready, and the knob and pool reach the
profile's values, the state applied. Every knob and pool is restored after, also on failure.
On main there is no profile apply to interrupt or complete."""
import json
import os
import signal
import shutil
import subprocess
import sys
import unittest

from lib import Daemon, bracketed, real_file, real_write
from test_profile_reload import profiles_top, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
NR = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
SURPLUS = "/sys/kernel/mm/hugepages/hugepages-2048kB/surplus_hugepages"
HELD = 8


@unittest.skipUnless(os.geteuid() == 0 and os.path.exists(NR), "needs root and the 2 MiB hugetlb pool")
class CrashMidApply(unittest.TestCase):
    def setUp(self):
        self.defrag0 = bracketed(real_file(DEFRAG))
        self.nr0 = int(real_file(NR))
        self.want = "defer" if self.defrag0 != "defer" else "never"
        self.top, self.pdir = profiles_top("mpd-crash-")
        self.addCleanup(shutil.rmtree, self.top, True)   # after restore() (cleanups run last first)
        self.addCleanup(self.restore)
        with open(os.path.join(self.pdir, "crash.conf"), "w") as f:
            f.write("[knobs]\nthp.defrag = %s\n[hugepages.2M]\ntotal = 0\n" % self.want)
        self.child = None
        self.d = None

    def restore(self):
        if self.d:
            self.d.cleanup()
        if self.child:
            if self.child.poll() is None:
                self.child.kill()
                self.child.wait()
            self.child.stdout.close()
        real_write(DEFRAG, self.defrag0)
        real_write(NR, str(self.nr0))
        self.assertEqual(bracketed(real_file(DEFRAG)), self.defrag0)
        self.assertEqual(int(real_file(NR)), self.nr0)

    def hold_pages(self):
        real_write(NR, str(HELD))
        self.assertEqual(int(real_file(NR)), HELD, "the pool did not grow to %d pages" % HELD)
        self.child = subprocess.Popen([sys.executable, os.path.join(HERE, "placement_child.py"), "hugetlb:%d" % HELD],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.child.stdout.readline()
        self.assertIn("hugetlb", json.loads(line), line)

    def test_sigkill_mid_apply_is_completed_at_the_next_start(self):
        self.hold_pages()
        self.d = Daemon(args=("--profiles-dir", self.pdir)).start()
        r = self.d.request("POST", "/v1/profile", body={"name": "crash", "deadline_ms": 600000})
        self.assertEqual(r.status, 202, r.raw)
        job = r.json["id"]
        # The knobs first, one transaction; then the pool, which cannot shrink under the child.
        wait_for(lambda: bracketed(real_file(DEFRAG)) == self.want, "the apply's knob write")
        wait_for(lambda: self.d.get("/v1/jobs/%d" % job).json["status"] == "running", "the job running")
        self.assertEqual(int(real_file(NR)), HELD, "the pool reached its target under a child holding it")
        self.assertEqual(self.d.get("/v1/jobs/%d" % job).json["status"], "running")
        self.d.proc.send_signal(signal.SIGKILL)
        self.d.proc.wait(10)
        self.d.proc = None
        # What a reboot would leave: the knob at its old value; the child's pages let go.
        real_write(DEFRAG, self.defrag0)
        self.child.stdin.close()
        self.child.wait(10)
        wait_for(lambda: int(real_file(SURPLUS)) == 0, "the surplus pages freed")

        self.d.start(timeout=60)   # health answers once the start-time apply is under way
        wait_for(lambda: "start-time apply of crash (job" in self.d.log_text() and " ended: " in self.d.log_text(),
                 "the start-time apply to end", self.d, timeout=60)
        old = self.d.get("/v1/jobs/%d" % job).json
        self.assertEqual(old["status"], "interrupted", old)
        self.assertIn("the previous daemon's apply of crash (job %d) was interrupted: applying it again" % job,
                      self.d.log_text())
        # The job's row follows the state it installed (the runner records the end after run()).
        jobs = wait_for(lambda: [j for j in [self.d.sql("SELECT id, source, status FROM jobs WHERE kind = "
                                                        "'profile.apply' ORDER BY id")]
                                 if [(s, st) for _, s, st in j] == [("api", "interrupted"), ("start", "ok")]],
                        "the interrupted job and the start-time one recorded", self.d)[0]
        self.assertEqual(bracketed(real_file(DEFRAG)), self.want)
        self.assertEqual(int(real_file(NR)), 0)
        p = self.d.get("/v1/profile").json
        self.assertEqual((p["name"], p["state"], p["job_id"]), ("crash", "applied", jobs[1][0]), p)
        written = {k["key"]: k["outcome"] for k in p["keys"]}
        self.assertEqual(written["thp.defrag"], "written", p["keys"])


if __name__ == "__main__":
    unittest.main()
