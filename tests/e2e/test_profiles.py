"""Profiles, read side (docs/reference/profiles.md): a daemon with --profiles-dir on a generated
4-node tree lists the directory's profiles with their state, shows the issue's db.conf merged over
a base.conf with every key's source, answers the dry run per key, refuses what it must with
registered codes and the error's file:line:column, and refuses
symlinks out of the directory; every answer is checked against schema/openapi.yaml. Against the
real kernel the dry run reads the live knobs and writes nothing (the knob files and the history
are unchanged). On main there is no /v1/profiles route and no --profiles-dir option."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import BIN, DaemonTest, bracketed, real_file
from test_openapi import SpecDaemonTest

DB_CONF = """# db.conf
[profile]
include = base            # base.conf first; keys here win, key by key
on-drift = restore        # default for every key: report | restore | yield

[knobs]
thp.enabled = madvise
thp.defrag = defer+madvise|defer          # either is in sync
thp.khugepaged.pages_to_scan >= 4096      # at least: a higher value is in sync, nothing written
numa.balancing = 0 ; on-drift = report
thp.shmem_enabled = advise ; required     # required: a kernel without it makes the profile degraded

[hugepages.2M]
node0 = 4096
node1 >= 2048

[hugepages.1G]
total = 16

[cgroup workload.slice]
mems = 0-1
"""

BASE_CONF = """[profile]
on-drift = report
[knobs]
thp.enabled = always
vm.compaction_proactiveness = 20
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


def make_profiles(top):
    """The profiles directory, readable by the daemon's unprivileged user; returns its path."""
    d = os.path.join(top, "profiles.d")
    os.makedirs(d)
    os.chmod(d, 0o755)
    write(os.path.join(d, "db.conf"), DB_CONF)
    write(os.path.join(d, "base.conf"), BASE_CONF)
    write(os.path.join(d, "bad.conf"), "[knobs]\nthp.enabled madvise\n")
    write(os.path.join(d, "typo.conf"), "[profile]\ninclude = base\n[knobs]\n  thp.enabeld = never\n")
    write(os.path.join(d, "notallowed.conf"), "[knobs]\nthp.enabled = sometimes\n")
    write(os.path.join(d, "loop.conf"), "[profile]\ninclude = loop2\n")
    write(os.path.join(d, "loop2.conf"), "[profile]\ninclude = loop\n")
    # (A ConfigMap volume is a directory of its own, ..data's files only: test_profile_reload.py.)
    # Out of the directory: a relative and an absolute link, and an include of one
    write(os.path.join(top, "outside.conf"), "[knobs]\nthp.enabled = never\n")
    os.symlink("../outside.conf", os.path.join(d, "rel.conf"))
    os.symlink(os.path.join(top, "outside.conf"), os.path.join(d, "abs.conf"))
    write(os.path.join(d, "viarel.conf"), "[profile]\ninclude = rel\n")
    return d


