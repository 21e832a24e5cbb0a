"""Privilege separation fails closed, and the helper is asked for nothing a caller may not have, on
the real kernel (root and the mempolicyd user; run under `flock /tmp/mpd-test.lock`):

* SIGKILL of the helper while a probe holds thp.enabled changed, or while a pool grow is waiting on
  it: the next change is 503 priv.lost (not the kernel's refusal), /v1/health and /metrics say
  degraded, the daemon exits 3 after answering what is in flight; the probe's restores row stays
  (its value was not written back), and the next start puts thp.enabled back and records
  probe.restore.
* SIGKILL of the serving side: the helper and the probe child it started are gone (waited for on
  their pidfds); a program a user launched runs on (DESIGN, Security).
* A caller who may not see a process (another user's, or unknown over TCP) is refused 403 with the
  helper asked to open nothing (mempolicyd_privileged_requests_total{type="proc_open"} unmoved;
  the same read by root moves it).
* A migrate job whose target exec'd a set-uid program after the submission fails with reason
  process.changed, nothing moved.
Every knob and pool a test changes is put back, also when it fails."""
import json
import os
import pwd
import re
import select
import shutil
import signal
import subprocess
import tempfile
import unittest

from lib import Daemon, UnixHTTPConnection, bracketed, free_port, real_file, real_write
from test_probes_framework import child_pids, held_thp_probe, restored_at_start, wait_for as wait_until
from test_privsep import children, have_user

USER = "mempolicyd"
ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
HP = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
NOBODY = pwd.getpwnam("nobody")
LOST_EXIT = 3   # server/main.c EXIT_HELPER_LOST

# A set-uid-root program that waits for its stdin to close: the process that exec's it keeps its
# pid and start time, and becomes euid 0 and not dumpable.
SETUID_C = "#include <unistd.h>\nint main(void) { char c; while (read(0, &c, 1) > 0) ; return 0; }\n"


def exited(pidfd, timeout):
    """True once the process pidfd names has exited, False if timeout seconds pass first."""
    p = select.poll()
    p.register(pidfd, select.POLLIN)
    return bool(p.poll(timeout * 1000))


