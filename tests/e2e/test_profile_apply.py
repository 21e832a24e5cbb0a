"""Activating a profile (issue 18, "Apply" and "State"; docs/reference/profiles.md, "Applying"):
POST /v1/profile validates the whole profile and starts one profile.apply job that writes only the
keys out of sync (knobs as one transaction, pools as resizes that compact and retry until the
deadline, partial with why), records each key's outcome, and installs the profile state GET
/v1/profile, /v1/health and /metrics show; `mempolicyctl profile apply|verify`.

On a generated tree: what an injected fault needs (a pool that cannot grow, a slow apply for the
409 and for a file changed mid-apply, a job worker held so that a file rewritten while the job is
queued fails it with profile.changed), what must not touch the real kernel (a non-admin, a
refusal), and cgroup mems on test_cgroups' v2 tree (set, refused by the parent's mems,
unsupported). Against the real kernel (under the test lock): thp.defrag, khugepaged and the 2 MiB
pool applied, a knob this kernel lacks reported unsupported (required: degraded), a bad profile
changing nothing, verify's exit codes after a foreign write; every value put back, also on failure.
On main there is no POST /v1/profile (405) and no `profile apply|verify`."""
import json
import os
import re
import subprocess
import time
import unittest

from faketree import FakeTree
from lib import CTL, Daemon, DaemonTest, bracketed, real_file, real_write
from test_cgroups import v2_tree
from test_openapi import SpecDaemonTest
from test_pools_fake import StalledResize
from test_profiles import WithProfiles

THP = "sys/kernel/mm/transparent_hugepage"
NODE0_2M = "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"

APPLY_CONF = """[knobs]
thp.enabled = madvise                        # in sync on the tree: not written
thp.defrag = defer+madvise|defer
thp.khugepaged.pages_to_scan >= 1024         # the tree has 4096: in sync, not written
thp.size.4096kB.enabled = never              # no such size here: unsupported, not a failure
[hugepages.2M]
node0 = 8
node1 >= 2
"""

KNOBS_CONF = """[knobs]
thp.defrag = defer
thp.khugepaged.pages_to_scan = 2048
thp.enabled = madvise                        # in sync on the tree: not written
"""

REQUIRED_CONF = """[knobs]
thp.defrag = defer
thp.size.4096kB.enabled = never ; required
"""

SLOW_CONF = """[knobs]
thp.defrag = madvise
[hugepages.2M]
node0 = 12
"""


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.chmod(path + ".tmp", 0o644)
    os.rename(path + ".tmp", path)


class WithProfileDir(WithProfiles):
    """A profiles directory (cls.confs: name -> text) made before the daemon starts."""
    confs = {}

    @classmethod
    def profiles(cls, top):
        d = os.path.join(top, "profiles.d")
        os.makedirs(d)
        os.chmod(d, 0o755)
        for name, text in cls.confs.items():
            write(os.path.join(d, name + ".conf"), text)
        return d, ()

    def activate(self, name, status=202, **body):
        r = self.d.request("POST", "/v1/profile", body=dict(name=name, **body))
        self.assertEqual(r.status, status, r.raw)
        return r.json

    def wait(self, job_id):
        """The job once it ended: the daemon holds the answer until then (no polling)."""
        r = self.d.get("/v1/jobs/%d?wait=30" % job_id)
        self.assertEqual(r.status, 200, r.raw)
        self.assertNotIn(r.json["status"], ("queued", "running"), r.json)
        return r.json

    def metric(self, line_start):
        text = self.d.get("/metrics").raw
        m = re.search("^" + re.escape(line_start) + r" (\S+)$", text, re.M)
        self.assertIsNotNone(m, "%s not in /metrics" % line_start)
        return m.group(1)


