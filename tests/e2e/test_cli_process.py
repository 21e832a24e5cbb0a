"""mempolicyctl run / proc migrate / proc collapse against the real kernel: numactl's option names
start the program under that policy as the calling user, with its own arguments verbatim; migrate
and collapse wait for their jobs and print the outcome; usage errors send nothing (exit 2) and a
refusal is exit 1 with the problem code. `run` is numactl's: the program is this process (the
CLI sets the policy on itself and execs it, after the daemon checked and recorded the launch),
with the terminal's stdio and its own exit status; --detach has the daemon start it. Run under
`flock /tmp/mpd-test.lock`."""
import json
import os
import re
import signal
import stat
import tempfile
import time

from lib import DaemonTest
from test_process_launch import numa_policies, status_field
from test_process_migrate import CHILD


class CliProcess(DaemonTest):
    def setUp(self):
        self.pids = []

    def tearDown(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def run_ok(self, *args, user=None):
        p = self.d.ctl("--json", "run", "--detach", *args, user=user)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.pids.append(out["pid"])
        return out

    def test_run_under_each_numactl_option(self):
        for opts, shown in ((["--membind", "0"], "bind:0"), (["--preferred", "0"], "prefer:0"),
                            (["--interleave", "0"], "interleave:0"), (["--localalloc"], "local"),
                            (["--preferred-many", "0"], "prefer (many):0")):
            with self.subTest(opts=opts):
                out = self.run_ok(*opts, "--", "sleep", "30")
                self.assertEqual(set(numa_policies(out["pid"])), {shown})
        # the program's own options are its own, "-c" included; cwd and environment are the caller's
        out = self.run_ok("--membind", "0", "--physcpubind", "0", "--thp", "disable", "--",
                          "python3", "-c", "import time; time.sleep(30)")
        pid = out["pid"]
        self.assertEqual(status_field(pid, "Cpus_allowed_list"), "0")
        self.assertEqual(status_field(pid, "THP_enabled"), "0")
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            self.assertEqual(f.read().split(b"\0")[:3], [b"python3", b"-c", b"import time; time.sleep(30)"])
        self.assertEqual(os.readlink("/proc/%d/cwd" % pid), os.getcwd())
        with open("/proc/%d/environ" % pid, "rb") as f:
            self.assertIn(("PATH=" + os.environ["PATH"]).encode(), f.read().split(b"\0"))

    def test_run_as_nobody_and_the_text_output(self):
        out = self.run_ok("--membind", "0", "--", "sleep", "30", user="nobody")
        self.assertEqual(status_field(out["pid"], "Uid").split()[0], "65534")
        p = self.d.ctl("run", "--detach", "--watch", "--", "sleep", "30")
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.match(r"pid (\d+) started \(start time \d+, operation \d+\): watched", p.stdout)
        self.assertTrue(m, p.stdout)
        self.pids.append(int(m.group(1)))

    def test_usage_errors_send_nothing(self):
        db = self.d.db_snapshot()
        launched = "SELECT count(*) FROM operations WHERE kind = 'process.launch' AND status = 'ok'"
        n = self.d.sql(launched)
        for args in (["run"], ["run", "--membind", "0", "--interleave", "0", "--", "true"],
                     ["run", "--cpunodebind", "0", "--physcpubind", "0", "--", "true"],
                     ["run", "--bogus", "--", "true"], ["proc", "migrate", "1", "--from", "0"],
                     ["proc", "migrate", "--from", "0", "--to", "0"], ["proc", "migrate", "x", "--from", "0", "--to", "0"],
                     ["proc", "collapse", "1", "--start", "4096"]):
            p = self.d.ctl(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
        self.assertEqual(self.d.db_snapshot(), db)
        # the daemon's refusal: exit 1 with its code, nothing started
        p = self.d.ctl("run", "--membind", "1,,2", "--", "true")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("nodes.malformed", p.stderr)
        p = self.d.ctl("run", "--detach", "--", "/nonexistent/program")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("process.exec_failed", p.stderr)
        self.assertEqual(self.d.sql(launched), n)
        # run here: not found is the shell's 127, found before anything is sent
        p = self.d.ctl("run", "--", "/nonexistent/program")
        self.assertEqual(p.returncode, 127, p.stderr)
        self.assertEqual(self.d.sql(launched), n)
        # --watch is the daemon's, for the processes it starts
        self.assertEqual(self.d.ctl("run", "--watch", "--", "true").returncode, 2)

    def test_proc_migrate_and_collapse_wait_and_print(self):
        out = self.run_ok("--membind", "0", "--", "python3", "-c", CHILD)
        pid = out["pid"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(" anon=2048 " in l for l in open("/proc/%d/numa_maps" % pid)):
            time.sleep(0.05)
        p = self.d.ctl("proc", "migrate", str(pid), "--from", "0", "--to", "0", "--start-time", str(out["start_time"]))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("process.migrate", p.stdout)
        self.assertRegex(p.stdout, r"NODE\s+PAGES BEFORE\s+PAGES AFTER\n0\s+\d{4,}\s+\d{4,}")
        self.assertRegex(p.stdout, r"pages_not_moved\s+0")

        m = [x for x in self.d.get("/v1/processes/%d" % pid).json["mappings"]
             if x["end"] and int(x["end"], 16) - int(x["start"], 16) == 8 << 20][0]
        start = (int(m["start"], 16) + (2 << 20) - 1) & ~((2 << 20) - 1)
        p = self.d.ctl("proc", "collapse", str(pid), "--start", str(start), "--length", str(2 << 20))
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        self.assertRegex(p.stdout, r"collapsed\s+1")
        self.assertRegex(p.stdout, r"thp_bytes_after\s+2097152")

        # another user's process: refused, exit 1
        p = self.d.ctl("proc", "migrate", str(pid), "--from", "0", "--to", "0", user="nobody")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("auth.forbidden", p.stderr)


class CliRunHere(DaemonTest):
    """`mempolicyctl run` without --detach, as numactl: the real kernel's node 0 and CPU 0."""

    def launches(self):
        return self.d.sql("SELECT id, result FROM operations WHERE kind = 'process.launch' ORDER BY id")

    def test_the_exit_status_is_the_programs(self):
        p = self.d.ctl("run", "-m", "0", "-N", "0", "--", "sh", "-c", "exit 7")
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertEqual((p.stdout, p.stderr), ("", ""))
        p = self.d.ctl("run", "--membind", "0", "sh", "-c", "kill -TERM $$")   # numactl: no "--" needed
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)

    def test_the_program_has_the_callers_stdio(self):
        p = self.d.ctl("run", "-l", "--", "sh", "-c", "cat; echo to-stderr >&2", input="to-stdin\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "to-stdin\n")
        self.assertEqual(p.stderr, "to-stderr\n")

    def test_the_program_is_this_process_under_the_policy_and_recorded(self):
        before = len(self.launches())
        script = "echo $$; grep -E '^(Cpus_allowed_list|THP_enabled):' /proc/$$/status; grep -c ' bind:0 ' /proc/$$/numa_maps"
        p = self.d.ctl("run", "-m", "0", "-C", "0", "--thp", "disable", "--", "sh", "-c", script)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        pid = int(lines[0])
        self.assertIn("Cpus_allowed_list:\t0", lines)
        self.assertIn("THP_enabled:\t0", lines)
        self.assertGreater(int(lines[-1]), 0, p.stdout)   # its mappings are under bind:0
        ops = self.launches()
        self.assertEqual(len(ops), before + 1)
        res = json.loads(ops[-1][1])
        # the recorded process is the one that ran: the CLI's own pid, which exec kept
        self.assertEqual((res["pid"], res["self"]), (pid, True))
        self.assertEqual(res["policy"]["mode"], "bind")

    def test_numactls_short_options(self):
        for opts in (["-m", "0"], ["-m0"], ["-p", "0"], ["-i", "0"], ["-l"], ["-N", "0"], ["-C", "0"],
                     ["--membind=0"]):
            with self.subTest(opts=opts):
                p = self.d.ctl("run", *opts, "--", "true")
                self.assertEqual(p.returncode, 0, p.stderr)
        help = self.d.ctl("run", "--help").stdout
        usage = help.splitlines()[0]
        self.assertTrue(usage.endswith("[--] CMD [ARGS...]"), usage)   # options before the program
        self.assertIn("-m, --membind NODES", help)

    def test_a_program_that_cannot_run_is_126_or_127_and_not_recorded(self):
        before = len(self.launches())
        p = self.d.ctl("run", "-m", "0", "--", "no-such-program-mpd")
        self.assertEqual(p.returncode, 127)
        self.assertIn("no-such-program-mpd: command not found", p.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
            f.write("#!/bin/sh\nexit 0\n")
        self.addCleanup(os.unlink, f.name)
        os.chmod(f.name, stat.S_IRUSR | stat.S_IWUSR)
        p = self.d.ctl("run", "--", f.name)
        self.assertEqual(p.returncode, 126, p.stderr)
        self.assertEqual(len(self.launches()), before)
        # a policy the daemon refuses: exit 1, the program never runs
        p = self.d.ctl("run", "--membind", "4095", "--", "sh", "-c", "echo ran")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")
        self.assertIn("(nodes.not_in_topology)", p.stderr)
