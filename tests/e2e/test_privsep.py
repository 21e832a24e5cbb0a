"""Privilege separation (--user): the process that serves HTTP holds no capability and is not root,
as /proc/PID/status shows; the helper, its child, is root with exactly the four capabilities the
kernel writes need; knob writes, pool resizes and the procfs files of another user's process still
work through it, against the real kernel (every change put back, also on failure); and a start
that cannot be separated is refused with a clear reason, leaving nothing behind it ran."""
import ctypes
import json
import os
import pwd
import signal
import re
import struct
import subprocess
import tempfile
import time
import unittest

from lib import DAEMON, Daemon, UnixHTTPConnection, bracketed, real_file, real_write
from test_pools_fake import wait_job
from test_process_launch import numa_policies

USER = "mempolicyd"
DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
HP = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
# CAP_DAC_OVERRIDE (1), CAP_SETGID (6), CAP_SETUID (7), CAP_SYS_PTRACE (19), CAP_SYS_ADMIN (21),
# CAP_SYS_NICE (23)
HELPER_CAPS = (1 << 1) | (1 << 6) | (1 << 7) | (1 << 19) | (1 << 21) | (1 << 23)


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(p) for p in f.read().split()]


FAN_MODIFY, FAN_CLOSE_WRITE = 0x2, 0x8


class Fanotify:
    """A fanotify group of this (root) test on some files: who wrote them, as the kernel says."""
    def __init__(self, paths):
        self.libc = ctypes.CDLL(None, use_errno=True)
        # FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK; events' files opened O_RDONLY
        self.fd = self.libc.fanotify_init(0x1 | 0x2, os.O_RDONLY)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "fanotify_init")
        for p in paths:
            if self.libc.fanotify_mark(self.fd, 0x1, ctypes.c_uint64(FAN_MODIFY | FAN_CLOSE_WRITE), -100,
                                       p.encode()) < 0:
                raise OSError(ctypes.get_errno(), "fanotify_mark " + p)

    def events(self):
        """[(pid, inode, mask)] of the events queued now."""
        out = []
        while True:
            try:
                buf = os.read(self.fd, 8192)
            except BlockingIOError:
                return out
            off = 0
            while off + 24 <= len(buf):
                event_len, _vers, _res, _mlen, mask, fd, pid = struct.unpack_from("=IBBHQii", buf, off)
                if fd >= 0:
                    out.append((pid, os.fstat(fd).st_ino, mask))
                    os.close(fd)
                off += event_len

    def close(self):
        os.close(self.fd)


def have_user():
    try:
        pwd.getpwnam(USER)
        return True
    except KeyError:
        return False