def state(pid):
    """What a failed check of pid's exit shows of it."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return " ".join(l.strip() for l in f if l.startswith(("State", "PPid", "Uid", "SigBlk", "SigIgn")))
    except OSError as e:
        return str(e)


def metric(text, name, labels=""):
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


def curl_as(user, sock, method, path, body=None):
    cmd = ["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--clear-groups", "--", "curl",
           "-sS", "--unix-socket", sock, "-X", method, "-w", "\n%{http_code}", "http://localhost" + path]
    if body is not None:
        cmd[-1:-1] = ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    out, code = p.stdout.rsplit("\n", 1)
    return int(code), json.loads(out) if out else None


@unittest.skipUnless(os.geteuid() == 0 and have_user(), "needs root and the %s user" % USER)
class Base(unittest.TestCase):
    args = ()

    def setUp(self):
        self.d = Daemon(None, self.args, user=USER)
        self.d.start()
        self.addCleanup(self.d.cleanup)

    def helper(self):
        kids = children(self.d.proc.pid)
        self.assertEqual(len(kids), 1, kids)
        return kids[0]

    def job(self, job_id):
        return self.d.get("/v1/jobs/%d" % job_id).json

    def wait_job(self, job_id, timeout=30):
        return wait_until(lambda: (lambda j: j if j["status"] not in ("queued", "running") else None)(
            self.job(job_id)), timeout, "job %d to end" % job_id)

    def requests(self, kind):
        return metric(self.d.get("/metrics").raw, "mempolicyd_privileged_requests_total", '{type="%s"}' % kind)


class HelperLost(Base):
    """The helper killed: everything after says so, and nothing is left half put back."""

    def degraded(self):
        """What a daemon whose helper is lost answers, then its exit."""
        old = bracketed(real_file(DEFRAG))
        self.addCleanup(real_write, DEFRAG, old)
        r = self.d.request("PUT", "/v1/knobs/thp.defrag", {"value": "defer" if old != "defer" else "madvise"})
        self.assertEqual((r.status, r.json["code"]), (503, "priv.lost"), r.raw)
        self.assertNotIn("errno", r.json)   # not the kernel's refusal, nor a broken pipe's
        self.assertEqual(bracketed(real_file(DEFRAG)), old)
        h = self.d.get("/v1/health").json
        self.assertEqual((h["status"], h["privileged_helper"]), ("degraded", "lost"), h)
        m = self.d.get("/metrics").raw
        self.assertEqual((metric(m, "mempolicyd_degraded"), metric(m, "mempolicyd_privileged_helper_up")), (1, 0))
        # the daemon stops by itself, non-zero (Restart=on-failure), within a generous bound
        self.assertEqual(self.d.proc.wait(60), LOST_EXIT, self.d.log_text())
        self.d.proc = None

    def kill_helper(self):
        helper = self.helper()
        fd = os.pidfd_open(helper)
        try:
            os.kill(helper, signal.SIGKILL)
            self.assertTrue(exited(fd, 30), "the helper outlived SIGKILL")
        finally:
            os.close(fd)

    def test_helper_killed_mid_probe(self):
        job_id, thp0, first = held_thp_probe(self, self.d)
        self.kill_helper()
        self.degraded()
        # nobody could put thp.enabled back: its row stays, and the probe says why it failed
        self.assertEqual(bracketed(real_file(ENABLED)), first)
        self.assertEqual(self.d.sql("SELECT what, target, value FROM restores"), [("knob", "thp.enabled", thp0)])
        status, result = self.d.sql("SELECT status, result FROM jobs WHERE id = ?", (job_id,))[0]
        self.assertEqual(status, "failed")
        self.assertEqual([(x["target"], x["status"]) for x in json.loads(result)["restored"]],
                         [("thp.enabled", "restore_failed")])
        # the next start puts it back before serving, and records it
        self.d.start()
        restored_at_start(self, self.d, thp0)
        self.assertEqual(self.d.get("/v1/health").json["status"], "ok")

    @unittest.skipUnless(os.path.exists(HP), "no 2 MiB hugetlb pool")
    def test_helper_killed_mid_resize(self):
        n0 = int(real_file(HP))
        self.addCleanup(real_write, HP, str(n0))
        helper = self.helper()
        # One connection, kept alive, carries everything asked while the helper is stopped.
        kept = UnixHTTPConnection(self.d.socket)
        self.addCleanup(kept.close)

        def ask(method, path, body=None):
            kept.request(method, path, body=None if body is None else json.dumps(body).encode(),
                         headers={"Content-Type": "application/json"} if body is not None else {})
            r = kept.getresponse()
            return r.status, json.loads(r.read() or b"null")

        self.assertEqual(ask("GET", "/v1/health")[0], 200)
        # Stopped, the helper takes the job's first run of steps and never answers it: the job is
        # running, waiting on the helper, when the helper dies.
        os.kill(helper, signal.SIGSTOP)
        status, body = ask("PUT", "/v1/hugepages/2M", {"total": n0 + 4, "batch": 1})
        self.assertEqual(status, 202, body)
        job_id = body["id"]
        wait_until(lambda: ask("GET", "/v1/jobs/%d" % job_id)[1]["status"] == "running", what="the resize to run")
        self.kill_helper()
        job = self.wait_job(job_id)
        self.assertEqual((job["status"], job["reason"]), ("failed", "priv.lost"), job)
        self.degraded()
        self.assertEqual(int(real_file(HP)), n0)   # the write was never made
        self.d.start()
        self.assertEqual(self.d.get("/v1/health").json["privileged_helper"], "running")
        self.assertEqual(self.d.sql("SELECT count(*) FROM restores"), [(0,)])


class ServingSideKilled(Base):
    def test_helper_and_its_probe_child_die_with_the_serving_side(self):
        # a program root launched: the user's own work, which runs on (DESIGN, Security)
        r = self.d.request("POST", "/v1/processes", body={"argv": ["sleep", "120"], "env": {"PATH": "/usr/bin:/bin"}})
        self.assertEqual(r.status, 201, r.raw)
        launched = r.json["pid"]
        self.addCleanup(lambda: os.path.exists("/proc/%d" % launched) and os.kill(launched, signal.SIGKILL))
        _, thp0, _ = held_thp_probe(self, self.d)
        helper = self.helper()
        # the pass's child, once the helper has forked it
        probe = wait_until(lambda: [p for p in child_pids(helper) if p != launched], what="the probe child")
        self.assertEqual(len(probe), 1, (probe, launched))
        fds = [os.pidfd_open(p) for p in (helper, probe[0], launched)]
        try:
            self.d.stop(signal.SIGKILL)
            self.assertTrue(exited(fds[0], 30), "the helper outlived the serving side")
            self.assertTrue(exited(fds[1], 30), "the probe child %d outlived the helper: %s" % (probe[0], state(probe[0])))
            self.assertFalse(exited(fds[2], 0), "the launched program died with the daemon")
        finally:
            for fd in fds:
                os.close(fd)
        self.d.start()
        self.assertEqual(bracketed(real_file(ENABLED)), thp0)


class AuthoriseFirst(Base):
    """Placement is the helper's to open; a caller who may not see the process costs no open."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.port = free_port()
        cls.args = ("--listen-tcp", "127.0.0.1:%d" % cls.port)

    def setUp(self):
        super().setUp()
        self.root_proc = subprocess.Popen(["sleep", "60"])
        self.addCleanup(self.root_proc.wait)
        self.addCleanup(self.root_proc.kill)

    def test_refused_reads_open_nothing(self):
        pid = self.root_proc.pid
        n0 = self.requests("proc_open")
        self.assertIsNotNone(n0)
        code, p = curl_as(NOBODY, self.d.socket, "GET", "/v1/processes/%d" % pid)
        self.assertEqual((code, p["code"]), (403, "auth.forbidden"), p)
        code, p = curl_as(NOBODY, self.d.socket, "GET", "/v1/processes/%d?mappings=false" % pid)
        self.assertEqual(code, 403, p)
        code, p = curl_as(NOBODY, self.d.socket, "POST", "/v1/processes/%d/migrate" % pid, {"from": "0", "to": "0"})
        self.assertEqual((code, p["code"]), (403, "auth.forbidden"), p)
        tcp = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", "http://127.0.0.1:%d/v1/processes/%d" % (
            self.port, pid)], capture_output=True, text=True, timeout=30)
        self.assertEqual(tcp.stdout.rsplit("\n", 1)[1], "403", tcp.stdout)
        self.assertEqual(self.requests("proc_open"), n0, "the helper opened procfs files for refused callers")
        # the counter can move: root's read of the same process has the helper open them
        self.assertEqual(self.d.get("/v1/processes/%d" % pid).status, 200)
        self.assertGreater(self.requests("proc_open"), n0)


