"""POST /v1/processes/{pid}/migrate and /collapse against the real kernel (one node here: the
multi-node moves are checked in the QEMU guest, tests/vm/guest_checks.py): both run as jobs that
record the placement before and after; migrate is allowed to admins and to the process's own user
only; collapse turns a written 8 MiB anonymous mapping into huge pages (MADV_COLLAPSE) and fails
where the process disabled THP; bad input, a foreign process, a reused pid and a zombie are
refused with nothing recorded. Run under `flock /tmp/mpd-test.lock`."""
import json
import os
import pwd
import signal
import subprocess
import sys
import time

from lib import DaemonTest
from test_openapi import Validator, load_spec

# A process job's answers as the spec declares a Job (they are not in test_openapi's live run,
# which has no real process): request, progress and result members, types, at every level.
JOB = {"$ref": "#/components/schemas/Job"}
SPEC = Validator(load_spec())

NOBODY = pwd.getpwnam("nobody")
CHILD = ("import mmap,time\n"
         "n=8<<20\n"
         "m=mmap.mmap(-1,n,flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS)\n"
         "m.madvise(mmap.MADV_DONTFORK)\n"   # a VMA of its own: it merges with nothing
         "m.write(b'x'*n)\n"
         "time.sleep(60)\n")

# Drops to the uid and gid in argv, stays non-dumpable (PR_SET_DUMPABLE 0), says so, and waits
# for its stdin to close.
DROP = ("import ctypes,os,sys\n"
        "u,g=int(sys.argv[1]),int(sys.argv[2])\n"
        "os.setgroups([]); os.setresgid(g,g,g); os.setresuid(u,u,u)\n"
        "assert ctypes.CDLL(None,use_errno=True).prctl(4,0,0,0,0)==0\n"
        "print('dropped',flush=True); sys.stdin.read()\n")


def real_uids(pid):
    """The real, effective, saved and filesystem uids of pid (/proc/PID/status)."""
    with open("/proc/%d/status" % pid) as f:
        return [int(x) for x in next(l for l in f if l.startswith("Uid:")).split()[1:]]


