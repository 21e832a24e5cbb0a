"""Experiments on the real kernel (POST /v1/experiments, mempolicyctl experiment, advise): arms
compared on a probe or the caller's own program in ABBA rounds, every knob put back on every path
(done, failed, cancelled, SIGKILL), the raw samples kept and the comparisons computed again from
them; bad input refused with its registered problem and nothing changed.
Run under `flock /tmp/mpd-test.lock`: it writes the real thp.enabled (and puts it back; the suite
ends with madvise)."""
import grp
import json
import os
import pwd
import shutil
import signal
import tempfile
import time

from lib import Daemon, DaemonTest, E2E_USER, bracketed, real_file, real_write, serving_user, shared_tmp
from test_probes_framework import wait_for

THP = "/sys/kernel/mm/transparent_hugepage/enabled"
NOBODY = pwd.getpwnam("nobody")
ALWAYS = {"name": "always", "knobs": {"thp.enabled": "always"}}
MADVISE = {"name": "madvise", "knobs": {"thp.enabled": "madvise"}}
NEVER = {"name": "never", "knobs": {"thp.enabled": "never"}}
SPARSE = {"probe": "sparse-touch", "params": {"threads": 2, "size": "16M"}}


def thp():
    return bracketed(real_file(THP))


class ExperimentTest(DaemonTest):
    # nobody's primary group is an admin group: the caller's-own-program case runs as a non-root admin
    daemon_args = ("--admin-group", grp.getgrgid(NOBODY.pw_gid).gr_name)

    def setUp(self):
        self.before = thp()
        real_write(THP, "madvise")
        self.addCleanup(real_write, THP, "madvise")   # also when the test fails

    def post(self, body):
        return self.d.request("POST", "/v1/experiments", body)

    def finished(self, job_id, timeout=120):
        return wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
            self.d.get("/v1/jobs/%d" % job_id).json), timeout, "experiment %d to end" % job_id)

    def ctl_json(self, *args, user=None):
        r = self.d.ctl("--json", "experiment", "run", *args, user=user, timeout=120)
        return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr

    def test_sparse_touch_always_vs_madvise_gives_a_verdict_per_metric_and_puts_thp_back(self):
        r = self.post({"arms": [ALWAYS, MADVISE], "workload": SPARSE, "rounds": 10, "warmup": 1, "seed": 42})
        self.assertEqual(r.status, 202, r.raw)
        job = self.finished(r.json["id"])
        self.assertEqual(job["status"], "ok", job.get("error"))
        self.assertEqual(thp(), "madvise")
        res = job["result"]
        self.assertEqual(res["restored"], [{"what": "knob", "target": "thp.enabled", "value": "madvise",
                                            "status": "restored"}])
        # ABBA: each block of two rounds is an order and its reverse; the seed is the one asked
        self.assertEqual(res["seed"], 42)
        self.assertEqual(len(res["order"]), 10)
        for k in range(0, 10, 2):
            self.assertEqual(res["order"][k + 1], list(reversed(res["order"][k])))
            self.assertEqual(sorted(res["order"][k]), ["always", "madvise"])
        cmps = {c["metric"]: c for c in res["comparisons"]}
        for metric in ("wall_s", "anon_huge_kb", "vmstat.thp_fault_alloc"):
            self.assertIn(metric, cmps)
            c = cmps[metric]
            self.assertEqual((c["baseline"], c["arm"]), ("always", "madvise"))
            self.assertTrue(c["verdict"].startswith(("Difference at 95% confidence", "No difference proven")), c)
        # madvise leaves the probe's plain mapping without huge pages: that much is certain
        self.assertEqual(cmps["anon_huge_kb"]["median_diff_pct"], -100.0)
        self.assertTrue(cmps["anon_huge_kb"]["different"])
        # the raw samples: 11 rounds x 2 arms, the warm-up marked; the comparisons come again from them
        x = self.d.get("/v1/experiments/%d" % job["id"]).json
        self.assertEqual(x["comparisons"], res["comparisons"])
        samples = self.d.get("/v1/experiments/%d/samples" % job["id"]).json["samples"]
        wall = [s for s in samples if s["metric"] == "wall_s"]
        self.assertEqual(len(wall), 22)
        self.assertEqual(sum(s["warmup"] for s in wall), 2)
        self.assertEqual([s["seq"] for s in wall], list(range(22)))
        self.assertIn(job["id"], [e["id"] for e in self.d.get("/v1/experiments").json["experiments"]])
        # advice reads it back: never advice without evidence, a fragment when it is a knob
        adv = self.d.get("/v1/advice").json
        for a in adv["advice"]:
            self.assertTrue(a["better"])
            self.assertTrue(a["profile_fragment"].startswith("[knobs]\nthp.enabled = "), a)

    def test_advice_shows_a_setting_better_on_one_workload_and_worse_on_another_as_a_contradiction(self):
        # Touching 8 bytes per 2 MiB, THP never wins (no 2 MiB to zero per touch); touching every
        # 4 KiB of it, always wins (one fault per 2 MiB instead of 511): seed 002's point, both ways.
        d = Daemon()
        d.start()
        try:
            for params in ({"threads": 2, "size": "16M", "touches": 8},
                           {"threads": 1, "size": "32M", "touches": 511, "passes": 1}):
                r = d.request("POST", "/v1/experiments", {"arms": [ALWAYS, NEVER], "rounds": 10,
                                                          "workload": {"probe": "sparse-touch", "params": params}})
                self.assertEqual(r.status, 202, r.raw)
                job = wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
                    d.get("/v1/jobs/%d" % r.json["id"]).json), 120, "experiment")
                self.assertEqual(job["status"], "ok", job.get("error"))
            adv = d.get("/v1/advice?floor_pct=5").json
        finally:
            d.cleanup()
        self.assertEqual(adv["experiments_considered"], 2)
        always, never = 'knobs {"thp.enabled":"always"}', 'knobs {"thp.enabled":"never"}'
        self.assertEqual([c["settings"] for c in adv["contradictions"]], [[always, never]], adv)
        c = adv["contradictions"][0]
        touches = lambda side: {e["workload"]["params"]["touches"] for e in c[side]}
        self.assertEqual((touches("first_better"), touches("second_better")), ({511}, {8}), c)
        # not resolved by picking: neither side is advised
        self.assertEqual([a for a in adv["advice"] if {a["setting"], a["instead_of"]} == {always, never}], [])
        self.assertEqual(thp(), "madvise")

    def test_advise_apply_checks_a_profile_through_the_apply_dry_run_and_writes_nothing(self):
        profiles = tempfile.mkdtemp(prefix="mpd-prof-", dir=shared_tmp())
        self.addCleanup(shutil.rmtree, profiles, ignore_errors=True)
        os.chmod(profiles, 0o755)
        for name, text in (("good", "[knobs]\nthp.enabled = never\n"), ("other", "[knobs]\nthp.defrag = madvise\n")):
            with open(os.path.join(profiles, name + ".conf"), "w") as f:
                f.write(text)
            os.chmod(os.path.join(profiles, name + ".conf"), 0o644)
        d = Daemon(args=["--profiles-dir", profiles])
        d.start()
        try:
            r = d.request("POST", "/v1/experiments", {"arms": [ALWAYS, NEVER], "workload": SPARSE, "rounds": 10})
            self.assertEqual(r.status, 202, r.raw)
            job = wait_for(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
                d.get("/v1/jobs/%d" % r.json["id"]).json), 120, "experiment")
            self.assertEqual(job["status"], "ok", job.get("error"))
            advised = [a["profile_fragment"] for a in d.get("/v1/advice").json["advice"]]
            self.assertIn("[knobs]\nthp.enabled = never\n", advised)
            db = d.db_snapshot()
            good, other = d.ctl("advise", "--apply", "good"), d.ctl("advise", "--apply", "other")
            if d.request("POST", "/v1/profile", {"name": "good", "dry_run": True}).status == 404:
                # a tree without the profile apply (branch h-apply): said so, nothing checked
                for p in (good, other):
                    self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                    self.assertIn("no profile apply (POST /v1/profile)", p.stderr)
            else:
                self.assertEqual(good.returncode, 0, good.stdout + good.stderr)
                self.assertIn("carries good: thp.enabled = never", good.stdout)
                self.assertEqual(other.returncode, 1, other.stdout + other.stderr)
                self.assertIn("LACKS   other: thp.enabled = never", other.stdout)
                self.assertIsNone(d.get("/v1/profile").json["name"])   # a dry run: nothing in force
            self.assertEqual(d.db_snapshot(), db)
            self.assertEqual(thp(), "madvise")
        finally:
            d.cleanup()

    def test_bad_input_is_refused_and_changes_nothing(self):
        w = SPARSE
        cases = [
            ({"arms": [ALWAYS], "workload": w}, 422, "experiment.too_few_arms"),
            ({"arms": [ALWAYS, dict(ALWAYS)], "workload": w}, 422, "experiment.duplicate_arm"),
            ({"arms": [ALWAYS, dict(ALWAYS, name="again")], "workload": w}, 422, "experiment.identical_arms"),
            ({"arms": [ALWAYS, {"name": "b", "knobs": {"thp.no_such": "x"}}], "workload": w}, 404, "knob.unknown"),
            ({"arms": [ALWAYS, {"name": "b", "knobs": {"thp.enabled": "sometimes"}}], "workload": w}, 422,
             "knob.value_not_allowed"),
            ({"arms": [ALWAYS, NEVER], "workload": w, "rounds": 0}, 422, "experiment.bad_rounds"),
            ({"arms": [ALWAYS, NEVER], "workload": w, "rounds": 1001}, 422, "experiment.bad_rounds"),
            ({"arms": [ALWAYS, NEVER], "workload": w, "timeout_s": 601}, 422, "experiment.bad_rounds"),
            ({"arms": [ALWAYS, NEVER], "workload": {"argv": ["/nonexistent/bench"]}}, 422, "process.exec_failed"),
            ({"arms": [ALWAYS, NEVER], "workload": {"argv": ["/etc/passwd"]}}, 422, "process.exec_failed"),
            ({"arms": [ALWAYS, NEVER], "workload": {"probe": "no-such-probe"}}, 404, "probe.unknown"),
            ({"arms": [ALWAYS, {"name": "b c", "knobs": {"thp.enabled": "never"}}], "workload": w}, 422,
             "experiment.bad_arm"),
        ]
        db = self.d.db_snapshot()
        for body, status, code in cases:
            with self.subTest(code=code, body=body):
                self.assertProblem(self.post(body), status, code)
        self.assertEqual(self.d.db_snapshot(), db)
        self.assertEqual(thp(), "madvise")
        # a caller that is neither root nor in the admin group (root's own: -- here nobody is an admin,
        # so a daemon without --admin-group)
        d = Daemon()
        d.start()
        try:
            r = d.ctl("experiment", "run", "--arm", "a:thp.enabled=always", "--arm", "b:thp.enabled=never",
                      "--probe", "sparse-touch", "size=16M", user="nobody")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("auth.forbidden", r.stderr)
            self.assertEqual(d.get("/v1/experiments").json["experiments"], [])
        finally:
            d.cleanup()
        # the CLI refuses a malformed arm before anything is sent
        r = self.d.ctl("experiment", "run", "--arm", "no-colon", "--probe", "sparse-touch")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_a_profile_fragment_arm_sets_its_knobs_and_puts_thp_back(self):
        out = tempfile.mkdtemp(prefix="mpd-exp-", dir=shared_tmp())
        self.addCleanup(shutil.rmtree, out, ignore_errors=True)
        os.chmod(out, 0o777)
        frag = os.path.join(out, "always.conf")
        with open(frag, "w") as f:
            f.write("# an arm as a profile fragment\n[knobs]\nthp.enabled = always\n")
        # each run writes the THP mode it ran under: the fragment's arm ran under always, the other
        # under madvise, and the fragment's knob was saved and put back like a "knobs" arm's
        rc, x, err = self.ctl_json("--arm", "frag:profile=" + frag, "--arm", "madvise:thp.enabled=madvise",
                                   "--rounds", "2", "--warmup", "0", "--", "/bin/sh", "-c",
                                   "cat %s >> %s/modes" % (THP, out), user="nobody")
        self.assertEqual(rc, 0, err)
        self.assertEqual(x["status"], "ok", x.get("error"))
        with open(os.path.join(out, "modes")) as f:
            modes = sorted(bracketed(line) for line in f.read().splitlines())
        self.assertEqual(modes, ["always", "always", "madvise", "madvise"])
        self.assertEqual(x["result"]["arm_settings"], {"frag": {"thp.enabled": "always"},
                                                       "madvise": {"thp.enabled": "madvise"}})
        self.assertEqual(x["result"]["restored"], [{"what": "knob", "target": "thp.enabled", "value": "madvise",
                                                    "status": "restored"}])
        self.assertEqual(x["request"]["arms"][0]["profile"], "# an arm as a profile fragment\n[knobs]\n"
                         "thp.enabled = always\n")
        self.assertEqual(thp(), "madvise")

    def test_a_profile_fragment_an_arm_cannot_write_is_refused_at_its_place_and_changes_nothing(self):
        w = SPARSE

        def frag(text, **more):
            return {"arms": [dict({"name": "b", "profile": text}, **more), NEVER], "workload": w}
        cases = [
            (frag("[knobs]\nthp.enabled always\n"), 422, "profile.syntax", "arm b: profile:2:13: expected"),
            (frag("[profile]\ninclude = base\n[knobs]\nthp.enabled = always\n"), 422,
             "experiment.profile_unsupported", "arm b: profile:2:11: include"),
            (frag("[knobs]\nthp.enabled = always\n[hugepages.2M]\ntotal = 0\n"), 422,
             "experiment.profile_unsupported", "arm b: profile:4:1: hugepages"),
            (frag("[cgroup a.slice]\nmems = 0\n"), 422, "experiment.profile_unsupported", "arm b: profile:2:1:"),
            (frag("[knobs]\nthp.khugepaged.pages_to_scan >= 4096\n"), 422, "experiment.profile_unsupported",
             "arm b: profile:2:1: thp.khugepaged.pages_to_scan >="),
            (frag("[knobs]\nthp.enabled = always|madvise\n"), 422, "experiment.profile_unsupported",
             "arm b: profile:2:1: thp.enabled: alternatives"),
            (frag("[knobs]\nthp.enabled = always ; required\n"), 422, "experiment.profile_unsupported",
             "arm b: profile:2:1:"),
            (frag("[profile]\non-drift = restore\n"), 422, "experiment.profile_unsupported", "arm b: profile:"),
            (frag("[knobs]\nthp.enabled = always\n", knobs={"thp.enabled": "madvise"}), 422,
             "experiment.knob_twice", "arm b: profile:2:1: thp.enabled"),
            # its knobs are checked as "knobs" are, at their place
            (frag("[knobs]\nthp.no_such = 1\n"), 404, "knob.unknown", "arm b: profile:2:1: no knob"),
            (frag("[knobs]\nthp.enabled = sometimes\n"), 422, "knob.value_not_allowed", "arm b: profile:2:1:"),
            (frag("[knobs]\nthp.enabled = never\n"), 422, "experiment.identical_arms", "arms b and never"),
            (frag(42), 400, "request.wrong_type", "arm b: \"profile\""),
        ]
        db = self.d.db_snapshot()
        for body, status, code, detail in cases:
            with self.subTest(code=code, body=body):
                r = self.post(body)
                self.assertProblem(r, status, code)
                self.assertIn(detail, r.json["detail"])
        self.assertEqual(self.d.db_snapshot(), db)
        self.assertEqual(thp(), "madvise")
        # the CLI reads the file: one it cannot read is a usage error, nothing sent
        r = self.d.ctl("experiment", "run", "--arm", "a:profile=/nonexistent/frag.conf", "--arm",
                       "b:thp.enabled=never", "--", "/bin/true")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("/nonexistent/frag.conf", r.stderr)
        self.assertEqual(self.d.db_snapshot(), db)

    def test_one_at_a_time_and_cancel_puts_back(self):
        r = self.post({"arms": [ALWAYS, NEVER], "workload": SPARSE, "rounds": 1000})
        self.assertEqual(r.status, 202, r.raw)
        jid = r.json["id"]
        self.addCleanup(lambda: self.d.request("DELETE", "/v1/experiments/%d" % jid) and self.finished(jid))
        wait_for(lambda: self.d.get("/v1/jobs/%d" % jid).json["progress"].get("runs_done", 0) >= 2, 30, "two runs")
        second = self.post({"arms": [ALWAYS, NEVER], "workload": SPARSE, "rounds": 10})
        self.assertProblem(second, 409, "job.conflict")
        self.assertEqual(second.json["job_id"], jid)
        r = self.d.ctl("experiment", "cancel", str(jid))
        self.assertEqual(r.returncode, 0, r.stderr)
        job = self.finished(jid)
        self.assertEqual(job["status"], "cancelled")
        self.assertEqual(thp(), "madvise")
        self.assertEqual(job["result"]["restored"][0]["status"], "restored")

    def test_sigkill_mid_experiment_is_put_back_at_the_next_start(self):
        d = Daemon()
        d.start()
        try:
            r = d.request("POST", "/v1/experiments", {"arms": [ALWAYS, NEVER], "workload": SPARSE, "rounds": 1000})
            self.assertEqual(r.status, 202, r.raw)
            jid = r.json["id"]
            wait_for(lambda: d.get("/v1/jobs/%d" % jid).json["progress"].get("runs_done", 0) >= 3, 30, "runs")
            self.assertIn(thp(), ("always", "never"))   # an arm's value is in force
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            d.proc = None
            d.start()
            self.assertEqual(thp(), "madvise")
            job = d.get("/v1/jobs/%d" % jid).json
            self.assertEqual(job["status"], "interrupted")
            restores = d.get("/v1/history?kind=probe.restore").json["operations"]
            self.assertEqual(len(restores), 1)
            # the runs it finished are kept
            self.assertGreaterEqual(len(d.get("/v1/experiments/%d/samples" % jid).json["samples"]), 1)
        finally:
            d.cleanup()

    def test_a_user_program_runs_as_the_caller_and_a_failing_arm_is_recorded(self):
        out = tempfile.mkdtemp(prefix="mpd-exp-", dir=shared_tmp())
        self.addCleanup(shutil.rmtree, out, ignore_errors=True)
        os.chmod(out, 0o777)
        prog = "id -u >> %s/uids; head -c 200000 /dev/zero | cksum > /dev/null" % out
        rc, x, err = self.ctl_json("--arm", "always:thp.enabled=always", "--arm", "never:thp.enabled=never",
                                   "--rounds", "4", "--warmup", "0", "--", "/bin/sh", "-c", prog, user="nobody")
        self.assertEqual(rc, 0, err)
        self.assertEqual(x["status"], "ok", x.get("error"))
        with open(os.path.join(out, "uids")) as f:
            self.assertEqual(f.read().split(), [str(NOBODY.pw_uid)] * 8)
        # every run's rusage is kept; a comparison is made of what moved (a time that stayed 0 in
        # both arms, as a short program's system time may at the kernel's accounting grain, says
        # nothing and is left out)
        sampled = {s["metric"] for s in self.d.get("/v1/experiments/%d/samples" % x["id"]).json["samples"]}
        self.assertTrue({"wall_s", "user_s", "sys_s", "minor_faults"} <= sampled, sampled)
        metrics = {c["metric"] for c in x["comparisons"]}
        self.assertTrue({"wall_s", "minor_faults"} <= metrics, metrics)
        self.assertEqual(x["actor"]["uid"], NOBODY.pw_uid)
        self.assertEqual(thp(), "madvise")

        # the program fails whenever THP is always: the experiment stops there, says which arm and
        # round, and puts thp.enabled back
        rc, x, err = self.ctl_json("--arm", "never:thp.enabled=never", "--arm", "always:thp.enabled=always",
                                   "--rounds", "4", "--warmup", "0", "--", "/bin/sh", "-c",
                                   "! grep -q '\\[always\\]' " + THP, user="nobody")
        self.assertEqual(rc, 1, err)
        self.assertEqual(x["status"], "failed")
        self.assertEqual((x["result"]["failure"]["arm"], x["result"]["failure"]["round"]), ("always", 1))
        self.assertIn("exited with status 1", x["result"]["failure"]["error"])
        self.assertEqual(thp(), "madvise")

    def test_a_run_past_its_time_bound_is_killed_and_fails_the_experiment(self):
        t0 = time.monotonic()
        rc, x, err = self.ctl_json("--arm", "always:thp.enabled=always", "--arm", "never:thp.enabled=never",
                                   "--rounds", "2", "--warmup", "0", "--timeout", "1", "--", "/bin/sleep", "30")
        self.assertEqual(rc, 1, err)
        self.assertLess(time.monotonic() - t0, 25)   # killed after its second, not waited for
        self.assertEqual(x["status"], "failed")
        self.assertEqual(x["request"]["timeout_s"], 1)
        self.assertIn("longer than the time bound", x["result"]["failure"]["error"])
        self.assertEqual(x["result"]["failure"]["round"], 1)
        self.assertEqual(thp(), "madvise")

    def test_a_caller_that_hangs_up_gets_no_program_runs(self):
        if not serving_user(E2E_USER):
            self.skipTest("one process (--user root): no helper checks the caller's connection")
        # d.request closes its connection after the 202: the helper starts nothing as the caller then
        r = self.post({"arms": [ALWAYS, NEVER], "workload": {"argv": ["/bin/true"]}, "rounds": 2})
        self.assertEqual(r.status, 202, r.raw)
        job = self.finished(r.json["id"])
        self.assertEqual(job["status"], "failed")
        self.assertIn("connection closed", job["error"])
        self.assertEqual(thp(), "madvise")

    def test_a_a_experiment_reports_its_verdict(self):
        rc, x, err = self.ctl_json("--aa", "--arm", "a:thp.enabled=madvise", "--arm", "b:thp.enabled=madvise",
                                   "--rounds", "10", "--", "/bin/true")
        self.assertEqual(rc, 0, err)
        cmps = {c["metric"]: c for c in x["comparisons"]}
        self.assertIn("wall_s", cmps)
        for c in cmps.values():
            self.assertTrue(c["verdict"].startswith(("Difference at 95% confidence", "No difference proven")), c)
        print("\nA/A on /bin/true, 10 rounds: " + "; ".join("%s: %s (p %.3g)" % (m, c["verdict"], c["p_value"])
                                                          for m, c in sorted(cmps.items())
                                                          if c["p_value"] is not None))
        self.assertEqual(thp(), "madvise")


if __name__ == "__main__":
    import unittest
    unittest.main()