@unittest.skipUnless(os.geteuid() == 0 and have_user(), "needs root and the %s user (make test creates it)" % USER)
class Privsep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pw = pwd.getpwnam(USER)
        cls.d = Daemon(None, user=USER)
        cls.d.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.cleanup()
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, cls.d.last_log))

    def test_http_side_holds_no_privilege(self):
        st = status(self.d.proc.pid)
        for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(st[k], 16), 0, "%s of the HTTP side: %s" % (k, st[k]))
        self.assertEqual(st["Uid"].split(), [str(self.pw.pw_uid)] * 4)
        self.assertEqual(st["Gid"].split(), [str(self.pw.pw_gid)] * 4)
        self.assertNotEqual(self.pw.pw_uid, 0)
        self.assertEqual(st["Groups"], "")
        self.assertEqual(st["NoNewPrivs"], "1")
        # every thread, not only the main one (the capability sets are per thread)
        for tid in os.listdir("/proc/%d/task" % self.d.proc.pid):
            with open("/proc/%d/task/%s/status" % (self.d.proc.pid, tid)) as f:
                self.assertIn("CapEff:\t0000000000000000", f.read())

    def test_helper_keeps_only_what_the_kernel_writes_need(self):
        kids = children(self.d.proc.pid)
        self.assertEqual(len(kids), 1, kids)
        st = status(kids[0])
        self.assertEqual(st["Uid"].split(), ["0"] * 4)
        for k in ("CapPrm", "CapEff", "CapBnd"):
            self.assertEqual(int(st[k], 16), HELPER_CAPS, "%s of the helper: %s" % (k, st[k]))
        self.assertEqual(int(st["CapInh"], 16), 0)
        self.assertEqual(int(st["CapAmb"], 16), 0)
        self.assertEqual(st["NoNewPrivs"], "1")

    def test_a_unix_connection_logs_no_tcp_noise(self):
        # libmicrohttpd 0.9.75 tries TCP_NODELAY and TCP_CORK on every answer on a socket it was
        # given rather than accepted (MHD_add_connection), and logged three warnings per answer
        # ("... Client may experience some delay") when the helper handed connections over. The
        # serving process accepts on the Unix socket itself now, where libmicrohttpd knows it is no
        # TCP socket. Two requests on one kept-alive connection: served in order, so whatever was
        # logged for the first answer is in the log before the second answer is sent.
        c = UnixHTTPConnection(self.d.socket, 30)
        try:
            for _ in range(2):
                c.request("GET", "/v1/health")
                r = c.getresponse()
                r.read()
                self.assertEqual(r.status, 200)
        finally:
            c.close()
        log = self.d.log_text()
        self.assertNotIn("libmicrohttpd: Setting TCP_", log)
        self.assertNotIn("libmicrohttpd: Failed to push", log)

    def test_a_stopped_helper_holds_up_no_new_connection(self):
        # The serving process accepts on the Unix socket itself, as with --user root: the helper is
        # on no request's path, only asked for privileged acts. Stopped, it holds up no new client
        # of a read (when the helper accepted every connection, a stopped one left new clients in
        # the backlog until their timeout).
        helper = children(self.d.proc.pid)[0]
        os.kill(helper, signal.SIGSTOP)
        try:
            for path in ("/v1/health", "/v1/knobs/thp.enabled", "/v1/topology"):
                r = self.d.request("GET", path, timeout=10)
                self.assertEqual(r.status, 200, r.raw)
        finally:
            os.kill(helper, signal.SIGCONT)

    def test_the_serving_users_own_connection_launches_nothing(self):
        # Its connection to the API socket is a client like any to the kernel: the helper refuses
        # it (EACCES: the client is the serving side's own user), the launch is recorded failed and
        # nothing ran. (What else a compromised serving side may pass: tests/unit/test_priv_identity.c.)
        marker = os.path.join(self.d.dir, "as-serving-user")
        body = {"argv": ["/usr/bin/touch", marker], "cwd": "/"}
        p = subprocess.run(["setpriv", "--reuid", USER, "--regid", USER, "--clear-groups", "--", "curl", "-sS",
                            "--unix-socket", self.d.socket, "-H", "Content-Type: application/json", "-d",
                            json.dumps(body), "-w", "\n%{http_code}", "http://localhost/v1/processes"],
                           capture_output=True, text=True, timeout=30)
        out, code = p.stdout.rsplit("\n", 1)
        self.assertEqual(int(code), 409, out)
        problem = json.loads(out)
        self.assertEqual(problem["code"], "process.setup_failed", problem)
        self.assertIn(os.strerror(13), problem["detail"])   # EACCES
        self.assertFalse(os.path.exists(marker))
        rows = self.d.sql("SELECT status, errno FROM operations WHERE kind = 'process.launch' ORDER BY id DESC LIMIT 1")
        self.assertEqual(rows, [("failed", 13)])

    def test_database_is_the_users(self):
        self.assertEqual(os.stat(self.d.db).st_uid, self.pw.pw_uid)

    def test_knob_write_goes_through_the_helper(self):
        old = bracketed(real_file(DEFRAG))
        self.addCleanup(real_write, DEFRAG, old)
        new = "defer" if old != "defer" else "madvise"
        r = self.d.request("PUT", "/v1/knobs/thp.defrag", {"value": new})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(bracketed(real_file(DEFRAG)), new)
        self.assertTrue(self.d.get("/v1/knobs/thp.defrag").json["writable"])
        # a value outside the kernel's list is refused before the helper, and nothing changes
        r = self.d.request("PUT", "/v1/knobs/thp.defrag", {"value": "sometimes"})
        self.assertEqual(r.status, 422, r.raw)
        self.assertEqual(bracketed(real_file(DEFRAG)), new)

    def helper_requests(self):
        text = self.d.get("/metrics").raw
        return {m.group(1): int(m.group(2)) for m in
                re.finditer(r'^mempolicyd_privileged_requests_total\{type="([a-z_]+)"\} (\d+)$', text, re.M)}

    def test_a_knob_transaction_is_one_helper_request(self):
        """Two knobs of one PATCH: one knob_writes request to the helper, not a knob_write each
        (on main there is no knob_writes type)."""
        kdefrag = "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag"
        old, kold = bracketed(real_file(DEFRAG)), real_file(kdefrag)
        self.addCleanup(real_write, DEFRAG, old)
        self.addCleanup(real_write, kdefrag, kold)
        new, knew = ("defer" if old != "defer" else "madvise"), ("0" if kold == "1" else "1")
        before = self.helper_requests()
        r = self.d.request("PATCH", "/v1/knobs", {"knobs": {"thp.defrag": new, "thp.khugepaged.defrag": knew}})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual((bracketed(real_file(DEFRAG)), real_file(kdefrag)), (new, knew))
        after = self.helper_requests()
        self.assertEqual(after["knob_writes"] - before["knob_writes"], 1)
        self.assertEqual(after["knob_write"], before["knob_write"])

    def test_the_helper_writes_a_knob_through_a_held_file(self):
        """The helper keeps a kernel knob's file open for its writes: each write of a PATCH is
        a FAN_MODIFY by the helper and no FAN_CLOSE_WRITE (no open and close per write, which
        the drift watcher would read as a second event); the next write through the same file
        still lands, and one the kernel's list lacks is still refused before the helper. On main
        every write opened the file and closed it: a FAN_CLOSE_WRITE by the helper each time."""
        kdefrag = "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag"
        old, kold = bracketed(real_file(DEFRAG)), real_file(kdefrag)
        self.addCleanup(real_write, DEFRAG, old)
        self.addCleanup(real_write, kdefrag, kold)
        helper = children(self.d.proc.pid)[0]
        fan = Fanotify([DEFRAG, kdefrag])
        self.addCleanup(fan.close)
        seen = []
        for new, knew in (("defer" if old != "defer" else "madvise", "0" if kold == "1" else "1"),
                          ("never", kold)):
            r = self.d.request("PATCH", "/v1/knobs", {"knobs": {"thp.defrag": new, "thp.khugepaged.defrag": knew}})
            self.assertEqual(r.status, 200, r.raw)
            self.assertEqual((bracketed(real_file(DEFRAG)), real_file(kdefrag)), (new, knew))
            # the writes are queued as events before the helper answered, so before the PATCH did
            seen += [(ino, mask) for pid, ino, mask in fan.events() if pid == helper]
        modified = {ino for ino, mask in seen if mask & FAN_MODIFY}
        self.assertEqual(modified, {os.stat(DEFRAG).st_ino, os.stat(kdefrag).st_ino}, seen)
        self.assertEqual([m for _, m in seen if m & FAN_CLOSE_WRITE], [], "a close per write: %r" % seen)
        r = self.d.request("PUT", "/v1/knobs/thp.defrag", {"value": "sometimes"})
        self.assertEqual(r.status, 422, r.raw)
        self.assertEqual(bracketed(real_file(DEFRAG)), "never")
        # a program the helper launches for a local user holds none of the knob files it holds
        mine = [os.readlink("/proc/%d/fd/%s" % (helper, f)) for f in os.listdir("/proc/%d/fd" % helper)]
        self.assertIn(DEFRAG, mine)
        nobody = pwd.getpwnam("nobody")
        p = subprocess.run(["setpriv", "--reuid", str(nobody.pw_uid), "--regid", str(nobody.pw_gid), "--clear-groups",
                            "--", "curl", "-sS", "--unix-socket", self.d.socket, "-H", "Content-Type: application/json",
                            "-d", json.dumps({"argv": ["sleep", "30"]}), "-w", "\n%{http_code}",
                            "http://localhost/v1/processes"], capture_output=True, text=True, timeout=30)
        out, code = p.stdout.rsplit("\n", 1)
        self.assertEqual(int(code), 201, out)
        pid = json.loads(out)["pid"]
        self.addCleanup(lambda: os.path.exists("/proc/%d" % pid) and os.kill(pid, 9))
        deadline = time.time() + 10   # the fork answers; the exec (which closes them) follows
        while time.time() < deadline and os.readlink("/proc/%d/exe" % pid) == os.readlink("/proc/%d/exe" % helper):
            time.sleep(0.01)
        self.assertTrue(os.readlink("/proc/%d/exe" % pid).endswith("/sleep"))
        held = [os.readlink("/proc/%d/fd/%s" % (pid, f)) for f in os.listdir("/proc/%d/fd" % pid)]
        self.assertEqual([f for f in held if f.startswith(("/sys/", "/proc/sys/"))], [], held)

    @unittest.skipUnless(os.path.exists(HP), "no 2 MiB hugetlb pool")
    def test_resize_steps_are_timed_by_the_helper(self):
        n0 = int(real_file(HP))
        self.addCleanup(real_write, HP, str(n0))
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"total": n0 + 4, "batch": 2})
        self.assertEqual(r.status, 202, r.raw)
        job = wait_job(self.d, r.json["id"], timeout=60)
        self.assertEqual(job["status"], "ok", job)
        self.assertEqual(int(real_file(HP)), n0 + 4)
        rows = self.d.sql("SELECT before, after, elapsed_ns FROM batches WHERE op_id = ? ORDER BY seq",
                          (job["operation_id"],))
        self.assertEqual([(b, a) for b, a, _ in rows], [(n0, n0 + 2), (n0 + 2, n0 + 4)])
        self.assertTrue(all(el > 0 for *_, el in rows), rows)
        r = self.d.request("PUT", "/v1/hugepages/2M", body={"total": n0})
        self.assertEqual(wait_job(self.d, r.json["id"], timeout=60)["status"], "ok")
        self.assertEqual(int(real_file(HP)), n0)

    def test_another_users_process_is_read_through_the_helper(self):
        p = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sleep", "30"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        nobody = pwd.getpwnam("nobody").pw_uid
        deadline = time.monotonic() + 30   # until it is sleep, as nobody: setpriv has dropped and exec'd
        while not (os.readlink("/proc/%d/exe" % p.pid).endswith("/sleep") and
                   status(p.pid)["Uid"].split() == [str(nobody)] * 4):
            self.assertLess(time.monotonic(), deadline, "setpriv never became sleep as nobody")
            time.sleep(0.01)
        # the HTTP side's own uid may not open it: the kernel's ptrace check refuses
        probe = subprocess.run(["setpriv", "--reuid=%s" % USER, "--regid=%s" % USER, "--clear-groups",
                                "cat", "/proc/%d/numa_maps" % p.pid], capture_output=True)
        self.assertNotEqual(probe.returncode, 0)
        r = self.d.get("/v1/processes/%d" % p.pid)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["uid"], pwd.getpwnam("nobody").pw_uid)
        self.assertGreater(r.json["totals"]["mappings"], 0)

    def test_launch_runs_as_the_caller_with_its_policy_and_its_exit_is_reported(self):
        # the HTTP side has neither CAP_SETUID nor the right to set another process's policy: the
        # helper starts the program, as the uid it read from the caller's own socket
        nobody = pwd.getpwnam("nobody")
        helper = children(self.d.proc.pid)[0]
        body = {"argv": ["sh", "-c", "sleep 1; exit 3"], "policy": {"mode": "bind", "nodes": "0"},
                "watch": {"interval_ms": 200}}
        p = subprocess.run(["setpriv", "--reuid", str(nobody.pw_uid), "--regid", str(nobody.pw_gid), "--clear-groups",
                            "--", "curl", "-sS", "--unix-socket", self.d.socket, "-H", "Content-Type: application/json",
                            "-d", json.dumps(body), "-w", "\n%{http_code}", "http://localhost/v1/processes"],
                           capture_output=True, text=True, timeout=30)
        out, code = p.stdout.rsplit("\n", 1)
        self.assertEqual(int(code), 201, out)
        pid = json.loads(out)["pid"]
        self.addCleanup(lambda: os.path.exists("/proc/%d" % pid) and os.kill(pid, 9))
        st = status(pid)
        self.assertEqual(st["Uid"].split(), [str(nobody.pw_uid)] * 4)
        self.assertEqual(st["Gid"].split(), [str(nobody.pw_gid)] * 4)
        self.assertEqual(st["Groups"], "")
        self.assertEqual(int(st["PPid"]), helper)
        self.assertEqual(set(numa_policies(pid)), {"bind:0"})
        # the exit: the helper collects it, the watcher records it as the last sample
        deadline = time.time() + 15
        rows = []
        while time.time() < deadline:
            rows = self.d.sql("SELECT result FROM operations WHERE kind = 'process.sample' AND "
                              "json_extract(request, '$.pid') = ? ORDER BY id", (pid,))
            if rows and '"exited"' in rows[-1][0]:
                break
            time.sleep(0.1)
        self.assertTrue(rows, "no sample of pid %d" % pid)
        self.assertEqual(json.loads(rows[-1][0]).get("exited"), {"code": 3}, rows[-1])
        self.assertFalse(os.path.exists("/proc/%d" % pid), "pid %d is left a zombie" % pid)

    def test_collapse_of_another_users_process_goes_through_the_helper(self):
        # the daemon opens the pidfd; process_madvise (CAP_SYS_NICE + ptrace) is the helper's
        script = os.path.join(self.d.dir, "touch.py")
        with open(script, "w") as f:
            f.write(TOUCH)
        os.chmod(script, 0o644)
        p = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3",
                              script], stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        r = self.d.request("POST", "/v1/processes/%d/collapse" % p.pid, body={})
        self.assertEqual(r.status, 202, r.raw)
        job = wait_job(self.d, r.json["id"], timeout=60)
        self.assertEqual(job["status"], "ok", job)
        self.assertGreaterEqual(job["result"]["collapsed"], 1, job)
        self.assertGreaterEqual(job["result"]["thp_bytes_after"], 6 << 20, job)   # 3 aligned 2 MiB ranges at least


