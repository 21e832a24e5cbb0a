"""Bad input for every mempolicyctl command, from one table that must name every command `--help`
lists (a new command without its cases fails here), and the agreement of each command's `--help`
with the options its declaration makes the parser accept.

Per command: usage errors (exit 2, nothing sent), requests the daemon refuses (exit 1, the problem's
code on stderr) and, for the commands that change something, the same command run as `nobody`
(exit 1, auth.forbidden). Every case prints nothing on stdout. Afterwards the generated tree and
every database table are as they were."""
import re
import subprocess
import unittest

from faketree import FakeTree
from lib import CTL, DaemonTest

# command -> {"usage": [argv...], "refused": [(argv, code)], "nobody": [argv]}; "{job}" and "{sched}"
# stand for a finished job and a schedule made in setUpClass.
CASES = {
    "status": {"usage": [["extra"], ["--bogus"]]},
    "topology": {"usage": [["x"], ["--nodes"]]},
    "knob list": {"usage": [["x"], ["--all"]]},
    "profile list": {"usage": [["x"], ["--all"]]},
    "profile show": {"usage": [[], ["a", "b"], ["../x"], [".hidden"], ["a/b"]],
                     "refused": [(["nosuchprofile"], "profile.not_found")]},
    "profile diff": {"usage": [[], ["a", "b"], ["../x"], ["--dry-run"]],
                     "refused": [(["nosuchprofile"], "profile.not_found")]},
    "profile apply": {"usage": [[], ["a", "b"], ["../x"], ["a", "--deadline", "soon"], ["a", "--deadline", "0"],
                                ["a", "--exit-code"]],
                      "refused": [(["nosuchprofile"], "profile.not_found")],
                      "nobody": [["nosuchprofile"], ["nosuchprofile", "--dry-run"]]},
    "profile verify": {"usage": [["x"], ["--dry-run"], ["--exit-code", "x"]]},
    "knob get": {"usage": [[], ["a", "b"], ["../x"], ["thp/enabled"]],
                 "refused": [(["no.such.knob"], "knob.unknown")]},
    "knob set": {"usage": [[], ["thp.enabled"], ["=never"], ["thp.enabled="], ["thp.enabled=a", "thp.enabled=b"],
                           ["thp.enabled=never", "--forcibly"]],
                 "refused": [(["thp.enabled=sometimes"], "knob.value_not_allowed"),
                             (["thp.khugepaged.pages_to_scan=-5"], "knob.out_of_range"),
                             (["thp.khugepaged.pages_to_scan=99999999999999"], "knob.out_of_range"),
                             (["thp.enabled=never", "no.such.knob=1"], "knob.unknown")],
                 "nobody": [["thp.enabled=never"], ["thp.enabled=never", "--dry-run"]]},
    "history": {"usage": [["--limit", "x"], ["--limit", "0"], ["--limit"], ["extra"]],
                "refused": [(["--since", "yesterday"], "request.bad_query"),
                            (["--cursor", "zz"], "request.bad_query"),
                            (["--limit", "5000"], "request.bad_query")]},
    "history export": {"usage": [["extra"], ["--limit", "5"], ["--kind"]],
                       "refused": [(["--since", "yesterday"], "request.bad_query"),
                                   (["--until", "2026-02-30T00:00:00Z"], "request.bad_query")]},
    "history show": {"usage": [[], ["abc"], ["0"], ["-1"], ["1", "2"]],
                     "refused": [(["999999"], "history.not_found")]},
    "history stats": {"usage": [["extra"], ["--size"]],
                      # (a size the kernel lacks now is a fair question of history: --size 3M is 200)
                      "refused": [(["--size", "abc"], "request.bad_query"),
                                  (["--node", "x"], "request.bad_query"),
                                  (["--direction", "sideways"], "request.bad_query")]},
    "history compare": {"usage": [[], ["1"], ["abc", "1"], ["0", "1"], ["1", "-1"], ["1", "2\n"],
                                  [str(i) for i in range(1, 18)]],
                        "refused": [(["999998", "999999"], "history.not_found")]},
    "probe list": {"usage": [["x"], ["--all"]]},
    "probe run": {"usage": [[], ["touch", "=1"], ["touch", "size="], ["touch", "policy=1", "policy.mode=bind"],
                            ["touch", "thp=[bad"], ["touch", "size=1M", "size=2M"], ["touch", "--bogus"]],
                  "refused": [(["nope"], "probe.unknown"), (["touch", "size=0"], "probe.bad_param"),
                              (["touch", "bogus=1"], "request.unknown_field"),
                              (["touch", "timeout_s=0"], "probe.bad_param"),
                              (["touch", "size=1000G"], "probe.too_large"),
                              (["touch", "policy.mode=bind", "policy.nodes=9"], "nodes.not_in_topology")],
                  "nobody": [["touch", "size=4M"], ["touch", "--no-wait"]]},
    "pool list": {"usage": [["x"]]},
    "pool resize": {"usage": [[], ["2M"], ["2M", "--total", "-1"], ["2M", "--total", "x"], ["2M", "--batch", "0"],
                              ["2M", "--total", "1", "--deadline", "soon"], ["2M", "--node", "x=1"],
                              ["2M", "--node", "1=1", "--node", "1=2"], ["2M", "--total", "1", "--node", "0=1"]],
                    "refused": [(["64M", "--total", "1"], "hugepages.unknown_size"),
                                (["2M", "--node", "9=1"], "resize.bad_node"),
                                (["2M", "--total", "99999999999"], "resize.bad_count")],
                    "nobody": [["2M", "--total", "1"], ["2M", "--node", "1=1", "--dry-run"],
                               ["2M", "--total", "1", "--no-wait"]]},
    "pool avail": {"usage": [[], ["2M"], ["2M", "--count", "0"], ["2M", "--count", "1", "--node", "x"]],
                   "refused": [(["3M", "--count", "1"], "hugepages.unknown_size"),
                               (["2M", "--count", "1", "--node", "9"], "resize.bad_node")]},
    "job list": {"usage": [["--limit", "x"], ["--limit", "0"], ["extra"], ["--cursor"]],
                 "refused": [(["--limit", "5000"], "request.bad_query"), (["--cursor", "zz"], "request.bad_query"),
                             (["--cursor", "c5-00000000"], "request.cursor_mismatch")]},
    "job show": {"usage": [[], ["abc"], ["0"], ["1", "2"]],
                 "refused": [(["999999"], "job.not_found")]},
    "job cancel": {"usage": [[], ["abc"], ["-1"]],
                   # an ended job ({job}) is "already so", exit 0: test_cli_conventions.py
                   "refused": [(["999999"], "job.not_found")],
                   "nobody": [["{job}"], ["999999"]]},
    "schedule add": {"usage": [[], ["--cron", "0 2 * * *"], ["--cron", "0 2 * * *", "--size", "2M"],
                               ["--size", "2M", "--total", "1"],
                               ["--cron", "0 2 * * *", "--size", "2M", "--total", "-1"]],
                     "refused": [(["--cron", "61 * * * *", "--size", "2M", "--total", "1"], "schedule.bad_cron"),
                                 (["--cron", "0 2 * * *", "--size", "2M", "--total", "1", "--timezone", "Mars/Base"],
                                  "schedule.bad_timezone"),
                                 (["--cron", "0 2 * * *", "--size", "3M", "--total", "1"], "hugepages.unknown_size")],
                     "nobody": [["--cron", "0 3 * * *", "--size", "2M", "--total", "4"]]},
    "schedule list": {"usage": [["x"], ["--limit", "0"], ["--cursor"]],
                      "refused": [(["--limit", "5000"], "request.bad_query"), (["--cursor", "zz"], "request.bad_query"),
                                  (["--cursor", "c5-00000000"], "request.cursor_mismatch")]},
    "schedule show": {"usage": [[], ["abc"], ["0"]],
                      "refused": [(["999999"], "schedule.not_found")]},
    "schedule rm": {"usage": [[], ["abc"]],
                    "refused": [(["999999"], "schedule.not_found")],
                    "nobody": [["{sched}"]]},
    # run is open to every local user (as themselves), so it has no "nobody" case
    "run": {"usage": [[], ["--membind", "0", "--interleave", "0", "--", "true"], ["--bogus", "--", "true"],
                      ["--membind"], ["--interval", "x", "--", "true"],
                      ["--cpunodebind", "0", "--physcpubind", "0", "--", "true"]],
            "refused": [(["--membind", "1,,2", "--", "true"], "nodes.malformed"),
                        (["--membind", "9", "--", "true"], "nodes.not_in_topology"),
                        (["--interleave", "0-", "--", "true"], "nodes.malformed"),
                        (["--thp", "sometimes", "--", "true"], "request.invalid")]},
    # a process's own user may migrate it: the daemon decides per process, not the router
    "proc migrate": {"usage": [[], ["1"], ["1", "--from", "0"], ["x", "--from", "0", "--to", "1"],
                               ["0", "--from", "0", "--to", "1"], ["1", "--from", "0", "--to", "1", "--start-time", "0"]],
                     "refused": [(["999999", "--from", "0", "--to", "1"], "process.not_found"),
                                 (["1", "--from", "1,,2", "--to", "1"], "nodes.malformed"),
                                 (["1", "--from", "0", "--to", "9"], "nodes.not_in_topology")]},
    "proc collapse": {"usage": [[], ["x"], ["1", "--start", "4096"], ["1", "--length", "0"]],
                      "refused": [(["999999"], "process.not_found")],
                      "nobody": [["1"]]},
    "proc show": {"usage": [[], ["abc"], ["0"], ["-1"], ["1", "2"], ["1", "--start-time", "x"],
                            ["1", "--start-time", "0"], ["1", "--bogus"]],
                  "refused": [(["4194305"], "process.bad_pid"), (["4194304"], "process.not_found")]},
    "proc watch": {"usage": [[], ["x"], ["1", "--limit", "0"], ["1", "--mappings"]],
                   "refused": [(["1", "--limit", "20000"], "request.bad_query"),
                               (["4194304"], "process.not_found")]},
    "cgroup show": {"usage": [[], ["a", "b"], ["a", "--bogus"]],
                    "refused": [(["a/../b"], "cgroup.bad_path"), (["a//b"], "cgroup.bad_path"),
                                (["a"], "cgroup.unavailable")]},   # the generated host has no cpuset
    "cgroup mems": {"usage": [[], ["a"], ["a", "0", "1"]],
                    "refused": [(["a/../b", "0"], "cgroup.bad_path"), (["a", "0"], "cgroup.unavailable")],
                    "nobody": [["a", "0"]]},
    "token create": {"usage": [[], ["--name", "x"], ["--scope", "read"], ["--name", "x", "--scope", "read", "extra"],
                               ["--name", "x", "--scope", "read", "--expires", "soon"],
                               ["--name", "x", "--scope", "read", "--expires", "0d"],
                               ["--name", "x", "--scope", "read", "--expires", "-5"],
                               ["--name", "x", "--scope", "read", "--expires", "99999d"]],
                     "refused": [(["--name", "x", "--scope", "write"], "token.bad_request"),
                                 (["--name", "../x", "--scope", "read"], "token.bad_request"),
                                 (["--name", "x" * 49, "--scope", "read"], "token.bad_request")],
                     "nobody": [["--name", "x", "--scope", "read"]]},
    "token list": {"usage": [["x"], ["--all"]]},
    "profile drift": {"usage": [["x"], ["--limit", "0"], ["--limit", "x"], ["--key"], ["--cursor"]]},
    "experiment run": {"usage": [[], ["--arm", "bad", "--arm", "b:thp.enabled=never", "--", "/bin/true"],
                                 ["--arm", "a:thp.enabled=always", "--arm", "b:thp.enabled=never", "--rounds", "x",
                                  "--", "/bin/true"],
                                 ["--arm", "a:thp.enabled=always", "--arm", "b:thp.enabled=never", "--probe"],
                                 ["--arm", "a:profile=/nonexistent/a.conf", "--arm", "b:thp.enabled=never", "--",
                                  "/bin/true"],
                                 ["--arm", "a:profile=/etc/passwd,profile=/etc/passwd", "--arm",
                                  "b:thp.enabled=never", "--", "/bin/true"]],
                       "refused": [(["--arm", "a:thp.enabled=always", "--arm", "a:thp.enabled=never", "--", "/bin/true"],
                                    "experiment.duplicate_arm"),
                                   (["--arm", "a:thp.enabled=always", "--arm", "b:thp.enabled=never", "--rounds", "0",
                                     "--", "/bin/true"], "experiment.bad_rounds"),
                                   (["--arm", "a:profile=/etc/passwd", "--arm", "b:thp.enabled=never", "--",
                                     "/bin/true"], "profile.syntax")],
                       "nobody": [["--arm", "a:thp.enabled=always", "--arm", "b:thp.enabled=never", "--", "/bin/true"]]},
    "experiment list": {"usage": [["x"], ["--limit"]]},
    "experiment show": {"usage": [[], ["abc"], ["0"], ["1", "2"]],
                        "refused": [(["999999"], "experiment.not_found")]},
    "experiment samples": {"usage": [[], ["abc"], ["1", "2"]],
                           "refused": [(["999999"], "experiment.not_found")]},
    "experiment cancel": {"usage": [[], ["abc"], ["-1"]],
                          "nobody": [["999999"]]},
    "advise": {"usage": [["x"], ["--floor", "0"], ["--floor", "x"], ["--apply"]]},
    "token revoke": {"usage": [[], ["a", "b"]],
                     "refused": [(["nope"], "token.not_found")],
                     "nobody": [["nope"]]},
}
CHANGING = {"knob set", "pool resize", "job cancel", "schedule add", "schedule rm", "proc collapse", "cgroup mems", "probe run",
            "token create", "token revoke", "profile apply", "experiment run", "experiment cancel"}