class ApplyOnTree(WithProfileDir, SpecDaemonTest):
    """A 4-node generated tree."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))
    confs = {"db": APPLY_CONF, "req": REQUIRED_CONF, "knobs": KNOBS_CONF,
             "bad": "[knobs]\nthp.defrag = defer\n[hugepages.2M]\nnode0 = 99999999\n"}

    def setUp(self):
        self.tree.write(THP + "/enabled", "always [madvise] never")
        self.tree.write(THP + "/defrag", "always defer defer+madvise [madvise] never")
        self.tree.write(THP + "/khugepaged/pages_to_scan", "4096")
        for n in range(4):
            self.tree.write("sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages" % n, "0")

    def test_apply_writes_only_what_differs_and_records_each_key(self):
        enabled = os.path.join(self.tree.sys, "kernel/mm/transparent_hugepage/enabled")
        os.utime(enabled, ns=(0, 0))
        job = self.wait(self.activate("db")["id"])
        self.assertEqual((job["kind"], job["status"]), ("profile.apply", "ok"), job)
        self.assertEqual(os.stat(enabled).st_mtime_ns, 0, "a key in sync was written")
        res = job["result"]
        by = {k["key"]: k for k in res["keys"]}
        self.assertEqual({k: v["outcome"] for k, v in by.items()},
                         {"thp.enabled": "in_sync", "thp.defrag": "written", "thp.khugepaged.pages_to_scan": "in_sync",
                          "thp.size.4096kB.enabled": "unsupported", "hugepages.2M.node0": "resized",
                          "hugepages.2M.node1": "resized"})
        self.assertIn("lacks", by["thp.size.4096kB.enabled"]["why"])
        self.assertEqual(bracketed(self.tree.read(THP + "/defrag")), "defer+madvise")
        self.assertEqual(self.tree.read(THP + "/khugepaged/pages_to_scan"), "4096")
        self.assertEqual(self.tree.read(NODE0_2M), "8")
        # the knobs' transaction is its own knobs.set operation, with only the knob that differed
        knob_op = res["knobs_operation_id"]
        self.assertEqual(self.d.sql("SELECT kind, source FROM operations WHERE id = ?", (knob_op,)),
                         [("knobs.set", "profile")])
        self.assertEqual(self.d.sql("SELECT knob FROM knob_changes WHERE op_id = ?", (knob_op,)), [("thp.defrag",)])
        # the pools' batches are the profile.apply operation's
        self.assertGreater(self.d.sql("SELECT count(*) FROM batches WHERE op_id = ?", (job["operation_id"],))[0][0], 0)
        op = self.call("GET", "/v1/history/%d" % job["operation_id"]).json
        self.assertEqual((op["kind"], op["status"]), ("profile.apply", "ok"))
        self.assertEqual(len(op["result"]["keys"]), 6)

        st = self.call("GET", "/v1/profile").json
        self.assertEqual((st["name"], st["state"], st["reasons"], st["job_id"]), ("db", "applied", [], job["id"]))
        sk = {k["key"]: k for k in st["keys"]}
        self.assertEqual(sk["thp.defrag"]["actual"], "defer+madvise")
        self.assertEqual(sk["thp.size.4096kB.enabled"]["verdict"], "unsupported")
        self.assertEqual(sk["hugepages.2M.node0"]["source"], {"file": "db.conf", "line": 7, "column": 1})
        self.assertEqual(sk["thp.defrag"]["paths"], [os.path.join(self.tree.sys, "kernel/mm/transparent_hugepage/defrag")])
        self.assertEqual(self.call("GET", "/v1/health").json["profile"], {"name": "db", "state": "applied", "reasons": []})
        self.assertEqual(self.metric('mempolicyd_profile_state{profile="db",state="applied"}'), "1")
        self.assertEqual(self.metric('mempolicyd_profile_pool_target_pages{size="2M",node="0"}'), "8")
        self.assertEqual(self.call("GET", "/v1/profiles").json["active"], "db")

        # a foreign write: GET reads the key again and calls it drift
        self.tree.write(THP + "/defrag", "always defer defer+madvise madvise [never]")
        st = self.call("GET", "/v1/profile").json
        self.assertEqual((st["state"], st["reasons"]), ("degraded", ["drift"]))
        self.assertEqual({k["key"]: k["verdict"] for k in st["keys"]}["thp.defrag"], "drift")
        self.assertEqual(self.metric('mempolicyd_profile_degraded{reason="drift"}'), "1")

    def test_a_required_key_this_kernel_lacks_degrades_the_state(self):
        job = self.wait(self.activate("req")["id"])
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual((job["result"]["state"], job["result"]["reasons"]), ("degraded", ["unsupported_required"]))
        st = self.call("GET", "/v1/profile").json
        self.assertEqual((st["state"], st["reasons"]), ("degraded", ["unsupported_required"]))
        self.assertEqual(bracketed(self.tree.read(THP + "/defrag")), "defer")   # the rest was applied
        self.assertEqual(self.metric('mempolicyd_profile_degraded{reason="unsupported_required"}'), "1")

    def no_drift_rows(self):
        """The database without the drift watcher's rows: setUp's writes are foreign writes to the
        keys of the profile an earlier test left in force, which the watcher records when its
        events arrive (on a busy machine, during the request below); they are not the request's."""
        db = self.d.db_snapshot()
        db["operations"] = [r for r in db["operations"] if "profile.drift" not in r]
        return db

    def test_an_invalid_profile_changes_nothing(self):
        before = self.tree.snapshot()
        db = self.no_drift_rows()
        r = self.call("POST", "/v1/profile", body={"name": "bad"}, status=422)
        self.assertEqual((r.json["code"], r.json["file"], r.json["line"], r.json["column"]),
                         ("profile.bad_value", "bad.conf", 4, 1))
        self.assertIn("hugepages.2M.node0 = 99999999", r.json["detail"])
        self.assertEqual(self.tree.snapshot(), before)
        self.assertEqual(self.no_drift_rows(), db)
        err = self.call("GET", "/v1/profile").json["error"]
        self.assertEqual((err["profile"], err["code"], err["line"]), ("bad", "profile.bad_value", 4))
        for body, status, code in (({}, 400, "request.missing_field"), ({"name": 1}, 400, "request.wrong_type"),
                                   ({"name": "../x"}, 404, "profile.not_found"), ({"name": "nope"}, 404, "profile.not_found"),
                                   ({"name": "db", "extra": 1}, 400, "request.unknown_field"),
                                   ({"name": "db", "deadline_ms": 0}, 400, "request.invalid"),
                                   ({"name": "db", "dry_run": "yes"}, 400, "request.wrong_type")):
            self.assertProblem(self.d.request("POST", "/v1/profile", body=body), status, code)
        self.assertEqual(self.tree.snapshot(), before)

    def test_a_knob_only_profile_is_answered_applied(self):
        """Knobs only: the job ran within the POST, so its 202 is the ended job (on main: queued,
        and a GET /v1/jobs/ID?wait= was needed), and the state is installed by then."""
        job = self.activate("knobs")
        self.assertEqual((job["kind"], job["status"]), ("profile.apply", "ok"), job)
        self.assertIsNotNone(job["started_ns"])
        self.assertIsNotNone(job["finished_ns"])
        self.assertEqual({k["key"]: k["outcome"] for k in job["result"]["keys"]},
                         {"thp.defrag": "written", "thp.khugepaged.pages_to_scan": "written", "thp.enabled": "in_sync"})
        self.assertEqual(bracketed(self.tree.read(THP + "/defrag")), "defer")
        self.assertEqual(self.tree.read(THP + "/khugepaged/pages_to_scan"), "2048")
        self.assertEqual(self.call("GET", "/v1/jobs/%d" % job["id"]).json["status"], "ok")
        st = self.call("GET", "/v1/profile").json
        self.assertEqual((st["name"], st["state"], st["job_id"], st["applying_job"]), ("knobs", "applied", job["id"], None))
        # the transaction recorded once, after its writes, with only the knobs that differed
        knob_op = job["result"]["knobs_operation_id"]
        self.assertEqual(self.d.sql("SELECT kind, source, status FROM operations WHERE id = ?", (knob_op,)),
                         [("knobs.set", "profile", "ok")])
        self.assertEqual(self.d.sql("SELECT knob, status FROM knob_changes WHERE op_id = ? ORDER BY seq", (knob_op,)),
                         [("thp.defrag", "written"), ("thp.khugepaged.pages_to_scan", "written")])
        # measured once: the job's conditions are its one change's, the knob transaction's
        self.assertEqual(job["result"]["conditions"],
                         self.call("GET", "/v1/history/%d" % knob_op).json["result"]["conditions"])
        # applied again, in sync: the answer is ended too, nothing written
        self.tree.write(THP + "/khugepaged/pages_to_scan", "4096")
        again = self.activate("knobs")
        self.assertEqual(again["status"], "ok", again)
        self.assertEqual({k["key"]: k["outcome"] for k in again["result"]["keys"]}["thp.defrag"], "in_sync")
        self.assertIn("buddyinfo", again["result"]["conditions"])
        self.assertEqual(self.tree.read(THP + "/khugepaged/pages_to_scan"), "2048")
        # the CLI prints the ended job from the POST's answer
        self.tree.write(THP + "/khugepaged/pages_to_scan", "4096")
        p = self.d.ctl("profile", "apply", "knobs")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"thp\.khugepaged\.pages_to_scan\s+written\s+2048\s+in_sync")
        p = self.d.ctl("profile", "apply", "knobs", "--no-wait")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^job \d+ ok: ")

    def test_the_dry_run_is_the_diff_and_writes_nothing(self):
        before = self.tree.snapshot()
        out = self.call("POST", "/v1/profile", body={"name": "db", "dry_run": True}).json
        self.assertTrue(out["dry_run"])
        self.assertEqual({k["key"]: k["action"] for k in out["keys"]}["thp.defrag"], "write")
        self.assertEqual(self.tree.snapshot(), before)

    def test_a_caller_who_is_not_an_administrator_is_refused(self):
        before = self.tree.snapshot()
        p = self.d.ctl("profile", "apply", "db", user="nobody")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("auth.forbidden", p.stderr)
        self.assertEqual(self.tree.snapshot(), before)

    def test_cli_apply_and_verify_exit_codes(self):
        p = self.d.ctl("profile", "apply", "db")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"thp\.defrag\s+written\s+defer\+madvise\s+in_sync")
        self.assertIn("profile db: applied", p.stdout)
        p = self.d.ctl("profile", "verify", "--exit-code")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("0 of 6 keys out of sync", p.stdout)
        self.tree.write(THP + "/defrag", "always defer defer+madvise madvise [never]")
        p = self.d.ctl("profile", "verify", "--exit-code")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("thp.defrag: expected = defer+madvise|defer, actual never (drift)", p.stdout)
        self.assertEqual(self.d.ctl("profile", "verify").returncode, 0)   # no --exit-code: it answered
        p = self.d.ctl("--json", "profile", "verify", "--exit-code")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(json.loads(p.stdout)["reasons"], ["drift"])
        self.assertEqual(self.d.ctl("profile", "verify", "extra").returncode, 2)
        p = subprocess.run([CTL, "--socket", os.path.join(self.ptop, "none.sock"), "profile", "verify", "--exit-code"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 3, p.stderr)
        p = self.d.ctl("profile", "apply", "db", "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("dry run: nothing was changed", p.stdout)


def partial_tree(root):
    """Node 0's 2M count file gives one page fewer than written (FakeTree.partial) for the daemon's
    whole life: the privileged helper keeps the file it opened, so it is never put back mid-class."""
    t = FakeTree(root, nodes=4)
    t.partial(NODE0_2M)
    return t


class ApplySlowOnTree(WithProfileDir, SpecDaemonTest):
    """A pool that cannot reach its target: the apply compacts and retries until its deadline."""
    tree_factory = staticmethod(partial_tree)
    confs = {"slow": SLOW_CONF, "db": APPLY_CONF}

    def setUp(self):
        self.tree.write(THP + "/defrag", "always defer defer+madvise [madvise] never")

    def test_a_pool_that_cannot_grow_ends_partial_with_why(self):
        job = self.wait(self.activate("slow", deadline_ms=2500)["id"])
        self.assertEqual((job["status"], job["reason"]), ("partial", "deadline"), job)
        key = {k["key"]: k for k in job["result"]["keys"]}["hugepages.2M.node0"]
        self.assertEqual((key["outcome"], key["actual"]), ("partial", "11"))
        self.assertRegex(key["why"], r"^requested 12 2M pages on node 0, only 11 by the deadline: [2-9] tries, memory "
                                     r"compacted before each")
        self.assertGreaterEqual(job["result"]["pools"][0]["tries"], 2)
        st = self.call("GET", "/v1/profile").json
        self.assertEqual((st["state"], st["reasons"]), ("degraded", ["partial_allocation"]))
        self.assertEqual({k["key"]: k["verdict"] for k in st["keys"]}["hugepages.2M.node0"], "differs")
        self.assertEqual(self.metric('mempolicyd_profile_degraded{reason="partial_allocation"}'), "1")
        self.assertEqual(self.metric('mempolicyd_profile_pool_target_pages{size="2M",node="0"}'), "12")

    def test_a_second_activation_while_one_runs_is_409_and_a_changed_file_is_reported(self):
        self.addCleanup(write, os.path.join(self.pdir, "slow.conf"), SLOW_CONF)
        first = self.activate("slow", deadline_ms=4000)
        r = self.call("POST", "/v1/profile", body={"name": "db"}, status=409)
        self.assertEqual((r.json["code"], r.json["job_id"]), ("job.conflict", first["id"]))
        self.assertIn("a profile is being activated already", r.json["detail"])
        # once it resizes (its progress has the pool's targets), the pool is the job's: a resize of
        # that size is 409 naming it, as for any running resize
        until = time.monotonic() + 5
        while "targets" not in (self.d.get("/v1/jobs/%d" % first["id"]).json["progress"] or {}) \
                and time.monotonic() < until:
            time.sleep(0.02)
        r = self.call("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 1}}, status=409)
        self.assertEqual((r.json["code"], r.json["job_id"]), ("job.conflict", first["id"]))
        # while it runs, its file changes: the version validated is applied whole, and said stale;
        # the directory's watch (ops/profile_reload.c) then activates the new version behind it: one
        # reload job, whose knobs come first (its pool cannot fill either: it runs on to its deadline)
        write(os.path.join(self.pdir, "slow.conf"), SLOW_CONF.replace("madvise", "never"))
        job = self.wait(first["id"])
        self.assertTrue(job["result"]["profile_changed"], job["result"])
        self.assertIn("changed while job %d applied it" % first["id"], self.d.log_text())
        until = time.monotonic() + 20
        while "[never]" not in self.tree.read(THP + "/defrag") and time.monotonic() < until:   # mid-write: no [
            time.sleep(0.02)
        self.assertEqual(bracketed(self.tree.read(THP + "/defrag")), "never")
        self.assertEqual(len(self.d.sql("SELECT id FROM jobs WHERE kind = 'profile.apply' AND source = 'reload'")), 1)


class ChangedBeforeTheFirstWrite(StalledResize, unittest.TestCase):
    """One job worker held by a stalled resize (test_pools_fake.StalledResize): the activation is
    queued behind it, its file is rewritten while it waits, and the job, once it runs, writes
    nothing and says profile.changed. The profile has a pool key (of the 1 GiB size, in sync, so
    nothing of the stalled 2 MiB pool): a profile of knobs only is run within the POST, with no
    interval between validation and the first write for a file to change in."""
    def setUp(self):
        self.make_stall_tree("mpd-apply-")
        self.pdir = os.path.join(self.tmp, "profiles.d")
        os.makedirs(self.pdir)
        os.chmod(self.pdir, 0o755)
        write(os.path.join(self.pdir, "db.conf"), "[knobs]\nthp.defrag = defer\n[hugepages.1G]\nnode2 >= 0\n")
        self.d = Daemon(self.tree, ("--profiles-dir", self.pdir, "--test-job-workers", "1"))
        self.d.start()

    def tearDown(self):
        self.end_stall()

    def test_nothing_is_written_and_the_profile_in_force_stays(self):
        self.start_stalled_job()
        r = self.d.request("POST", "/v1/profile", body={"name": "db"})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(r.json["status"], "queued")
        write(os.path.join(self.pdir, "db.conf"), "[knobs]\nthp.defrag = never\n[hugepages.1G]\nnode2 >= 0\n")
        self.release()
        job = self.d.get("/v1/jobs/%d?wait=30" % r.json["id"]).json
        self.assertEqual(job["status"], "failed", job)
        self.assertIn("changed after it was validated", job["error"])
        self.assertEqual(bracketed(self.tree.read(THP + "/defrag")), "madvise")
        st = self.d.get("/v1/profile").json
        self.assertEqual((st["state"], st["job_id"], st["error"]["code"]), ("none", None, "profile.changed"))



class ApplyCgroupsOnTree(WithProfileDir, SpecDaemonTest):
    """cgroup mems through the cgroup.mems operation of PUT /v1/cgroups, on test_cgroups' v2 tree."""
    tree_factory = staticmethod(v2_tree)
    confs = {"cg": "[cgroup a]\nmems = 0-1\n[cgroup a/narrow/leaf]\nmems = 2\n[cgroup nocpuset]\nmems = 0\n"}

    def test_each_cgroup_is_set_refused_or_unsupported(self):
        job = self.wait(self.activate("cg")["id"])
        self.assertEqual(job["status"], "failed", job)   # a/narrow/leaf: node 2 is outside its parent's 0-1
        by = {k["key"]: k for k in job["result"]["keys"]}
        self.assertEqual((by["cgroup[a].mems"]["outcome"], by["cgroup[a].mems"]["actual"]), ("written", "0-1"))
        self.assertEqual(by["cgroup[a/narrow/leaf].mems"]["outcome"], "failed")
        self.assertIn("parent", by["cgroup[a/narrow/leaf].mems"]["why"])
        self.assertEqual(by["cgroup[nocpuset].mems"]["outcome"], "unsupported")
        self.assertEqual(self.tree.read("sys/fs/cgroup/a/cpuset.mems"), "0-1")
        self.assertEqual(by["cgroup[a].mems"]["paths"], [os.path.join(self.tree.sys, "fs/cgroup/a/cpuset.mems")])
        ops = job["result"]["cgroup_operation_ids"]
        self.assertEqual(len(ops), 1)
        self.assertEqual(self.d.sql("SELECT kind, source, status FROM operations WHERE id = ?", (ops[0],)),
                         [("cgroup.mems", "profile", "ok")])
        st = self.call("GET", "/v1/profile").json
        self.assertEqual((st["state"], st["reasons"]), ("degraded", ["apply_failed"]))


REAL_THP = "/sys/kernel/mm/transparent_hugepage"
REAL_NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"


@unittest.skipUnless(os.access(REAL_THP + "/defrag", os.W_OK) and os.access(REAL_NODE0, os.W_OK),
                     "needs root and the real THP knobs and a 2 MiB pool on node 0")
class ApplyRealKernel(WithProfileDir, DaemonTest):
    """The real knobs and pool; each test puts back what it changed, also on failure."""
    @classmethod
    def setUpClass(cls):
        cls.n0 = int(real_file(REAL_NODE0))
        cls.confs = {
            "host": ("[knobs]\nthp.defrag = defer+madvise|defer\nthp.khugepaged.pages_to_scan >= 1\n"
                     "thp.size.4096kB.enabled = never\n[hugepages.2M]\nnode0 = %d\n" % (cls.n0 + 8)),
            "hostreq": "[knobs]\nthp.defrag = defer\nthp.size.4096kB.enabled = never ; required\n",
            "bad": "[knobs]\nthp.defrag = defer\nthp.khugepaged.pages_to_scan = lots\n",
        }
        super().setUpClass()

    def setUp(self):
        saved = {p: real_file(p) for p in (REAL_THP + "/defrag", REAL_THP + "/khugepaged/pages_to_scan", REAL_NODE0)}
        saved[REAL_THP + "/defrag"] = bracketed(saved[REAL_THP + "/defrag"])
        for p, v in saved.items():
            self.addCleanup(real_write, p, v)
        self.pages_to_scan = saved[REAL_THP + "/khugepaged/pages_to_scan"]
        real_write(REAL_THP + "/defrag", "madvise")

    def test_thp_knobs_and_the_2m_pool_applied_and_a_missing_knob_is_unsupported(self):
        job = self.wait(self.activate("host")["id"])
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(bracketed(real_file(REAL_THP + "/defrag")), "defer+madvise")
        self.assertEqual(int(real_file(REAL_NODE0)), self.n0 + 8)
        self.assertEqual(real_file(REAL_THP + "/khugepaged/pages_to_scan"), self.pages_to_scan)
        by = {k["key"]: k for k in job["result"]["keys"]}
        self.assertEqual(by["thp.khugepaged.pages_to_scan"]["outcome"], "in_sync")
        self.assertEqual(by["thp.size.4096kB.enabled"]["outcome"], "unsupported")
        self.assertEqual(by["hugepages.2M.node0"]["outcome"], "resized")
        self.assertEqual(self.d.sql("SELECT knob FROM knob_changes WHERE op_id = ?",
                                    (job["result"]["knobs_operation_id"],)), [("thp.defrag",)])
        st = self.d.get("/v1/profile").json
        self.assertEqual((st["name"], st["state"]), ("host", "applied"), st)
        p = self.d.ctl("profile", "verify", "--exit-code")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        subprocess.run(["sh", "-c", "echo never > %s/defrag" % REAL_THP], check=True)
        p = self.d.ctl("profile", "verify", "--exit-code")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("thp.defrag: expected = defer+madvise|defer, actual never (drift)", p.stdout)

    def test_a_required_missing_knob_degrades(self):
        job = self.wait(self.activate("hostreq")["id"])
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(bracketed(real_file(REAL_THP + "/defrag")), "defer")
        st = self.d.get("/v1/profile").json
        self.assertEqual((st["state"], st["reasons"]), ("degraded", ["unsupported_required"]))
        self.assertEqual(self.d.ctl("profile", "verify", "--exit-code").returncode, 1)

    def test_a_bad_profile_changes_nothing(self):
        ops = self.d.sql("SELECT count(*) FROM operations")
        r = self.d.request("POST", "/v1/profile", body={"name": "bad"})
        self.assertEqual((r.status, r.json["code"], r.json["line"]), (422, "profile.bad_value", 3), r.raw)
        self.assertEqual(bracketed(real_file(REAL_THP + "/defrag")), "madvise")
        self.assertEqual(self.d.sql("SELECT count(*) FROM operations"), ops)


if __name__ == "__main__":
    unittest.main()