def tree_files(root):
    """Every regular file under root with its content: what a dry run must leave as it is."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    out[p] = f.read()
    return out


class WithProfiles:
    """A profiles directory made by cls.profiles(top) -> (dir, extra daemon args) before the daemon
    starts, removed after it stops."""
    @classmethod
    def setUpClass(cls):
        cls.ptop = tempfile.mkdtemp(prefix="mpd-prof-")
        os.chmod(cls.ptop, 0o755)
        cls.pdir, extra = cls.profiles(cls.ptop)
        cls.daemon_args = ("--profiles-dir", cls.pdir) + extra
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.ptop, ignore_errors=True)


class ProfilesOnTree(WithProfiles, SpecDaemonTest):
    @classmethod
    def profiles(cls, top):
        return make_profiles(top), ("--profile", "db")

    def test_list_names_every_profile_with_its_state(self):
        body = self.call("GET", "/v1/profiles").json
        self.assertEqual(body["dir"], self.pdir)
        self.assertEqual(body["active"], "db")
        by = {p["name"]: p for p in body["profiles"]}
        self.assertEqual(sorted(by), ["abs", "bad", "base", "db", "loop", "loop2", "notallowed", "rel",
                                      "typo", "viarel"])
        self.assertEqual((by["db"]["state"], by["db"]["active"], by["db"]["keys"]), ("ok", True, 10))
        self.assertEqual(by["db"]["file"], os.path.join(self.pdir, "db.conf"))
        self.assertEqual(by["bad"]["state"], "invalid")
        self.assertEqual(by["bad"]["error"], {"code": "profile.syntax", "file": "bad.conf", "line": 2, "column": 13,
                                              "detail": "bad.conf:2:13: expected '=', '>=' or '<=' after the key"})
        self.assertEqual(by["typo"]["error"]["code"], "profile.unknown_key")
        self.assertEqual((by["typo"]["error"]["line"], by["typo"]["error"]["column"]), (4, 3))
        self.assertEqual(by["loop2"]["error"]["code"], "profile.include_loop")
        for name in ("rel", "abs", "viarel"):
            self.assertEqual(by[name]["error"]["code"], "profile.include_escape", name)
        self.assertIn("bad.conf:2:13", self.d.log_text())   # read at start, the error logged

    def test_show_merges_the_example_over_base_with_sources(self):
        body = self.call("GET", "/v1/profiles/db").json
        self.assertEqual(body["files"], ["db.conf", "base.conf"])
        self.assertEqual(body["on_drift"], "restore")
        keys = {k["key"]: k for k in body["keys"]}
        self.assertEqual(list(keys)[:2], ["thp.enabled", "vm.compaction_proactiveness"])
        self.assertEqual((keys["thp.enabled"]["values"], keys["thp.enabled"]["source"]),
                         (["madvise"], {"file": "db.conf", "line": 7, "column": 1}))
        self.assertEqual(keys["vm.compaction_proactiveness"]["source"]["file"], "base.conf")
        self.assertEqual(keys["vm.compaction_proactiveness"]["on_drift"], "restore")   # db's default wins
        self.assertEqual(keys["thp.defrag"]["values"], ["defer+madvise", "defer"])
        self.assertEqual(keys["thp.khugepaged.pages_to_scan"]["comparator"], ">=")
        self.assertEqual(keys["numa.balancing"]["on_drift"], "report")
        self.assertTrue(keys["thp.shmem_enabled"]["required"])
        self.assertEqual((keys["hugepages.2M.node1"]["size"], keys["hugepages.2M.node1"]["node"]), ("2M", 1))
        self.assertIsNone(keys["hugepages.1G.total"]["node"])
        self.assertEqual(keys["cgroup[workload.slice].mems"]["cgroup"], "workload.slice")

    def test_diff_reads_and_writes_nothing(self):
        ops = len(self.call("GET", "/v1/history").json["operations"])
        before = tree_files(self.tree.root)
        body = self.call("GET", "/v1/profiles/db/diff").json
        self.assertEqual(tree_files(self.tree.root), before)
        self.assertEqual(len(self.call("GET", "/v1/history").json["operations"]), ops)
        self.assertTrue(body["dry_run"])
        keys = {k["key"]: k for k in body["keys"]}
        knobs = {k["name"]: k for k in self.call("GET", "/v1/knobs").json["knobs"]}
        for name in ("thp.enabled", "thp.defrag", "numa.balancing"):
            self.assertEqual(keys[name]["now"], str(knobs[name]["value"]), name)
        self.assertEqual(keys["thp.enabled"]["verdict"],
                         "in_sync" if knobs["thp.enabled"]["value"] == "madvise" else "differs")
        for k in keys.values():
            self.assertEqual(k["action"], {"in_sync": "none", "unsupported": "none",
                                           "differs": "resize" if k["kind"] == "hugepages" else "write"}[k["verdict"]])
        pool = self.call("GET", "/v1/hugepages/2M").json
        node0 = [n for n in pool["nodes"] if n["node"] == 0][0]
        self.assertEqual(keys["hugepages.2M.node0"]["now"], str(node0["nr"]))
        self.assertEqual(keys["hugepages.2M.node0"]["verdict"], "in_sync" if node0["nr"] == 4096 else "differs")
        self.assertEqual(sum(body["summary"].values()), len(body["keys"]))

    def test_refusals_name_the_place(self):
        r = self.call("GET", "/v1/profiles/bad", status=422)
        self.assertProblem(r, 422, "profile.syntax")
        self.assertEqual((r.json["file"], r.json["line"], r.json["column"]), ("bad.conf", 2, 13))
        r = self.call("GET", "/v1/profiles/notallowed/diff", status=422)
        self.assertProblem(r, 422, "profile.bad_value")
        self.assertIn("sometimes", r.json["detail"])
        self.assertEqual((r.json["line"], r.json["column"]), (2, 1))
        r = self.call("GET", "/v1/profiles/viarel", status=422)
        self.assertProblem(r, 422, "profile.include_escape")
        self.assertEqual((r.json["file"], r.json["line"], r.json["column"]), ("viarel.conf", 2, 11))
        for name in ("nope", "..data", "a.conf.."):
            self.assertProblem(self.call("GET", "/v1/profiles/%s" % name, status=404), 404, "profile.not_found")
        self.assertProblem(self.call("GET", "/v1/profiles/db/diff?dry_run=1", status=400), 400,
                           "request.unknown_query")
        self.assertProblem(self.call("POST", "/v1/profiles/db", status=405), 405)

    def test_cli_tables_and_json(self):
        p = self.d.ctl("profile", "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^NAME +STATE +KEYS +ACTIVE +ERROR")
        self.assertRegex(p.stdout, r"(?m)^db +ok +10 +yes")
        self.assertIn("bad.conf:2:13: expected '=', '>=' or '<=' after the key", p.stdout)
        p = self.d.ctl("profile", "show", "db")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("files: db.conf <- base.conf; on-drift: restore", p.stdout)
        self.assertRegex(p.stdout, r"(?m)^thp\.khugepaged\.pages_to_scan +>= 4096 +restore +db\.conf:9:1")
        p = self.d.ctl("profile", "diff", "db")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^KEY +NOW +WANTED +VERDICT +ACTION +SOURCE")
        self.assertIn("dry run: nothing was changed", p.stdout)
        p = self.d.ctl("--json", "profile", "diff", "db")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["name"], "db")
        p = self.d.ctl("profile", "show", "bad")
        self.assertEqual(p.returncode, 1)
        self.assertIn("bad.conf:2:13", p.stderr)
        p = self.d.ctl("profile", "show", "../etc/passwd")
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a profile name", p.stderr)


class ActiveProfileAtStart(unittest.TestCase):
    def test_a_name_no_profile_can_have_is_refused_before_start(self):
        with tempfile.TemporaryDirectory(prefix="mpd-prof-") as tmp:
            p = subprocess.run([os.path.join(BIN, "mempolicyd"), "--user", "root", "--profile", "../etc/x",
                                "--socket", os.path.join(tmp, "s"), "--db", os.path.join(tmp, "db")],
                               capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("profile wants a profile name", p.stderr)


class ActiveProfileInvalid(WithProfiles, DaemonTest):
    """An invalid active profile is logged with its place at start; the daemon serves."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2))

    @classmethod
    def profiles(cls, top):
        d = make_profiles(top)
        return d, ("--profile", "typo")

    def test_the_error_is_logged_and_the_daemon_serves(self):
        # The start-time apply refuses it (it runs once the API answers: wait for its line).
        want = "start-time apply of typo: typo.conf:4:3: no knob is named 'thp.enabeld'"
        deadline = time.monotonic() + 20
        while want not in self.d.log_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertIn(want, self.d.log_text())
        r = self.d.get("/v1/profiles")
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["active"], "typo")
        self.assertEqual([p["state"] for p in r.json["profiles"] if p["name"] == "typo"], ["invalid"])


