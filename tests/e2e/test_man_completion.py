"""The generated man pages and shell completion: `man -l` renders mempolicyd(8),
mempolicyd.conf(5) and mempolicyctl(1) with every option and command --help shows, and bash's
completion function, driven as bash would drive it, offers the commands, options, and the knob
names, page sizes and node ids the daemon reports."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from faketree import FakeTree
from lib import BIN, CTL, DAEMON, Daemon

MAN = shutil.which("man")


def run(*cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, (cmd, p.stdout, p.stderr)
    return p.stdout


def render(page_text):
    with tempfile.NamedTemporaryFile("w", suffix=".8") as f:
        f.write(page_text)
        f.flush()
        env = dict(os.environ, MANWIDTH="200", MAN_KEEP_FORMATTING="0")
        out = run(MAN, "-l", f.name, env=env)
    # Undo hyphenation at line ends and the backspace overstrike some pagers keep.
    return re.sub(r".\x08", "", out)


def ctl_commands():
    """[(words, [options])] from mempolicyctl --help and each command's --help."""
    out = run(CTL, "--help")
    cmds = re.findall(r"^  ([a-z]+(?: [a-z]+)?)\s{2,}", out.split("Commands:")[1], re.M)
    res = []
    for c in cmds:
        h = run(CTL, *c.split(), "--help")
        # "  -m, --membind NODES": run's numactl short options stand before the long name
        res.append((c, sorted(set(re.findall(r"^  (?:-[a-zA-Z], )?(--[a-z-]+)", h, re.M)))))
    return res