class CliBadInput(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4, cpuless=(3,)))

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"1": 2}})
        if r.status != 202:
            raise AssertionError("the resize was not started: %r\n%s" % (r, cls.d.log_text()[-3000:]))
        cls.job = r.json["id"]
        p = cls.d.ctl("job", "show", str(cls.job), "--wait")
        assert p.returncode == 0, p.stderr
        r = cls.d.request("POST", "/v1/schedules", body={"cron": "0 4 * * *",
                                                          "action": {"hugepages": {"size": "2M", "total": 0}}})
        assert r.status == 201, r.raw
        cls.sched = r.json["id"]

    def expand(self, argv):
        return [a.replace("{job}", str(self.job)).replace("{sched}", str(self.sched)) for a in argv]

    def test_every_command_has_cases(self):
        out = subprocess.run([CTL, "--help"], capture_output=True, text=True).stdout
        listed = set(re.findall(r"(?m)^  ([a-z]+(?: [a-z]+)?)\s{2,}\S", out.split("Commands:")[1].split("Exit codes")[0]))
        self.assertEqual(listed, set(CASES), "commands in --help vs. this table")
        for name, c in CASES.items():
            self.assertTrue(c.get("usage"), "%s: no usage-error case" % name)
            self.assertEqual(bool(c.get("nobody")), name in CHANGING, "%s: unauthorised cases" % name)

    def test_bad_input_exits_with_the_right_code_and_changes_nothing(self):
        tree, db = self.tree.snapshot(), self.d.db_snapshot()
        for name, c in CASES.items():
            cmd = name.split()
            for argv in c.get("usage", []):
                with self.subTest(case=name, argv=argv, expect="usage"):
                    p = self.d.ctl(*cmd, *self.expand(argv))
                    self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                    self.assertRegex(p.stderr, r"^mempolicyctl: |^usage: ")
            for argv, code in c.get("refused", []):
                with self.subTest(case=name, argv=argv, expect=code):
                    p = self.d.ctl(*cmd, *self.expand(argv))
                    self.assertEqual((p.returncode, p.stdout), (1, ""), p.stderr)
                    self.assertIn("(%s)" % code, p.stderr)
            for argv in c.get("nobody", []):
                with self.subTest(case=name, argv=argv, expect="auth.forbidden"):
                    p = self.d.ctl(*cmd, *self.expand(argv), user="nobody")
                    self.assertEqual((p.returncode, p.stdout), (1, ""), p.stderr)
                    self.assertIn("(auth.forbidden)", p.stderr)
        self.assertEqual(self.tree.snapshot(), tree)
        self.assertEqual(self.d.db_snapshot(), db)


