"""Drift with its cause, on the real kernel (issue 18, "Done means"): after a profile is applied, a
shell's write to /sys/kernel/mm/transparent_hugepage/defrag is recorded as a profile.drift with that
shell's pid and comm, put back within a second under `restore`, only reported under `report`, left
alone under `yield` (the key then leaves the managed set). The daemon's own writes (the apply,
the restore) are not drift.

No sleep proves an absence: the watcher handles a key's event in one step — read, record, act — so
once the row is there, what the policy did is done. The shell is held alive until its row is
recorded (its pidfd then still names it: comm and exe can be read). Every knob is restored, also on
failure; thp.enabled ends at madvise. On main there is no watcher and no /v1/profile/drift."""
import os
import shutil
import subprocess
import tempfile
import time

from lib import Daemon, DaemonTest, bracketed, fifo_writer, real_file, real_write, shared_tmp
from test_probes_framework import wait_for

T = "/sys/kernel/mm/transparent_hugepage/"
DEFRAG, ENABLED = T + "defrag", T + "enabled"


def marks_made(d):
    """How many times d's drift watcher has marked a managed set (its log line, written once the
    new group exists and what was written before it is checked): a write after that is an event."""
    with open(d.log) as f:
        return f.read().count(" with a mark")


def apply_profile(test, d, name):
    """POST /v1/profile, the profile.apply job waited for (ok), then the watcher's marks."""
    seen = marks_made(d)
    r = d.request("POST", "/v1/profile", {"name": name})
    test.assertEqual(r.status, 202, r.raw)
    job = r.json["id"]
    r = wait_for(lambda: (lambda j: j if j.json.get("status") not in ("queued", "running") else None)(
        d.get("/v1/jobs/%d?wait=30" % job)), 60, "the profile.apply job")
    test.assertEqual(r.json["status"], "ok", r.raw)
    wait_for(lambda: marks_made(d) > seen, 30, "the watcher to mark the new managed set")
    return job


PROFILES = {
    "drift-restore": "[profile]\non-drift = restore\n[knobs]\nthp.enabled = madvise\nthp.defrag = defer+madvise\n",
    "drift-report": "[profile]\non-drift = restore\n[knobs]\nthp.enabled = madvise\n"
                    "thp.defrag = defer+madvise ; on-drift = report\n",
    "drift-yield": "[profile]\non-drift = yield\n[knobs]\nthp.enabled = madvise\nthp.defrag = defer+madvise\n",
}


