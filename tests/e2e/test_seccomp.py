"""The serving side's seccomp filter (server/kernel/sandbox.c): under privilege separation every
thread of the process that serves HTTP runs under a filter (/proc/PID/task/*/status: Seccomp 2,
Seccomp_filters at least 1), the root helper and what it starts do not (docs/DESIGN.md, Security,
says why), --no-seccomp / seccomp = false and --user root load none, and the real work the serving
side hands to the helper — a knob change, a pool resize, a launch, a probe, another process's
procfs files — and a TLS request still succeed with the filter on (every change put back, also on
failure). What the filter refuses is asserted call by call in tests/unit/test_sandbox.c."""
import os
import subprocess
import tempfile
import time
import unittest

from lib import DAEMON, Daemon, bracketed, real_file, real_write
from test_pools_fake import wait_job
from test_privsep import USER, children, have_user
from test_tls import TLSBase

DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
HP = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"


def thread_status(pid):
    """{tid: {Seccomp, Seccomp_filters, NoNewPrivs}} for every thread of pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                kv = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except FileNotFoundError:   # a thread that ended meanwhile
            continue
        out[int(tid)] = {k: kv.get(k) for k in ("Seccomp", "Seccomp_filters", "NoNewPrivs")}
    return out


def wait_for(cond, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@unittest.skipUnless(os.geteuid() == 0 and have_user(), "needs root and the %s user (make test creates it)" % USER)
class Filtered(TLSBase):
    user = USER

    def helper(self):
        kids = children(self.d.proc.pid)
        self.assertEqual(len(kids), 1, kids)
        return kids[0]

    def test_every_serving_thread_is_filtered(self):
        # a request first, so that libmicrohttpd's workers and the job runner are all there
        self.assertEqual(self.d.get("/v1/health").status, 200)
        threads = thread_status(self.d.proc.pid)
        self.assertGreater(len(threads), 10, threads)   # main, 2 listeners × 8 workers, jobs, scheduler, ...
        for tid, st in threads.items():
            self.assertEqual(st["Seccomp"], "2", "thread %d: %s" % (tid, st))
            self.assertGreaterEqual(int(st["Seccomp_filters"]), 1, "thread %d: %s" % (tid, st))
            self.assertEqual(st["NoNewPrivs"], "1", "thread %d: %s" % (tid, st))
        self.assertIn("seccomp: the serving process refuses exec", self.d.log_text())

    def test_the_helper_is_not_filtered(self):
        # it forks launched programs and probes, which would inherit any filter (DESIGN, Security)
        for tid, st in thread_status(self.helper()).items():
            self.assertEqual(st["Seccomp"], "0", "helper thread %d: %s" % (tid, st))

    def test_knob_change_and_pool_resize_still_work(self):
        old = bracketed(real_file(DEFRAG))
        self.addCleanup(real_write, DEFRAG, old)
        new = "defer" if old != "defer" else "madvise"
        r = self.d.request("PUT", "/v1/knobs/thp.defrag", {"value": new})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(bracketed(real_file(DEFRAG)), new)
        if not os.path.exists(HP):
            return
        n0 = int(real_file(HP))
        self.addCleanup(real_write, HP, str(n0))
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"total": n0 + 2})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(wait_job(self.d, r.json["id"], timeout=60)["status"], "ok")
        self.assertEqual(int(real_file(HP)), n0 + 2)
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"total": n0})
        self.assertEqual(wait_job(self.d, r.json["id"], timeout=60)["status"], "ok")
        self.assertEqual(int(real_file(HP)), n0)

    def test_launch_runs_unfiltered_and_its_files_are_read(self):
        # the serving side may not exec: the helper starts the program, which inherits no filter
        mark = os.path.join(self.d.dir, "launched")
        r = self.d.request("POST", "/v1/processes",
                           {"argv": ["/bin/sh", "-c", "touch %s; exec sleep 30" % mark], "cwd": "/"})
        self.assertEqual(r.status, 201, r.raw)
        pid = r.json["pid"]
        self.addCleanup(lambda: os.path.exists("/proc/%d" % pid) and os.kill(pid, 9))
        self.assertTrue(wait_for(lambda: os.path.exists(mark)), "the launched program did not run")
        self.assertTrue(wait_for(lambda: os.readlink("/proc/%d/exe" % pid).endswith("/sleep")))
        self.assertEqual(thread_status(pid)[pid]["Seccomp"], "0")
        self.assertEqual(int(dict(line.split(":\t", 1) for line in open("/proc/%d/status" % pid)
                                  if ":\t" in line)["PPid"]), self.helper())
        # its numa_maps, opened by the helper for the serving side
        r = self.d.get("/v1/processes/%d" % pid)
        self.assertEqual(r.status, 200, r.raw)
        self.assertGreater(r.json["totals"]["mappings"], 0, r.json)

    def test_probe_runs(self):
        r = self.d.request("POST", "/v1/probes/touch", {"size": "4M"})
        self.assertEqual(r.status, 202, r.raw)
        job = wait_job(self.d, r.json["id"], timeout=60)
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(job["result"]["passes"][0]["status"], "ok", job)
        self.assertEqual(job["result"]["passes"][0]["result"]["pages"], 1024, job)

    def test_tls_request_with_a_token(self):
        r = self.d.request("POST", "/v1/tokens", {"name": "seccomp", "scope": "read"})
        self.assertEqual(r.status, 201, r.raw)
        st, _, body = self.tls("GET", "/v1/health", token=r.json["token"])
        self.assertEqual(st, 200, body)


@unittest.skipUnless(os.geteuid() == 0 and have_user(), "needs root and the %s user" % USER)
class Unfiltered(unittest.TestCase):
    def serve(self, user, args=()):
        d = Daemon(None, list(args), user=user)
        self.addCleanup(d.cleanup)
        d.start()
        return d

    def assertNoFilter(self, pid):
        for tid, st in thread_status(pid).items():
            self.assertEqual(st["Seccomp"], "0", "thread %d: %s" % (tid, st))

    def test_no_seccomp_loads_none(self):
        d = self.serve(USER, ["--no-seccomp"])
        self.assertNoFilter(d.proc.pid)
        self.assertIn("seccomp = false: the serving process runs without its seccomp filter", d.log_text())

    def test_config_seccomp_false_loads_none(self):
        conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
        self.addCleanup(os.unlink, conf.name)
        conf.write("seccomp = false\n")
        conf.close()
        d = self.serve(USER, ["--config", conf.name])
        self.assertNoFilter(d.proc.pid)

    def test_user_root_loads_none(self):
        # one process that launches and sets policy itself: a filter would be inherited by its children
        d = self.serve("root")
        self.assertNoFilter(d.proc.pid)
        self.assertIn("no seccomp filter", d.log_text())

    def test_a_bad_value_is_refused_before_anything(self):
        with tempfile.TemporaryDirectory() as t:
            db = os.path.join(t, "x.db")
            p = subprocess.run([DAEMON, "--socket", os.path.join(t, "s.sock"), "--db", db, "--seccomp", "maybe"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("seccomp wants true or false, not 'maybe'", p.stderr)
            self.assertFalse(os.path.exists(db))


if __name__ == "__main__":
    unittest.main()