def run_ctl(*argv):
    """mempolicyctl against a socket where nothing listens: parsing happens, nothing is sent."""
    return subprocess.run([CTL, "--socket", "/nonexistent/mpd.sock"] + list(argv), capture_output=True, text=True,
                          timeout=60)


def commands():
    out = run_ctl("--help").stdout
    return re.findall(r"(?m)^  ([a-z]+(?: [a-z]+)?)\s{2,}\S", out.split("Commands:")[1].split("Exit codes")[0])


def documented_options(words):
    """{option: takes a value} from the option lines of `words --help`, and the options of its usage line."""
    out = run_ctl(*words.split(), "--help").stdout
    if words == "history":   # the group's help; the bare command's options are in its usage line
        lines = [l for l in out.splitlines() if l.startswith("  mempolicyctl history [")]
        usage = lines[0]
        listed = {m: True for m in re.findall(r"(--[a-z-]+) [A-Z]", usage)}
        return listed, set(re.findall(r"--[a-z-]+", usage))
    usage = out.splitlines()[0].replace("[--socket PATH] [--json]", "")
    # "  -m, --membind NODES": a short alias (numactl's, for run) before the long name
    listed = {m.group(1): bool(m.group(2)) for m in re.finditer(r"(?m)^  (?:-[a-zA-Z], )?(--[a-z-]+)( [A-Z][^ ]*)?\s", out)}
    return listed, set(re.findall(r"--[a-z-]+", usage))


class CliHelpAgreesWithParser(unittest.TestCase):
    """Options are declared once, in the command table; --help and the usage line are generated from
    the declaration, and so is the parser. Checked from outside: every option a command's --help
    lists is in its usage line and accepted, and every option some other command has is refused
    as unknown. A help line written by hand for an option the parser does not know (or the
    reverse) fails here."""

    def test_every_command_lists_exactly_the_options_it_accepts(self):
        cmds = commands()
        self.assertEqual(set(cmds), set(CASES))
        docs = {w: documented_options(w) for w in cmds}
        universe = {}
        for listed, _ in docs.values():
            universe.update(listed)
        universe["--bogus"] = False
        for words, (listed, in_usage) in docs.items():
            with self.subTest(command=words):
                self.assertEqual(set(listed), in_usage, "option lines vs usage line")
            for opt, takes_value in sorted(universe.items()):
                arg = opt + "=1" if takes_value else opt
                with self.subTest(command=words, option=arg):
                    p = run_ctl(*words.split(), arg)
                    unknown = "unknown option '%s" % opt in p.stderr
                    self.assertEqual(unknown, opt not in listed, p.stderr)
                    self.assertNotIn("AddressSanitizer", p.stderr)