# 8 MiB of anonymous memory, every base page written, then wait: MADV_COLLAPSE turns it into huge pages.
TOUCH = """import mmap, time
m = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(0, 8 << 20, 4096):
    m[i] = 1
print("ready", flush=True)
time.sleep(60)
"""


@unittest.skipUnless(os.geteuid() == 0 and have_user(), "needs root and the %s user" % USER)
class PrivsepRefusals(unittest.TestCase):
    def start_fails(self, args, workdir):
        db = os.path.join(workdir, "db", "x.db")
        p = subprocess.run([DAEMON, "--socket", os.path.join(workdir, "s.sock"), "--db", db] + args,
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(db), "the database was created")
        return p.stderr

    def tmp(self, mode):
        d = tempfile.mkdtemp(prefix="mpd-privsep-", dir="/tmp")
        os.chmod(d, mode)
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        return d

    def test_unknown_user(self):
        err = self.start_fails(["--user", "no-such-user-mpd"], self.tmp(0o755))
        self.assertIn("no such user 'no-such-user-mpd'", err)
        self.assertIn("useradd --system --no-create-home --shell /usr/sbin/nologin --user-group no-such-user-mpd",
                      err)

    def test_database_directory_the_user_cannot_reach(self):
        # the database's directory is the daemon's to create, but its parent is root's 0700
        err = self.start_fails(["--user", USER], self.tmp(0o700))
        self.assertIn("is not writable by user %s" % USER, err)

    def test_not_started_as_root(self):
        d = self.tmp(0o777)
        p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", DAEMON, "--socket",
                            os.path.join(d, "s.sock"), "--db", os.path.join(d, "x.db"), "--user", USER],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("needs the daemon started as root", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "x.db")))


@unittest.skipUnless(os.geteuid() == 0 and have_user(), "needs root and the %s user" % USER)
class PrivsepDefault(unittest.TestCase):
    """Started as root, the daemon separates privileges without being asked; --user root is the one
    way to a single root process."""
    def serve(self, user):
        d = Daemon(None, user=user)
        self.addCleanup(d.cleanup)
        d.start()
        return d

    def test_default_serves_as_mempolicyd_with_a_root_helper(self):
        d = self.serve(None)
        self.assertNotIn("--user", d.command())
        uid = pwd.getpwnam(USER).pw_uid
        self.assertEqual(status(d.proc.pid)["Uid"].split(), [str(uid)] * 4)
        helpers = children(d.proc.pid)
        self.assertEqual(len(helpers), 1, helpers)
        self.assertEqual(status(helpers[0])["Uid"].split(), ["0"] * 4)

    def test_user_root_is_one_root_process(self):
        d = self.serve("root")
        self.assertEqual(status(d.proc.pid)["Uid"].split(), ["0"] * 4)
        self.assertEqual(children(d.proc.pid), [])
        self.assertIn("no privilege separation (--user root)", d.log_text())


if __name__ == "__main__":
    unittest.main()