def wait_job(d, job_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = d.get("/v1/jobs/%d" % job_id).json
        if j["status"] not in ("queued", "running"):
            return j
        time.sleep(0.05)
    raise AssertionError("job %d still running" % job_id)


class Base(DaemonTest):
    def setUp(self):
        self.pids = []

    def tearDown(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def launch(self, **extra):
        body = {"argv": ["python3", "-c", CHILD], "env": {"PATH": "/usr/bin:/bin"}}
        body.update(extra)
        r = self.d.request("POST", "/v1/processes", body=body)
        self.assertEqual(r.status, 201, r.raw)
        self.pids.append(r.json["pid"])
        self.wait_written(r.json["pid"])
        return r.json

    def wait_written(self, pid):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open("/proc/%d/numa_maps" % pid) as f:
                if any(" anon=2048 " in l for l in f):
                    return
            time.sleep(0.05)
        raise AssertionError("the child never wrote its 8 MiB")

    def big_mapping(self, pid):
        """The 8 MiB mapping as GET /v1/processes/{pid} shows it, addresses as integers."""
        m = [dict(m, start=int(m["start"], 16), end=int(m["end"], 16))
             for m in self.d.get("/v1/processes/%d" % pid).json["mappings"] if m["end"]]
        m = [x for x in m if x["end"] - x["start"] == 8 << 20]
        self.assertEqual(len(m), 1, m)
        return m[0]

    def curl_as(self, user, path, body):
        p = subprocess.run(["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--clear-groups",
                            "--", "curl", "-sS", "--unix-socket", self.d.socket, "-H", "Content-Type: application/json",
                            "-d", json.dumps(body), "-w", "\n%{http_code}", "http://localhost" + path],
                           capture_output=True, text=True, timeout=30)
        out, code = p.stdout.rsplit("\n", 1)
        return int(code), json.loads(out)


class Migrate(Base):
    def test_migrate_records_before_and_after(self):
        c = self.launch(policy={"mode": "bind", "nodes": "0"})
        r = self.d.request("POST", "/v1/processes/%d/migrate" % c["pid"],
                           body={"from": "0", "to": "0", "start_time": c["start_time"]})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(r.headers["Location"], "/v1/jobs/%d" % r.json["id"])
        SPEC.check(r.json, JOB, "202 job")
        job = wait_job(self.d, r.json["id"])
        self.assertEqual((job["kind"], job["status"]), ("process.migrate", "ok"), job)
        SPEC.check(job, JOB, "finished job")
        res = job["result"]
        self.assertEqual((res["pid"], res["start_time"], res["from"], res["to"]),
                         (c["pid"], c["start_time"], "0", "0"))
        # the 8 MiB and the interpreter: at least 2048 pages on node 0, before and after
        for side in ("before", "after"):
            self.assertEqual([n["node"] for n in res[side]], [0])
            self.assertGreaterEqual(res[side][0]["pages"], 2048)
        self.assertEqual(res["pages_not_moved"], 0)
        self.assertGreater(res["elapsed_ns"], 0)
        self.assertEqual(set(res["vmstat_delta"]), {"pgmigrate_success", "pgmigrate_fail", "thp_migration_success",
                                                   "thp_migration_fail", "thp_migration_split"})
        # and it is in history, with the actor
        op = self.d.get("/v1/history/%d" % job["operation_id"]).json
        self.assertEqual((op["kind"], op["status"], op["actor"]["uid"]), ("process.migrate", "ok", 0))

    def test_own_user_may_others_may_not(self):
        # nobody starts a process (as nobody) and may migrate it: the kernel's own rule
        code, c = self.curl_as(NOBODY, "/v1/processes", {"argv": ["sleep", "30"]})
        self.assertEqual(code, 201, c)
        self.pids.append(c["pid"])
        code, job = self.curl_as(NOBODY, "/v1/processes/%d/migrate" % c["pid"], {"from": "0", "to": "0"})
        self.assertEqual(code, 202, job)
        self.assertEqual(wait_job(self.d, job["id"])["status"], "ok")
        self.assertEqual(job["actor"]["uid"], NOBODY.pw_uid)

        # root's process is not nobody's: 403, no job, nothing recorded
        mine = self.launch()
        db = self.d.db_snapshot()
        code, p = self.curl_as(NOBODY, "/v1/processes/%d/migrate" % mine["pid"], {"from": "0", "to": "0"})
        self.assertEqual((code, p["code"]), (403, "auth.forbidden"), p)
        self.assertEqual(self.d.db_snapshot(), db)

        # nor is a setuid-like process whose uids are nobody's but which is not dumpable: one of
        # root's children that dropped to nobody and has not exec'd since (an exec would make it
        # dumpable again), made non-dumpable explicitly so fs.suid_dumpable does not decide. It
        # says when it is so on its stdout: the kernel then shows the files in /proc/PID as root's
        # (the directory itself stays the effective uid's, which is why a check of it found the
        # process dumpable every time and skipped the refusal).
        drop = subprocess.Popen([sys.executable, "-c", DROP, str(NOBODY.pw_uid), str(NOBODY.pw_gid)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pids.append(drop.pid)
        self.addCleanup(drop.wait)
        self.assertEqual(drop.stdout.readline(), "dropped\n")
        st = os.stat("/proc/%d/status" % drop.pid)
        self.assertEqual((st.st_uid, real_uids(drop.pid)), (0, [NOBODY.pw_uid] * 4))
        db = self.d.db_snapshot()
        code, p = self.curl_as(NOBODY, "/v1/processes/%d/migrate" % drop.pid, {"from": "0", "to": "0"})
        self.assertEqual((code, p["code"]), (403, "auth.forbidden"), p)
        self.assertEqual(self.d.db_snapshot(), db)

    def refused(self, path, body, status, code):
        db = self.d.db_snapshot()
        r = self.d.request("POST", path, body=body)
        self.assertProblem(r, status, code)
        self.assertEqual(self.d.db_snapshot(), db, (path, body))

    def test_bad_input(self):
        c = self.launch()
        path = "/v1/processes/%d/migrate" % c["pid"]
        for bad in ("0-", "3-1", "1,,2", "", " 0", "0\n", "99999999999", "4096", "-1"):
            self.refused(path, {"from": bad, "to": "0"}, 400, "nodes.malformed")
            self.refused(path, {"from": "0", "to": bad}, 400, "nodes.malformed")
        self.refused(path, {"from": "0", "to": "7"}, 422, "nodes.not_in_topology")
        self.refused(path, {"from": "9", "to": "0"}, 422, "nodes.not_in_topology")
        self.refused(path, {"from": "0"}, 400, "request.missing_field")
        self.refused(path, {"from": 0, "to": 0}, 400, "request.wrong_type")
        self.refused(path, {"from": "0", "to": "0", "node": 1}, 400, "request.unknown_field")
        self.refused(path, {"from": "0", "to": "0", "start_time": "now"}, 400, "request.wrong_type")
        # the pid now names another process than the one the client saw
        self.refused(path, {"from": "0", "to": "0", "start_time": c["start_time"] + 1}, 409, "process.changed")
        for pid in ("abc", "0", "-1", "4194305", "1x"):
            self.refused("/v1/processes/%s/migrate" % pid, {"from": "0", "to": "0"}, 400, "process.bad_pid")
        # no such process; and one that has exited (a zombie: its memory is gone)
        free = 4194300
        while os.path.exists("/proc/%d" % free):
            free -= 1
        self.refused("/v1/processes/%d/migrate" % free, {"from": "0", "to": "0"}, 404, "process.not_found")
        z = subprocess.Popen(["true"])
        os.waitid(os.P_PID, z.pid, os.WEXITED | os.WNOWAIT)   # exited, not reaped: a zombie now
        try:
            self.refused("/v1/processes/%d/migrate" % z.pid, {"from": "0", "to": "0"}, 404, "process.not_found")
        finally:
            z.wait()


class Collapse(Base):
    def test_collapse_all_anonymous_mappings(self):
        c = self.launch()
        before = self.big_mapping(c["pid"])
        self.assertEqual(before["thp_bytes"], 0)   # THP madvise mode: 4 KiB pages until asked
        r = self.d.request("POST", "/v1/processes/%d/collapse" % c["pid"], body={})
        self.assertEqual(r.status, 202, r.raw)
        job = wait_job(self.d, r.json["id"])
        self.assertIn(job["status"], ("ok", "partial"), job)
        res = job["result"]
        self.assertGreater(res["collapsed"], 0, res)
        # an 8 MiB mapping holds at least three aligned 2 MiB ranges
        self.assertGreaterEqual(res["thp_bytes_after"] - res["thp_bytes_before"], 6 << 20, res)
        self.assertGreaterEqual(self.big_mapping(c["pid"])["thp_bytes"], 6 << 20)
        with open("/proc/%d/smaps_rollup" % c["pid"]) as f:
            kb = int([l for l in f if l.startswith("AnonHugePages:")][0].split()[1])
        self.assertEqual(kb * 1024, res["thp_bytes_after"])

    def test_collapse_one_range(self):
        c = self.launch()
        m = self.big_mapping(c["pid"])
        start = (m["start"] + (2 << 20) - 1) & ~((2 << 20) - 1)
        r = self.d.request("POST", "/v1/processes/%d/collapse" % c["pid"],
                           body={"range": {"start": start, "length": 2 << 20}, "start_time": c["start_time"]})
        self.assertEqual(r.status, 202, r.raw)
        SPEC.check(r.json, JOB, "202 job")
        job = wait_job(self.d, r.json["id"])
        self.assertEqual(job["status"], "ok", job)
        SPEC.check(job, JOB, "finished job")
        self.assertEqual((job["result"]["ranges"], job["result"]["collapsed"]), (1, 1))
        self.assertEqual(self.big_mapping(c["pid"])["thp_bytes"], 2 << 20)   # exactly that one

    def test_thp_disabled_process_cannot_collapse(self):
        c = self.launch(thp="disable")
        m = self.big_mapping(c["pid"])
        start = (m["start"] + (2 << 20) - 1) & ~((2 << 20) - 1)
        r = self.d.request("POST", "/v1/processes/%d/collapse" % c["pid"],
                           body={"range": {"start": start, "length": 2 << 20}})
        job = wait_job(self.d, r.json["id"])
        self.assertEqual((job["status"], job["errno"]), ("failed", 22), job)   # EINVAL: not eligible
        self.assertEqual(self.big_mapping(c["pid"])["thp_bytes"], 0)

    def test_refusals(self):
        c = self.launch()
        path = "/v1/processes/%d/collapse" % c["pid"]
        db = self.d.db_snapshot()
        code, p = self.curl_as(NOBODY, path, {})
        self.assertEqual((code, p["code"]), (403, "auth.forbidden"))
        for body, status, code in (({"range": "all"}, 400, "request.wrong_type"),
                                   ({"range": {"start": 4096}}, 400, "request.missing_field"),
                                   ({"range": {"start": 4097, "length": 4096}}, 400, "request.invalid"),
                                   ({"range": {"start": 0, "length": 0}}, 400, "request.wrong_type"),
                                   ({"range": {"start": 0, "length": 4096, "x": 1}}, 400, "request.unknown_field"),
                                   ({"all": True}, 400, "request.unknown_field"),
                                   ({"start_time": c["start_time"] + 1}, 409, "process.changed")):
            r = self.d.request("POST", path, body=body)
            self.assertProblem(r, status, code)
        self.assertEqual(self.d.db_snapshot(), db)
