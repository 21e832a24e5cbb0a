"""POST /v1/processes against the real kernel: a program started under each policy mode this kernel
takes really runs with that policy (its /proc/PID/numa_maps says so), with the CPUs, THP control,
cwd, environment and identity asked for; a non-root caller's program runs as that caller; the
launch and its watch samples are in history; bad input starts nothing and records nothing.
Run under `flock /tmp/mpd-test.lock` (it starts a daemon and processes)."""
import glob
import os
import platform
import pwd
import signal
import subprocess
import time

from lib import Daemon, DaemonTest, HeldProgram

NOBODY = pwd.getpwnam("nobody")


def kernel_at_least(major, minor):
    v = platform.release().split("-")[0].split(".")
    return (int(v[0]), int(v[1])) >= (major, minor)


def status_field(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return None


def numa_policies(pid):
    """The policy column of every numa_maps line (it may contain spaces: 'prefer (many):0')."""
    out = []
    with open("/proc/%d/numa_maps" % pid) as f:
        for line in f:
            rest = line.split(" ", 1)[1]
            for tok in (" file=", " heap", " stack", " anon=", " huge", " dirty=", " mapped=", " N"):
                i = rest.find(tok)
                if i >= 0:
                    rest = rest[:i]
            out.append(rest.strip())
    return out


def daemon_children(dpid):
    kids = set()
    for f in glob.glob("/proc/%d/task/*/children" % dpid):
        try:
            with open(f) as fh:
                kids |= {int(x) for x in fh.read().split()}
        except OSError:
            pass
    return kids


class Launch(DaemonTest):
    def setUp(self):
        self.started = []

    def tearDown(self):
        for pid in self.started:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def launch(self, body, status=201):
        body.setdefault("argv", ["sleep", "30"])
        r = self.d.request("POST", "/v1/processes", body=body)
        self.assertEqual(r.status, status, r.raw)
        if status == 201:
            self.started.append(r.json["pid"])
            self.assertEqual(r.headers.get("Location"), "/v1/processes/%d" % r.json["pid"])
        return r

    def op(self, op_id):
        r = self.d.get("/v1/history/%d" % op_id)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def test_every_mode_this_kernel_takes(self):
        cases = [
            ({"mode": "bind", "nodes": "0"}, "bind:0", True),
            ({"mode": "preferred", "nodes": "0"}, "prefer:0", True),
            ({"mode": "interleave", "nodes": "0"}, "interleave:0", True),
            ({"mode": "local"}, "local", True),
            ({"mode": "default"}, "default", True),
            ({"mode": "bind", "nodes": "0", "flags": ["static"]}, "bind=static:0", True),
            ({"mode": "interleave", "nodes": "0", "flags": ["relative"]}, "interleave=relative:0", True),
            ({"mode": "bind", "nodes": "0", "flags": ["balancing"]}, "bind=balancing:0", kernel_at_least(5, 12)),
            ({"mode": "preferred-many", "nodes": "0"}, "prefer (many):0", kernel_at_least(5, 15)),
            ({"mode": "weighted-interleave", "nodes": "0"}, "weighted interleave:0", kernel_at_least(6, 9)),
        ]
        for policy, shown, supported in cases:
            with self.subTest(policy=policy):
                if not supported:
                    r = self.launch({"policy": policy}, 409)
                    self.assertEqual(r.json["code"], "process.unsupported")
                    continue
                r = self.launch({"policy": policy})
                pid = r.json["pid"]
                pols = numa_policies(pid)
                self.assertTrue(pols, "no mappings")
                # every mapping without a VMA policy of its own shows the task policy
                self.assertEqual(set(pols), {shown}, pols)
                self.assertEqual(r.json["policy"]["mode"], policy["mode"])
                op = self.op(r.json["operation_id"])
                self.assertEqual((op["kind"], op["status"]), ("process.launch", "ok"))
                self.assertEqual(op["result"]["pid"], pid)
                with open("/proc/%d/stat" % pid) as f:
                    self.assertEqual(op["result"]["start_time"], int(f.read().rsplit(")", 1)[1].split()[19]))

    def test_pages_come_from_the_bound_node(self):
        # 8 MiB touched under bind:0: every page the program faulted in is on node 0
        prog = ("import mmap,time; m=mmap.mmap(-1,8<<20,flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS); "
                "m.write(b'x'*(8<<20)); time.sleep(30)")
        r = self.launch({"argv": ["python3", "-c", prog], "policy": {"mode": "bind", "nodes": "0"},
                         "env": {"PATH": "/usr/bin:/bin"}})
        pid = r.json["pid"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open("/proc/%d/numa_maps" % pid) as f:
                big = [l for l in f if "anon=" in l and "bind:0" in l and
                       any(int(t.split("=")[1]) >= 2048 for t in l.split() if t.startswith("anon="))]
            if big:
                break
            time.sleep(0.1)
        self.assertTrue(big, "the 8 MiB mapping never appeared")
        nodes = [t for t in big[0].split() if t.startswith("N")]
        self.assertEqual([n.split("=")[0] for n in nodes], ["N0"], big[0])

    def test_cpus_thp_cwd_env(self):
        r = self.launch({"cpus": "0", "thp": "disable", "cwd": "/tmp", "env": {"A": "1", "B": "x y"}})
        pid = r.json["pid"]
        self.assertEqual(status_field(pid, "Cpus_allowed_list"), "0")
        self.assertEqual(status_field(pid, "THP_enabled"), "0")
        self.assertEqual(os.readlink("/proc/%d/cwd" % pid), "/tmp")
        with open("/proc/%d/environ" % pid, "rb") as f:
            self.assertEqual(sorted(f.read().split(b"\0")[:-1]), [b"A=1", b"B=x y"])
        # the environment's values are not kept in history, its names are
        op = self.op(r.json["operation_id"])
        self.assertEqual(op["request"]["env"], ["A", "B"])

        with open("/sys/devices/system/node/node0/cpulist") as f:
            node0 = f.read().strip()
        r = self.launch({"cpunodes": "0"})
        self.assertEqual(status_field(r.json["pid"], "Cpus_allowed_list"), node0)
        if kernel_at_least(6, 18):
            self.launch({"thp": "except-advised"})
        else:
            self.assertEqual(self.launch({"thp": "except-advised"}, 409).json["code"], "process.unsupported")

    def curl_as(self, user, body):
        import json
        p = subprocess.run(["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--clear-groups",
                            "--", "curl", "-sS", "--unix-socket", self.d.socket, "-H", "Content-Type: application/json",
                            "-d", json.dumps(body), "-w", "\n%{http_code}", "http://localhost/v1/processes"],
                           capture_output=True, text=True, timeout=30)
        out, code = p.stdout.rsplit("\n", 1)
        return int(code), json.loads(out)

    def test_non_root_caller_runs_as_itself(self):
        code, out = self.curl_as(NOBODY, {"argv": ["sleep", "30"], "policy": {"mode": "bind", "nodes": "0"}})
        self.assertEqual(code, 201, out)
        pid = out["pid"]
        self.started.append(pid)
        self.assertEqual(status_field(pid, "Uid").split(), [str(NOBODY.pw_uid)] * 4)
        self.assertEqual(status_field(pid, "Gid").split(), [str(NOBODY.pw_gid)] * 4)
        self.assertEqual(status_field(pid, "Groups"), "")   # setpriv cleared them: none come back
        self.assertEqual(set(numa_policies(pid)), {"bind:0"})
        op = self.op(out["operation_id"])
        self.assertEqual((op["actor"]["uid"], op["result"]["uid"]), (NOBODY.pw_uid, NOBODY.pw_uid))

        # nobody may not name another user; nothing starts, nothing is recorded
        db, kids = self.d.db_snapshot(), daemon_children(self.d.proc.pid)
        code, out = self.curl_as(NOBODY, {"argv": ["sleep", "30"], "user": "root"})
        self.assertEqual((code, out["code"]), (403, "auth.forbidden"))
        self.assertEqual(self.d.db_snapshot(), db)
        self.assertEqual(daemon_children(self.d.proc.pid), kids)

        # a directory nobody cannot enter: the chdir runs as nobody and fails, recorded
        code, out = self.curl_as(NOBODY, {"argv": ["true"], "cwd": "/root"})
        self.assertEqual((code, out["code"], out.get("errno_name")), (409, "process.setup_failed", "EACCES"), out)

        # root may name another user: the program gets that user's identity
        r = self.launch({"user": "nobody"})
        self.assertEqual(status_field(r.json["pid"], "Uid").split(), [str(NOBODY.pw_uid)] * 4)

    def test_exec_failure_is_recorded(self):
        r = self.launch({"argv": ["/nonexistent/prog"]}, 422)
        self.assertEqual((r.json["code"], r.json["errno_name"]), ("process.exec_failed", "ENOENT"))
        row = self.d.sql("SELECT status, errno, error FROM operations WHERE kind = 'process.launch' "
                         "ORDER BY id DESC LIMIT 1")
        self.assertEqual(row, [("failed", 2, "exec: No such file or directory")])
        r = self.launch({"argv": ["/etc/passwd"]}, 422)
        self.assertEqual(r.json["errno_name"], "EACCES")

    def test_watch_samples_until_exit_and_the_child_is_reaped(self):
        # it runs until three samples are recorded, then exits: counts, not a lifetime's worth
        held = HeldProgram(self.d.dir)
        r = self.launch({"argv": held.argv, "watch": {"interval_ms": 200}})
        pid = r.json["pid"]

        def recorded():
            return self.d.sql("SELECT request, result FROM operations WHERE kind = 'process.sample' "
                              "AND json_extract(request, '$.pid') = ? ORDER BY id", (pid,))
        deadline = time.monotonic() + 30
        while len(recorded()) < 3:
            self.assertLess(time.monotonic(), deadline, "fewer than 3 samples in 30 s")
            time.sleep(0.05)
        held.release()
        while not (recorded() and '"exited"' in recorded()[-1][1]):
            self.assertLess(time.monotonic(), deadline, "no exit sample: %s" % recorded())
            time.sleep(0.05)
        import json
        samples = [(json.loads(a), json.loads(b)) for a, b in recorded()]
        self.assertGreaterEqual(len(samples), 4, samples)   # the three and the exit
        self.assertEqual([q["seq"] for q, _ in samples], list(range(1, len(samples) + 1)))
        self.assertEqual({q["launch_operation_id"] for q, _ in samples}, {r.json["operation_id"]})
        self.assertEqual(samples[-1][1]["exited"], {"code": 0})
        self.assertNotIn("exited", samples[-2][1])
        # a running sample is the placement (proc-inspect's shape): node 0 holds sleep's pages
        self.assertIn(0, [n["node"] for n in samples[0][1]["nodes"]], samples[0][1])
        # and the samples of that process are what GET .../samples lists
        r2 = self.d.get("/v1/processes/%d/samples?start_time=%d" % (pid, r.json["start_time"]))
        self.assertEqual(r2.status, 200, r2.raw)
        # reaped: no zombie left under the daemon
        self.assertNotIn(pid, daemon_children(self.d.proc.pid))
        self.assertFalse(os.path.exists("/proc/%d" % pid))


class LaunchBadInput(DaemonTest):
    def refused(self, body, status, code):
        db, kids = self.d.db_snapshot(), daemon_children(self.d.proc.pid)
        r = self.d.request("POST", "/v1/processes", body=body)
        self.assertProblem(r, status, code)
        self.assertEqual(self.d.db_snapshot(), db, body)
        self.assertEqual(daemon_children(self.d.proc.pid), kids, body)

    def test_refusals(self):
        s30 = ["sleep", "30"]
        cases = [
            ({}, 400, "request.missing_field"),
            ({"argv": []}, 400, "request.wrong_type"),
            ({"argv": ["sleep", 3]}, 400, "request.wrong_type"),
            ({"argv": [""]}, 400, "request.invalid"),
            ({"argv": s30, "colour": "red"}, 400, "request.unknown_field"),
            ({"argv": s30, "policy": "bind"}, 400, "request.wrong_type"),
            ({"argv": s30, "policy": {"nodes": "0"}}, 400, "request.missing_field"),
            ({"argv": s30, "policy": {"mode": "bind", "nodes": "0", "x": 1}}, 400, "request.unknown_field"),
            ({"argv": s30, "policy": {"mode": "scatter", "nodes": "0"}}, 422, "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "bind"}}, 422, "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "local", "nodes": "0"}}, 422, "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "preferred", "nodes": "0-1"}}, 422, "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "bind", "nodes": "0", "flags": ["static", "relative"]}}, 422,
             "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "interleave", "nodes": "0", "flags": ["balancing"]}}, 422,
             "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "local", "flags": ["static"]}}, 422, "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "bind", "nodes": "0", "flags": ["lazy"]}}, 422, "process.bad_policy"),
            ({"argv": s30, "policy": {"mode": "bind", "nodes": "0", "flags": "static"}}, 400, "request.wrong_type"),
            ({"argv": s30, "policy": {"mode": "bind", "nodes": "99"}}, 422, "nodes.not_in_topology"),
            ({"argv": s30, "cpus": "4000"}, 422, "process.bad_cpus"),
            ({"argv": s30, "cpunodes": "98"}, 422, "nodes.not_in_topology"),
            ({"argv": s30, "cpus": "0", "cpunodes": "0"}, 400, "request.invalid"),
            ({"argv": s30, "thp": "sometimes"}, 400, "request.invalid"),
            ({"argv": s30, "cwd": "tmp"}, 400, "request.invalid"),
            ({"argv": s30, "env": {"A": 1}}, 400, "request.wrong_type"),
            ({"argv": s30, "env": {"A=B": "1"}}, 400, "request.invalid"),
            ({"argv": s30, "env": ["A=1"]}, 400, "request.wrong_type"),
            ({"argv": s30, "watch": {"interval_ms": 5}}, 400, "request.invalid"),
            ({"argv": s30, "watch": {"interval_ms": 1000, "count": 3}}, 400, "request.invalid"),
            ({"argv": s30, "user": "no-such-user-here"}, 422, "process.bad_user"),
            ({"argv": s30, "user": [0]}, 400, "request.wrong_type"),
        ]
        for bad in ("0-", "3-1", "1,,2", ",0", "0,", "-1", " 0", "0\n", "99999999999", "4096", "0-4096", "a"):
            cases.append(({"argv": s30, "policy": {"mode": "bind", "nodes": bad}}, 400, "nodes.malformed"))
            cases.append(({"argv": s30, "cpus": bad}, 400, "nodes.malformed"))
        for body, status, code in cases:
            with self.subTest(body=body):
                self.refused(body, status, code)

    def test_raw_bodies(self):
        db = self.d.db_snapshot()
        for raw, code in ((b'{"argv": ["true"]', "request.malformed_json"), (b'["true"]', "request.not_an_object"),
                          (b'{"argv":["a"],"argv":["b"]}', "request.duplicate_key"), (b"", "request.empty_body")):
            r = self.d.request("POST", "/v1/processes", raw=raw, headers={"Content-Type": "application/json"})
            self.assertProblem(r, 400, code)
        self.assertEqual(self.d.db_snapshot(), db)


class LaunchOverTcp(DaemonTest):
    daemon_args = ("--listen-tcp", "127.0.0.1:%d" % (20000 + os.getpid() % 20000))

    def test_tcp_caller_cannot_launch(self):
        import http.client
        import json
        db = self.d.db_snapshot()
        c = http.client.HTTPConnection(*self.daemon_args[1].split(":"), timeout=10)
        c.request("POST", "/v1/processes", body=json.dumps({"argv": ["sleep", "30"]}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        body = json.loads(r.read())
        self.assertEqual((r.status, body["code"]), (403, "auth.forbidden"))
        self.assertEqual(self.d.db_snapshot(), db)