class ProfileDriftRealTest(DaemonTest):
    """A daemon per test: a profile left in force by one test would take the next one's clean-up
    writes for drift."""

    @classmethod
    def setUpClass(cls):
        cls.pdir = tempfile.mkdtemp(prefix="mpd-drift-profiles-", dir=shared_tmp())
        os.chmod(cls.pdir, 0o755)
        for name, text in PROFILES.items():
            with open(os.path.join(cls.pdir, name + ".conf"), "w") as f:
                f.write(text)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pdir, ignore_errors=True)

    def setUp(self):
        old_defrag = bracketed(real_file(DEFRAG))
        # Run last to first: the daemon stops before the knobs are put back by hand.
        self.addCleanup(real_write, ENABLED, "madvise")
        self.addCleanup(real_write, DEFRAG, old_defrag)
        self.d = Daemon(None, ("--profiles-dir", self.pdir))
        # The watcher's hold point (test builds): a wake-up waits only while this FIFO exists.
        self.hold = os.path.join(self.d.dir, "drift-hold")
        self.d.env = {"MEMPOLICYD_TEST_HOLD_DRIFT": self.hold}
        self.d.start()
        self.addCleanup(self.d.cleanup)
        self.shells = []
        self.addCleanup(self.end_shells)

    def end_shells(self):
        for p in self.shells:
            if p.poll() is None:
                p.stdin.close()
                p.wait(10)

    def apply(self, name):
        job = apply_profile(self, self.d, name)
        self.assertEqual(bracketed(real_file(DEFRAG)), "defer+madvise")
        # the apply's own writes made no drift
        self.assertEqual(self.drifts(), [], "the daemon's own writes were taken for drift")
        return job

    def drifts(self):
        r = self.d.get("/v1/profile/drift?key=thp.defrag&limit=1000")
        self.assertEqual(r.status, 200, r.raw)
        return r.json["drifts"]

    def foreign_write(self, value):
        """sh writes value and stays (stdin open) until the test is done with it: its pid and comm
        are the writer's. Returns once the write returned."""
        p = subprocess.Popen(["sh", "-c", "echo %s > %s && echo written && read _" % (value, DEFRAG)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.shells.append(p)
        self.assertEqual(p.stdout.readline().strip(), "written")
        return p, time.monotonic()

    def recorded(self, action, timeout=30):
        return wait_for(lambda: [d for d in self.drifts() if d["action"] == action], timeout,
                        "a profile.drift row with action " + action)[0]

    def assert_writer(self, row, shell):
        self.assertEqual(row["drift"]["key"], "thp.defrag")
        self.assertEqual(row["drift"]["expected"], ["defer+madvise"])
        self.assertEqual(row["drift"]["comparator"], "=")
        self.assertEqual(row["result"]["actual"], "never")
        self.assertEqual(row["result"]["cause"], "process")
        w = row["result"]["writer"]
        self.assertEqual(w["pid"], shell.pid, row)
        self.assertEqual(w["comm"], "sh", row)
        self.assertEqual(w["uid"], 0, row)
        self.assertTrue(w["verified"], row)   # named through the event's own pidfd (Linux 5.15+)
        self.assertTrue(w["exe"] and os.path.basename(w["exe"]) in ("sh", "dash", "bash"), row)
        self.assertEqual(row["result"]["count"], 1)
        self.assertLessEqual(row["first_seen_ns"], row["last_seen_ns"])

    def test_restore_puts_it_back_within_a_second_and_records_the_shell(self):
        self.apply("drift-restore")
        shell, wrote = self.foreign_write("never")
        wait_for(lambda: bracketed(real_file(DEFRAG)) == "defer+madvise", 10, "defrag put back")
        took = time.monotonic() - wrote
        self.assertLess(took, 1.0, "restored %.3f s after the write" % took)
        row = self.recorded("restored")
        self.assert_writer(row, shell)
        # one row, and the watcher's own restore write is not a second drift
        self.assertEqual(len(self.drifts()), 1, self.drifts())
        op = self.d.get("/v1/history/%d" % row["id"]).json
        self.assertEqual((op["kind"], op["status"]), ("profile.drift", "restored"))
        self.assertIn("thp.defrag drift restored", op["summary"])
        # mempolicyctl profile drift: the same row, its writer and action in the table
        out = self.d.ctl("profile", "drift", "--key", "thp.defrag")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("process sh[%d] uid 0" % shell.pid, out.stdout)
        self.assertIn("restored", out.stdout)
        js = self.d.ctl("profile", "drift", "--json")
        self.assertEqual(js.returncode, 0, js.stderr)
        self.assertIn('"comm": "sh"', js.stdout)
        m = self.d.get("/metrics").raw
        self.assertIn('mempolicyd_profile_drift_total{cause="process",action="restored"} ', m)
        self.assertIn('mempolicyd_profile_key_drift{key="thp.defrag"} 0', m)

    def test_applied_again_the_group_is_kept_and_still_sees_a_write(self):
        """The same profile applied again marks the same files: the watcher keeps its fanotify
        group (no new one from the helper, no gap between two), and a shell's write after it is
        still seen, attributed and restored. On main a new group is made for every apply."""
        self.apply("drift-restore")
        self.assertNotIn("the group kept", self.d.log_text())
        self.apply("drift-restore")
        self.assertIn("the group kept", self.d.log_text())
        shell, _ = self.foreign_write("never")
        wait_for(lambda: bracketed(real_file(DEFRAG)) == "defer+madvise", 10, "defrag put back")
        self.assert_writer(self.recorded("restored"), shell)

    def test_a_write_right_after_the_apply_is_recorded(self):
        """A shell writes a key after the apply wrote it and before the watcher handled the
        apply's event: both events are queued together (the test holds the watcher). The apply's
        event, read when it is handled, already shows the shell's value; taken as the key's
        baseline, the shell's own event would find nothing changed and the drift would never be
        recorded (main: no row; the profile bench's reset right after an apply, on a busy machine,
        waited for it in vain)."""
        self.apply("drift-report")
        first, _ = self.foreign_write("never")           # out of sync, so the next apply writes
        self.assertEqual(self.recorded("reported")["result"]["writer"]["pid"], first.pid)
        os.mkfifo(self.hold)
        w = None
        try:
            r = self.d.request("POST", "/v1/profile", {"name": "drift-report"})
            self.assertEqual(r.status, 202, r.raw)
            job = wait_for(lambda: (lambda j: j if j.json.get("status") not in ("queued", "running") else None)(
                self.d.get("/v1/jobs/%d?wait=30" % r.json["id"])), 60, "the second apply")
            self.assertEqual(job.json["status"], "ok", job.raw)
            w = fifo_writer(self.hold, "the drift watcher")                        # the apply's event waits behind the hold
            self.assertEqual(bracketed(real_file(DEFRAG)), "defer+madvise")
            second, _ = self.foreign_write("never")
        finally:
            # A writer of our own first (O_RDWR never blocks): a watcher still waiting to open the
            # FIFO gets it, and reads to its end once both are closed; later wake-ups are not held.
            rw = os.open(self.hold, os.O_RDWR | os.O_NONBLOCK)
            os.unlink(self.hold)
            os.close(rw)
            if w is not None:
                os.close(w)
        row = wait_for(lambda: [d for d in self.drifts() if (d["result"].get("writer") or {}).get("pid") == second.pid],
                       30, "a drift row naming the shell that wrote after the apply")[0]
        self.assert_writer(row, second)
        self.assertEqual(row["result"]["action"], "reported")
        # and the first shell's drift, which the second apply wrote back, has its end recorded
        old = [d for d in self.drifts() if (d["result"].get("writer") or {}).get("pid") == first.pid]
        self.assertEqual(len(old), 1, self.drifts())
        self.assertIn("ended_ns", old[0]["result"], old[0])
        self.assertNotEqual(old[0]["id"], row["id"])

    def test_report_leaves_it_and_says_degraded(self):
        self.apply("drift-report")
        shell, _ = self.foreign_write("never")
        row = self.recorded("reported")
        self.assert_writer(row, shell)
        # the row is written after the policy acted: report wrote nothing back
        self.assertEqual(bracketed(real_file(DEFRAG)), "never")
        p = self.d.get("/v1/profile").json
        self.assertEqual(p["state"], "degraded", p)
        self.assertIn("drift", p["reasons"])
        m = self.d.get("/metrics").raw
        self.assertIn('mempolicyd_profile_key_drift{key="thp.defrag"} 1', m)
        # the admin puts it back by hand: the drift ends, the same row says when
        real_write(DEFRAG, "defer+madvise")
        done = wait_for(lambda: [d for d in self.drifts() if "ended_ns" in d["result"]], 30, "the drift's end")
        self.assertEqual(done[0]["id"], row["id"])
        wait_for(lambda: self.d.get("/v1/profile").json["state"] == "applied", 30, "the state back to applied")

    def test_an_apply_ends_the_drift_it_mends_and_a_write_right_after_is_its_own(self):
        """The apply's own write puts a reported drift back in sync: the drift's row ends, dated
        within the apply (the row may be written after the apply answered, never dated then),
        the state is applied again, and a shell's write right after the apply is a drift of its
        own, attributed, with the ended row left as it was."""
        self.apply("drift-report")
        self.foreign_write("never")
        row = self.recorded("reported")
        self.assertNotIn("ended_ns", row["result"])
        before = time.time_ns()
        apply_profile(self, self.d, "drift-report")
        after = time.time_ns()
        self.assertEqual(self.d.get("/v1/profile").json["state"], "applied")
        shell, _ = self.foreign_write("never")
        again = wait_for(lambda: [d for d in self.drifts() if d["id"] != row["id"]], 30, "the second drift")[0]
        self.assert_writer(again, shell)
        self.assertNotIn("ended_ns", again["result"])
        ended = [d for d in self.drifts() if d["id"] == row["id"]][0]
        self.assertIn("ended_ns", ended["result"], ended)
        self.assertTrue(before <= ended["result"]["ended_ns"] <= after, (before, ended, after))
        self.assertEqual(ended["result"]["actual"], "defer+madvise", ended)
        # the ended row still names who caused the drift, and how often it was seen
        self.assertEqual((ended["result"]["writer"]["comm"], ended["result"]["count"]), ("sh", 1), ended)

    def test_yield_leaves_it_and_the_key_is_no_longer_managed(self):
        self.apply("drift-yield")
        shell, _ = self.foreign_write("never")
        row = self.recorded("yielded")
        self.assert_writer(row, shell)
        self.assertEqual(bracketed(real_file(DEFRAG)), "never")
        keys = {k["key"]: k for k in self.d.get("/v1/profile").json["keys"]}
        self.assertEqual(keys["thp.defrag"]["verdict"], "yielded", keys["thp.defrag"])

    def test_bad_queries_are_refused(self):
        for q in ("key=", "key=a%22b", "limit=0", "limit=1001", "other=1", "cursor=zz"):
            r = self.d.get("/v1/profile/drift?" + q)
            self.assertProblem(r, 400)
