"""The six probe workloads through the daemon against the real kernel (POST /v1/probes/{kind}):
each runs in its child, is recorded, and its figures are consistent (succeeded + failed = tried,
pages per node add up to the total, the batches add up to what the pool gained); what a probe
changes (the 2 MiB pool, thp.enabled, numa_balancing) is back to its old value after it ends, is
cancelled or fails. Bad input (an unknown probe, an oversized region, zero threads, absurd
durations, an unknown node, unknown or mistyped members) is a 4xx problem that starts no job,
records nothing and leaves /sys alone. Sizes are small (tens of MiB, seconds): CI has 2 cores.
Every test also restores what it could change itself (addCleanup)."""
import time

from lib import DaemonTest, bracketed, real_file, real_write

ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
BALANCING = "/proc/sys/kernel/numa_balancing"
POOL = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
ENDED = ("ok", "failed", "cancelled", "partial", "interrupted")


def wait_job(d, job_id, until=ENDED, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = d.get("/v1/jobs/%d" % job_id)
        if r.status == 200 and r.json["status"] in until:
            return r.json
        time.sleep(0.05)
    raise AssertionError("job %d not %s within %ds: %s" % (job_id, until, timeout, d.get("/v1/jobs/%d" % job_id).raw))


def node_sums(nodes):
    return sum(n["huge"] for n in nodes.values()), sum(n["base"] for n in nodes.values())


class ProbeKindsTest(DaemonTest):
    def setUp(self):
        self.thp0 = bracketed(real_file(ENABLED))
        self.bal0 = real_file(BALANCING)
        self.pool0 = real_file(POOL)
        self.addCleanup(real_write, ENABLED, self.thp0)
        self.addCleanup(real_write, BALANCING, self.bal0)
        self.addCleanup(real_write, POOL, self.pool0)
        if self.thp0 == "never":       # thp-fault needs madvise or always, like transhuge-stress
            real_write(ENABLED, "madvise")

    def kernel_state(self):
        return bracketed(real_file(ENABLED)), real_file(BALANCING), real_file(POOL)

    def run_probe(self, kind, body, status="ok"):
        r = self.d.request("POST", "/v1/probes/" + kind, body)
        self.assertEqual(r.status, 202, r.raw)
        done = wait_job(self.d, r.json["id"])
        self.assertEqual(done["status"], status, done)
        return done

    def one_pass(self, done):
        passes = done["result"]["passes"]
        self.assertEqual(len(passes), 1, passes)
        self.assertEqual(passes[0]["status"], "ok", passes[0])
        return passes[0]["result"]

    # -- thp-fault ------------------------------------------------------------------------------------

    def test_thp_fault_figures_add_up_and_are_recorded(self):
        done = self.run_probe("thp-fault", {"size": "16M", "loops": 2})
        r = self.one_pass(done)
        self.assertEqual((r["chunks"], r["loops"], r["tried"]), (8, 2, 16))
        self.assertEqual(r["succeeded"] + r["failed"], r["tried"])
        huge, base = node_sums(r["nodes"])
        self.assertEqual(huge, r["succeeded"])
        self.assertEqual(huge + base + r["unplaced"], r["tried"])
        self.assertEqual(sum(p["succeeded"] + p["failed"] for p in r["passes"]), r["tried"])
        for p in r["passes"]:
            self.assertLessEqual(p["different"], p["succeeded"])
            self.assertGreater(p["mib_s"], 0)
        # The kernel's own accounting agrees: every huge page the PFN test saw was a THP fault.
        self.assertGreaterEqual(r["vmstat"]["thp_fault_alloc"], r["succeeded"])
        op = self.d.get("/v1/history/%d" % done["operation_id"]).json
        self.assertEqual((op["kind"], op["status"]), ("probe.thp-fault", "ok"))
        self.assertEqual(op["result"]["passes"][0]["result"]["tried"], 16)

    def test_thp_fault_under_bind_lands_on_the_policy_nodes(self):
        done = self.run_probe("thp-fault", {"size": "8M", "loops": 1, "policy": {"mode": "bind", "nodes": "0"}})
        r = self.one_pass(done)
        self.assertEqual(r["policy"], {"mode": "bind", "nodes": "0"})
        self.assertEqual(list(r["nodes"]), ["0"])
        self.assertEqual(r["huge_on_policy_nodes"], r["succeeded"])

    # -- hugetlb-alloc --------------------------------------------------------------------------------

    def test_hugetlb_alloc_grows_in_batches_and_puts_the_pool_back(self):
        before = int(self.pool0)
        done = self.run_probe("hugetlb-alloc", {"pages": 5, "batch": 2})
        r = self.one_pass(done)
        self.assertEqual(real_file(POOL), self.pool0, "the pool is back to its size before the probe")
        self.assertEqual((r["nr_before"], r["target"]), (before, before + 5))
        self.assertEqual(sum(b["achieved"] for b in r["batches"]), r["gained"])
        self.assertEqual(r["reached"], before + r["gained"])
        self.assertEqual([b["requested"] for b in r["batches"]][:3], [2, 2, 1][:len(r["batches"])])
        self.assertEqual(r["restore"], {"to": before, "read_back": before, "ok": True})
        self.assertEqual(r["latency_ms"]["count"], len([b for b in r["batches"] if b["achieved"]]))
        # the framework's own restore row found it already back
        self.assertTrue(all(x["status"] == "restored" for x in done["result"]["restored"]), done["result"]["restored"])

    # -- sparse-touch ---------------------------------------------------------------------------------

    def test_sparse_touch_compares_always_and_never_and_restores_thp(self):
        done = self.run_probe("sparse-touch", {"size": "32M", "threads": 2, "touches": 4, "passes": 2,
                                               "compare_thp": True})
        self.assertEqual(bracketed(real_file(ENABLED)), self.thp_now(), "thp.enabled put back")
        passes = done["result"]["passes"]
        self.assertEqual([p["label"] for p in passes], ["always", "never"])
        for p in passes:
            self.assertEqual(p["result"]["thp_enabled"], p["label"], "the pass ran under its setting")
            self.assertGreater(p["result"]["page_faults"], 0)
            self.assertEqual(sum(p["result"]["chunk_nodes"].values()), 16)
        # never: no huge page can back the region
        self.assertEqual(passes[1]["result"]["anon_huge_kb"], 0)

    def thp_now(self):
        return self.thp0 if self.thp0 != "never" else "madvise"

    def test_sparse_touch_cancelled_mid_pass_restores_thp(self):
        r = self.d.request("POST", "/v1/probes/sparse-touch", {"size": "256M", "threads": 1, "touches": 511,
                                                                "passes": 10000, "compare_thp": True})
        self.assertEqual(r.status, 202, r.raw)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            j = self.d.get("/v1/jobs/%d" % r.json["id"]).json
            if j["status"] == "running" and (j.get("progress") or {}).get("pass") == 1:
                break
            time.sleep(0.02)
        self.assertEqual(bracketed(real_file(ENABLED)), "always", "the first pass runs under always")
        self.assertIn(self.d.request("DELETE", "/v1/jobs/%d" % r.json["id"]).status, (200, 202))
        done = wait_job(self.d, r.json["id"])
        self.assertEqual(done["status"], "cancelled", done)
        self.assertEqual(bracketed(real_file(ENABLED)), self.thp_now(), "thp.enabled put back after the cancel")

    def test_sparse_touch_past_its_time_bound_fails_and_restores_thp(self):
        done = self.run_probe("sparse-touch", {"size": "256M", "threads": 1, "touches": 511, "passes": 10000,
                                               "compare_thp": True, "timeout_s": 1}, status="failed")
        self.assertEqual(done["result"]["passes"][0]["status"], "timeout")
        self.assertEqual(bracketed(real_file(ENABLED)), self.thp_now(), "thp.enabled put back after the failure")

    # -- remote-access, numa-hinting, fragment -----------------------------------------------------

    def test_remote_access_measures_every_pair_beside_the_kernels_distances(self):
        r = self.one_pass(self.run_probe("remote-access", {"size": "8M", "passes": 1, "chase_steps": 100000}))
        n = len(r["nodes"])
        self.assertEqual(len(r["kernel_distance"]), n)
        self.assertEqual([len(row) for row in r["latency_ns"]], [n] * n)
        self.assertGreater(r["latency_ns"][0][0], 0)
        self.assertGreater(r["read_mib_s"][0][0], 0)
        self.assertEqual(r["measured_distance"][0][0], 10.0)
        self.assertEqual(r["kernel_distance"][0][0], 10)
        self.assertEqual(r["placed_pct"][0][0], 100.0)

    def test_numa_hinting_runs_on_then_off_and_restores_balancing(self):
        done = self.run_probe("numa-hinting", {"size": "8M", "threads": 1, "duration_s": 1})
        self.assertEqual(real_file(BALANCING), self.bal0, "numa_balancing put back")
        passes = done["result"]["passes"]
        self.assertEqual([p["label"] for p in passes], ["on", "off"])
        self.assertEqual([p["result"]["numa_balancing"] for p in passes], [1, 0])
        for p in passes:
            res = p["result"]
            self.assertEqual(sum(res["pages_after"].values()), 8 * 256)
            for k in ("numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated", "numa_pte_updates"):
                self.assertGreaterEqual(res["vmstat"][k], 0, k)
        # (The vmstat deltas are system-wide: other tasks' hinting faults count too, so no figure
        # of one pass can be asserted to be zero here; the QEMU stage sees them move.)

    def test_fragment_holds_the_node_while_thp_fault_runs(self):
        done = self.run_probe("fragment", {"node": 0, "share_pct": 2, "max": "32M",
                                           "during": {"probe": "thp-fault", "size": "8M", "loops": 1}})
        r = self.one_pass(done)
        self.assertEqual(r["taken_mib"] * 256, r["held_pages"] + r["freed_pages"])
        self.assertEqual(r["freed_pages"], r["held_pages"])
        for k in ("buddy_before", "buddy_fragmented", "buddy_held_end", "buddy_released"):
            n0 = r[k]["0"]
            self.assertGreaterEqual(n0["unusable_index_order9"], 0.0, k)
            self.assertLessEqual(n0["unusable_index_order9"], 1.0, k)
        inner = r["during"]
        self.assertEqual(inner["probe"], "thp-fault")
        self.assertEqual(inner["result"]["succeeded"] + inner["result"]["failed"], 4)
        self.assertEqual(done["request"]["params"]["during"]["params"], {"size": 8 << 20, "loops": 1})

    # -- bad input: 4xx, no job, nothing recorded, /sys untouched --------------------------------

    def test_bad_input_is_refused_and_changes_nothing(self):
        cases = [
            ("no-such-probe", {}, 404, "probe.unknown"),
            ("thp-fault", {"size": "4T"}, 422, "probe.bad_param"),                  # beyond the range
            ("thp-fault", {"size": "3M"}, 422, "probe.bad_param"),                  # not whole 2 MiB
            ("thp-fault", {"size": "1024G"}, 409, "probe.too_large"),               # beyond free memory
            ("thp-fault", {"loops": 0}, 422, "probe.bad_param"),
            ("thp-fault", {"duration_s": 100000000}, 422, "probe.bad_param"),
            ("thp-fault", {"duration_s": -1}, 422, "probe.bad_param"),
            ("thp-fault", {"loops": 1, "duration_s": 1}, 422, "probe.bad_param"),
            ("thp-fault", {"sise": "8M"}, 400, "request.unknown_field"),
            ("thp-fault", {"size": True}, 400, "request.wrong_type"),
            ("sparse-touch", {"threads": 0}, 422, "probe.bad_param"),
            ("sparse-touch", {"threads": 100000}, 422, "probe.bad_param"),
            ("sparse-touch", {"compare_thp": "yes"}, 400, "request.wrong_type"),
            ("numa-hinting", {"duration_s": 0}, 422, "probe.bad_param"),
            ("numa-hinting", {"duration_s": 86400}, 422, "probe.bad_param"),
            ("numa-hinting", {"mem_node": 77}, 422, "probe.bad_param"),
            ("numa-hinting", {"cpu_node": 4095}, 422, "probe.bad_param"),
            ("numa-hinting", {"threads": 0}, 422, "probe.bad_param"),
            ("hugetlb-alloc", {}, 400, "request.missing_field"),
            ("hugetlb-alloc", {"pages": 0}, 422, "probe.bad_param"),
            ("hugetlb-alloc", {"pages": 4, "node": 9}, 422, "probe.bad_param"),
            ("hugetlb-alloc", {"pages": 4, "page_size": "4M"}, 404, "hugepages.unknown_size"),
            ("hugetlb-alloc", {"pages": 4, "timeout_s": 0}, 422, "probe.bad_param"),
            ("remote-access", {"chase_steps": 10}, 422, "probe.bad_param"),
            ("fragment", {"node": 12}, 422, "probe.bad_param"),
            ("fragment", {"share_pct": 0}, 422, "probe.bad_param"),
            ("fragment", {"during": {"probe": "fragment"}}, 422, "probe.bad_param"),
            ("fragment", {"during": {"probe": "sparse-touch", "compare_thp": True}}, 422, "probe.bad_param"),
            ("fragment", {"during": {"probe": "thp-fault", "loops": 0}}, 422, "probe.bad_param"),
            ("fragment", {"during": {"size": "8M"}}, 400, "request.missing_field"),
            ("fragment", {"during": []}, 400, "request.wrong_type"),
        ]
        state = self.kernel_state()
        jobs = self.d.sql("SELECT count(*) FROM jobs")
        ops = self.d.sql("SELECT count(*) FROM operations")
        for kind, body, status, code in cases:
            with self.subTest(kind=kind, body=body):
                r = self.d.request("POST", "/v1/probes/" + kind, body)
                self.assertProblem(r, status, code)
        self.assertEqual(self.kernel_state(), state)
        self.assertEqual(self.d.sql("SELECT count(*) FROM jobs"), jobs)
        self.assertEqual(self.d.sql("SELECT count(*) FROM operations"), ops)