class ProfilesDirMissing(DaemonTest):
    """A given directory that does not exist is an error on read (a missing default one is not:
    the unit test of prof_dir_list and profiles_list's default flag cover that without /etc)."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2))
    daemon_args = ("--profiles-dir", "/nonexistent/mempolicyd-profiles")

    def test_missing_given_directory_is_a_registered_error(self):
        r = self.d.get("/v1/profiles")
        self.assertProblem(r, 500, "profile.unreadable")
        self.assertIn("/nonexistent/mempolicyd-profiles", r.json["detail"])


class ProfilesRealKernel(WithProfiles, DaemonTest):
    """The dry run against this machine's knobs: it reads what /sys shows and writes nothing."""
    T = "/sys/kernel/mm/transparent_hugepage/"

    @classmethod
    def profiles(cls, top):
        d = os.path.join(top, "p")
        os.makedirs(d)
        os.chmod(d, 0o755)
        enabled = real_file(cls.T + "enabled")
        cls.now = bracketed(enabled)
        cls.other = [v.strip("[]") for v in enabled.split() if v.strip("[]") != cls.now][0]
        cls.scan = int(real_file(cls.T + "khugepaged/pages_to_scan"))
        write(os.path.join(d, "real.conf"),
              "[knobs]\nthp.enabled = %s\nthp.khugepaged.pages_to_scan >= %d\nthp.khugepaged.max_ptes_none <= 511\n"
              "[hugepages.2M]\ntotal >= 0\n" % (cls.other, cls.scan))
        return d, ()

    def test_diff_reads_the_kernel_and_writes_nothing(self):
        files = [self.T + "enabled", self.T + "khugepaged/pages_to_scan", self.T + "khugepaged/max_ptes_none",
                 "/proc/sys/vm/nr_hugepages"]
        before = [real_file(f) for f in files]
        ops = len(self.d.get("/v1/history").json["operations"])
        r = self.d.get("/v1/profiles/real/diff")
        self.assertEqual(r.status, 200, r.raw)
        keys = {k["key"]: k for k in r.json["keys"]}
        self.assertEqual((keys["thp.enabled"]["now"], keys["thp.enabled"]["verdict"], keys["thp.enabled"]["action"],
                          keys["thp.enabled"]["target"]), (self.now, "differs", "write", self.other))
        self.assertEqual((keys["thp.khugepaged.pages_to_scan"]["now"], keys["thp.khugepaged.pages_to_scan"]["verdict"]),
                         (str(self.scan), "in_sync"))
        self.assertEqual(keys["thp.khugepaged.max_ptes_none"]["verdict"], "in_sync")
        self.assertEqual(keys["hugepages.2M.total"]["verdict"], "in_sync")
        pool = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
        self.assertEqual(keys["hugepages.2M.total"]["now"], real_file(pool) if os.path.exists(pool) else None)
        self.assertEqual([real_file(f) for f in files], before)
        self.assertEqual(len(self.d.get("/v1/history").json["operations"]), ops)