@unittest.skipUnless(MAN, "man (package man-db) is not installed")
class ManPages(unittest.TestCase):
    def test_mempolicyctl_page_has_every_command_and_option(self):
        page = render(run(CTL, "--man"))
        self.assertIn("MEMPOLICYCTL(1)", page)   # a user's command: section 1
        cmds = ctl_commands()
        self.assertGreater(len(cmds), 10)
        for words, opts in cmds:
            self.assertRegex(page, r"\n   %s\b" % re.escape(words), words)
            section = re.split(r"\n   (?=\S)", page.split("\n   " + words, 1)[1], 1)[0]
            for o in opts:
                self.assertIn(o, section, "%s: %s" % (words, o))
        # every global option of --help, and the environment it names
        helped = re.findall(r"^  (--[a-z-]+)", run(CTL, "--help").split("Commands:")[0], re.M)
        self.assertTrue({"--socket", "--url", "--cacert", "--token-file", "--json"} <= set(helped), helped)
        for o in helped + ["MEMPOLICYD_SOCKET", "MEMPOLICYD_URL", "MEMPOLICYD_TOKEN"]:
            self.assertRegex(page, r"\n\s+%s\b" % re.escape(o), o)
        # run's numactl short options are in its section
        section = re.split(r"\n   (?=\S)", page.split("\n   run", 1)[1], 1)[0]
        for o in ("-m, --membind", "-N, --cpunodebind", "-C, --physcpubind", "-l, --localalloc"):
            self.assertIn(o, section)

    def test_daemon_pages_have_every_option_and_setting(self):
        # A test build lists its hooks after the options; they are never installed, nor in the page.
        help_opts = re.findall(r"^  (--[a-z-]+)", run(DAEMON, "--help").split("test hooks")[0], re.M)
        self.assertGreater(len(help_opts), 10)
        page = render(run(DAEMON, "--man"))
        self.assertIn("MEMPOLICYD(8)", page)
        for o in help_opts:
            self.assertRegex(page, r"\n\s+%s\b" % re.escape(o), o)
        conf = render(run(DAEMON, "--man-conf"))
        self.assertIn("MEMPOLICYD.CONF(5)", conf)
        for o in help_opts:
            if o in ("--config", "--help", "--version", "--list-errors", "--list-kinds", "--list-reasons",
                     "--list-message-ids", "--no-seccomp"):   # no-seccomp: its key is seccomp
                self.assertNotRegex(conf, r"\n\s+%s =" % re.escape(o[2:]), o)
            else:
                self.assertRegex(conf, r"\n\s+%s =" % re.escape(o[2:]), o)

    def test_every_setting_in_the_conf_page_is_accepted_by_the_daemon(self):
        # The page lists keys; the daemon's config parser must know each (an unknown key is fatal).
        conf = render(run(DAEMON, "--man-conf"))
        keys = re.findall(r"^\s{7}([a-z-]+) = ", conf, re.M)
        self.assertGreater(len(keys), 8)
        with tempfile.NamedTemporaryFile("w") as f:
            f.write("".join("%s = x\n" % k for k in keys))
            f.flush()
            p = subprocess.run([DAEMON, "--config", f.name, "--version"], capture_output=True, text=True)
        self.assertNotIn("unknown setting", p.stderr)


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mpd-comp-")
        os.chmod(cls.tmp, 0o755)
        cls.tree = FakeTree(os.path.join(cls.tmp, "tree"), nodes=3, cpuless=())
        cls.d = Daemon(cls.tree).start()
        cls.script = os.path.join(cls.tmp, "completion.bash")
        with open(cls.script, "w") as f:
            f.write(run(CTL, "--completion", "bash"))

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.cleanup()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc in (0, None), cls.d.last_log

    def complete(self, line):
        """The candidates bash would offer for the last word of line (a trailing space: a new word)."""
        words = line.split(" ")
        prog = 'source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _mempolicyctl; printf "%%s\\n" "${COMPREPLY[@]}"' % (
            self.script, " ".join("'%s'" % w for w in words), len(words) - 1)
        env = dict(os.environ, PATH=BIN + ":" + os.environ["PATH"], MEMPOLICYD_SOCKET=self.d.socket)
        return sorted(x for x in run("bash", "-c", prog, env=env).split("\n") if x)

    def test_commands_and_subcommands(self):
        groups = sorted({words.split()[0] for words, _ in ctl_commands()})
        self.assertTrue({"status", "knob", "pool", "job", "schedule"} <= set(groups), groups)
        self.assertEqual(self.complete("mempolicyctl "), groups)
        self.assertEqual(self.complete("mempolicyctl po"), ["pool"])
        self.assertEqual(self.complete("mempolicyctl pool "), ["avail", "list", "resize"])
        subs = sorted(w.split()[1] for w, _ in ctl_commands() if w.startswith("history "))
        self.assertIn("show", subs)
        self.assertEqual(self.complete("mempolicyctl history "), subs)

    def test_options_of_a_command(self):
        self.assertEqual(self.complete("mempolicyctl pool resize 2M --"),
                         sorted(["--help", "--json", "--total", "--node", "--batch", "--deadline", "--compact",
                                 "--dry-run", "--no-wait"]))
        self.assertEqual(self.complete("mempolicyctl --"), sorted(["--socket", "--url", "--cacert", "--token-file",
                                                                  "--json", "--help", "--version"]))
        # a global option's value is not taken for the command word
        self.assertEqual(self.complete("mempolicyctl --url https://h:1 --token-file t po"), ["pool"])
        self.assertIn("-m", self.complete("mempolicyctl run -"))

    def test_words_from_the_daemon(self):
        self.assertEqual(self.complete("mempolicyctl pool resize "), ["1G", "2M"])
        self.assertEqual(self.complete("mempolicyctl pool resize 2M --node "), ["0=", "1=", "2="])
        self.assertEqual(self.complete("mempolicyctl pool avail 1G --node "), ["0", "1", "2"])
        knobs = self.complete("mempolicyctl knob get thp.")
        self.assertIn("thp.enabled", knobs)
        self.assertTrue(all(k.startswith("thp.") for k in knobs), knobs)
        self.assertIn("thp.defrag=", self.complete("mempolicyctl knob set thp.d"))

    def test_no_daemon_means_no_dynamic_words_and_no_error(self):
        words = "mempolicyctl --socket /nonexistent/x.sock pool resize ".split(" ")
        prog = 'source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _mempolicyctl; echo "n=${#COMPREPLY[@]}"' % (
            self.script, " ".join("'%s'" % w for w in words), len(words) - 1)
        p = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, PATH=BIN + ":" + os.environ["PATH"]))
        self.assertEqual((p.stdout, p.stderr), ("n=0\n", ""))

    def test_zsh_script_wraps_the_same_function(self):
        z = run(CTL, "--completion", "zsh")
        self.assertTrue(z.startswith("#compdef mempolicyctl\n"))
        self.assertIn("bashcompinit", z)
        self.assertIn("complete -F _mempolicyctl mempolicyctl", z)


if __name__ == "__main__":
    unittest.main()
