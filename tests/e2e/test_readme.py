"""Every mempolicyctl command line of README.md runs as printed (issue 21): the `$ mempolicyctl`
lines of its code blocks, the remote block's lines (over TLS, with a token made by the block's own
`token create`) and the commands in its inline code (the seed table's), in the order the file has
them, against one daemon on a generated two-node tree with a cgroup v2 hierarchy. Only the
placeholders the README declares are filled in: ID (the id a command before it made: the newest
operation, job or schedule) and PID (a live process), and the remote block's host:8443 (this
daemon's TLS port, as localhost). A command passes when it exits 0, or, for one that waits for
the job it started (probe run, pool resize, proc migrate/collapse), when the daemon accepted it
as written (the job exists) and only the job failed: this machine's kernel has one node where the
tree says two, so a probe bound to node 1 fails in its child, which is not the README's to fix.

The profiles the README's commands name are the README's own: before the daemon starts, its
prompt lines that make files in the profiles directory (mkdir, the printf | tee of web.conf) run
with that directory, /etc/mempolicyd/profiles.d, replaced by the daemon's --profiles-dir, and each
code block whose first line is `# NAME.conf` is written there as NAME.conf."""
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import BIN, CTL, Daemon, free_port
from test_tls import Certs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README = os.path.join(ROOT, "README.md")
WAITS_FOR_A_JOB = ("probe run", "pool resize", "proc migrate", "proc collapse", "experiment run")
PROMPT = re.compile(r"^(?:\$ )?((?:sudo |[A-Z_]+=(?:\$\([^)]*\)|\S+) )?mempolicyctl\b.*)$")
PROFILES_DIR = "/etc/mempolicyd/profiles.d"   # the README's, the daemon's default
PROFILE_FILE = re.compile(r"^# ([A-Za-z0-9_-][A-Za-z0-9._-]*\.conf)$")
# sudo: the test runs as root already; bash runs the line as a shell would
SHELL = "sudo() { \"$@\"; }\n"


def readme_commands(text):
    """(line number, command) in file order: prompt lines of code blocks, inline code elsewhere."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            m = PROMPT.match(line)
            if m:
                out.append((n, m.group(1)))
            continue
        for span in re.findall(r"`([^`]+)`", line):
            if span.startswith("mempolicyctl "):
                out.append((n, span))
    return out


def readme_profiles(text):
    """The README's profiles: (the shell lines that make files in PROFILES_DIR, {NAME.conf: text})."""
    lines, files, block = [], {}, None
    for line in text.splitlines():
        if line.startswith("```"):
            block = [] if block is None else None
            continue
        if block is None:
            continue
        m = PROFILE_FILE.match(line) if not block else None
        if m:
            files[m.group(1)] = block   # the block's lines, filled in as it is read
        block.append(line)
        if line.startswith("$ ") and PROFILES_DIR in line and not PROMPT.match(line):
            lines.append(line[2:])
    return lines, {name: "\n".join(b) + "\n" for name, b in files.items()}


def words(cmd):
    """The command's words after mempolicyctl and its global options, for telling what it is."""
    w = shlex.split(cmd, comments=True)
    w = w[w.index("mempolicyctl") + 1:]
    while w and w[0].startswith("--"):
        w = w[2:] if w[0] in ("--url", "--cacert", "--token-file", "--socket") else w[1:]
    return w


def cgroup_tree(root):
    # nodes of 16 GiB: the README's schedule keeps 4096 2M pages (8 GiB) on node 0
    t = FakeTree(root, nodes=2, cpuless=(), mem_mb=(16384, 16384))
    cg = "sys/fs/cgroup/"
    t.write(cg + "cgroup.controllers", "cpuset cpu io memory pids\n")
    t.write(cg + "cgroup.subtree_control", "cpuset memory\n")
    t.write(cg + "cpuset.mems.effective", "0-1\n")
    t.write(cg + "cgroup.procs", "1\n")
    for d in ("system.slice", "mpdtest"):
        t.write(cg + d + "/cpuset.mems", "\n")
        t.write(cg + d + "/cpuset.mems.effective", "0-1\n")
        t.write(cg + d + "/cgroup.procs", "")
    return t


class ReadmeCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mpd-readme-")
        os.chmod(cls.tmp, 0o755)
        cls.tree = cgroup_tree(os.path.join(cls.tmp, "tree"))
        # the README's profiles, made as it says, in the directory the daemon is given
        cls.profiles = os.path.join(cls.tmp, "profiles.d")
        with open(README) as f:
            make, files = readme_profiles(f.read())
        assert make and {"db.conf", "base.conf"} <= set(files), (make, files)
        for line in make:
            subprocess.run(["bash", "-c", SHELL + line.replace(PROFILES_DIR, cls.profiles)], check=True,
                           stdout=subprocess.DEVNULL, timeout=60)
        for name, text in files.items():
            with open(os.path.join(cls.profiles, name), "w") as f:
                f.write(text)
        os.chmod(cls.profiles, 0o755)   # readable by the daemon's user whatever our umask
        for name in os.listdir(cls.profiles):
            os.chmod(os.path.join(cls.profiles, name), 0o644)
        cls.certs = Certs()
        cls.port = free_port()
        cls.d = Daemon(cls.tree, ["--listen-tcp", "127.0.0.1:%d" % cls.port, "--tls-cert", cls.certs.path("server.pem"),
                                  "--tls-key", cls.certs.path("server.key"), "--profiles-dir", cls.profiles])
        cls.d.start()
        # PID: a process of ours; the tree's /proc shows it through a link to the real one
        cls.child = subprocess.Popen(["sleep", "300"])
        os.symlink("/proc/%d" % cls.child.pid, os.path.join(cls.tree.proc, str(cls.child.pid)))
        cls.cwd = os.path.join(cls.tmp, "cwd")
        os.mkdir(cls.cwd)
        shutil.copy(cls.certs.path("ca.pem"), os.path.join(cls.cwd, "ca.pem"))   # the block's --cacert ca.pem
        # the README's NAME.conf blocks in the commands' directory too: an experiment arm's
        # profile=NAME.conf (a profile fragment is a profile file) is read from there
        for name, text in files.items():
            with open(os.path.join(cls.cwd, name), "w") as f:
                f.write(text)

    @classmethod
    def tearDownClass(cls):
        cls.child.kill()
        cls.child.wait()
        rc = cls.d.cleanup()
        cls.certs.cleanup()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc in (0, None), cls.d.last_log

    def newest(self, what):
        if what == "job":
            jobs = self.d.get("/v1/jobs?limit=1").json["jobs"]
            return jobs[0]["id"] if jobs else None
        if what == "schedule":
            s = self.d.get("/v1/schedules").json["schedules"]
            return s[-1]["id"] if s else None
        return self.d.get("/v1/history?limit=1").json["operations"][0]["id"]

    def fill(self, cmd):
        """The README's placeholders, and nothing else, filled in."""
        w = words(cmd)
        what = "job" if w[:1] in (["job"], ["experiment"]) else "schedule" if w[:1] == ["schedule"] else "operation"
        if re.search(r"\bID\b", cmd):
            ids = [o["id"] for o in self.d.get("/v1/history?limit=2").json["operations"]]
            if w[:2] == ["history", "compare"]:
                cmd = cmd.replace("ID ID", "%d %d" % (ids[1], ids[0]), 1)
            self.assertIsNotNone(self.newest(what), "%s: no %s made before it" % (cmd, what))
            cmd = re.sub(r"\bID\b", str(self.newest(what)), cmd)
        cmd = re.sub(r"\bPID\b", str(self.child.pid), cmd)
        return cmd.replace("host:8443", "localhost:%d" % self.port)

    def test_every_command_runs_as_printed(self):
        with open(README) as f:
            cmds = readme_commands(f.read())
        self.assertGreater(len(cmds), 30, cmds)
        # the seed lines the issue names are among them
        for seed in ("compare_thp=true", "hugetlb-alloc", "probe run fragment"):
            self.assertTrue(any(seed in c for _, c in cmds), seed)
        env = dict(os.environ, PATH=BIN + ":" + os.environ["PATH"], MEMPOLICYD_SOCKET=self.d.socket)
        env.pop("MEMPOLICYD_URL", None)
        env.pop("MEMPOLICYD_TOKEN", None)
        start = time.monotonic()
        for line, printed in cmds:
            with self.subTest(line=line, command=printed):
                cmd = self.fill(printed)
                jobs_before = self.newest("job")
                p = subprocess.run(["bash", "-c", SHELL + cmd], cwd=self.cwd, env=env,
                                   capture_output=True, text=True, timeout=120)
                w = words(cmd)
                if p.returncode != 0 and " ".join(w[:2]) in WAITS_FOR_A_JOB:
                    # accepted as written: it made its job, which then failed on this machine
                    self.assertEqual(p.returncode, 1, p.stderr)
                    self.assertNotEqual(self.newest("job"), jobs_before, "refused as written: " + p.stderr)
                else:
                    self.assertEqual(p.returncode, 0, "README line %d: %s\n%s%s" % (line, cmd, p.stdout, p.stderr))
                self.assertNotIn("AddressSanitizer", p.stderr)
        print("\n  %d README commands in %.1f s" % (len(cmds), time.monotonic() - start))


if __name__ == "__main__":
    unittest.main()