class ActOnWhatWasAuthorised(Base):
    # One job worker (a test-build option): the migrate queues behind a held probe, so the target
    # exec's its set-uid program between the submission and the act, deterministically.
    args = ("--test-job-workers", "1")

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="mpd-setuid-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.chmod(self.tmp, 0o755)
        self.setuid = os.path.join(self.tmp, "waiter")
        subprocess.run(["cc", "-x", "c", "-o", self.setuid, "-"], input=SETUID_C, text=True, check=True)
        os.chown(self.setuid, 0, 0)
        os.chmod(self.setuid, 0o4755)

    def target(self):
        """A process of nobody's that exec's the set-uid program once it reads a line."""
        p = subprocess.Popen(["setpriv", "--reuid", str(NOBODY.pw_uid), "--regid", str(NOBODY.pw_gid), "--clear-groups",
                              "--", "python3", "-c", "import os, sys; sys.stdin.readline(); os.execv(%r, [%r])" % (
                                  self.setuid, self.setuid)], stdin=subprocess.PIPE, text=True)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        wait_until(lambda: "python3" in open("/proc/%d/cmdline" % p.pid).read(), what="the target")
        return p

    def uids(self, pid):
        with open("/proc/%d/status" % pid) as f:
            return re.search(r"^Uid:\s+(.*)$", f.read(), re.M).group(1).split()

    def held_probe(self):
        r = self.d.request("POST", "/v1/probes/touch", {"size": "4M", "hold_ms": 60000})
        self.assertEqual(r.status, 202, r.raw)
        wait_until(lambda: self.job(r.json["id"])["status"] == "running", what="the probe to hold the worker")
        return r.json["id"]

    def test_target_that_exec_d_a_setuid_program_is_not_moved(self):
        if "nosuid" in subprocess.run(["findmnt", "-no", "OPTIONS", "-T", self.tmp], capture_output=True,
                                      text=True).stdout:
            self.skipTest("the temporary directory is on a nosuid file system")
        p = self.target()
        # the control: nobody may move its own process
        code, job = curl_as(NOBODY, self.d.socket, "POST", "/v1/processes/%d/migrate" % p.pid, {"from": "0", "to": "0"})
        self.assertEqual(code, 202, job)
        self.assertEqual(self.wait_job(job["id"])["status"], "ok")
        # submitted while it is nobody's, queued behind the probe
        probe = self.held_probe()
        code, job = curl_as(NOBODY, self.d.socket, "POST", "/v1/processes/%d/migrate" % p.pid, {"from": "0", "to": "0"})
        self.assertEqual(code, 202, job)
        self.assertEqual(self.job(job["id"])["status"], "queued")
        p.stdin.write("go\n")
        p.stdin.flush()
        wait_until(lambda: self.uids(p.pid)[1] == "0", what="the set-uid exec")
        self.assertEqual(self.d.request("DELETE", "/v1/jobs/%d" % probe).status // 100, 2)
        done = self.wait_job(job["id"])
        self.assertEqual((done["status"], done["reason"]), ("failed", "process.changed"), done)
        self.assertIn("no longer uid %d's" % NOBODY.pw_uid, done["error"])
        # nothing moved: no placement read, no migrate_pages (the result holds the job's conditions only)
        self.assertFalse({"before", "after", "pages_not_moved"} & set(done["result"] or {}), done["result"])


if __name__ == "__main__":
    unittest.main()
