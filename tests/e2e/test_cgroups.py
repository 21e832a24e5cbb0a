"""GET/PUT /v1/cgroups/{path}: cpuset.mems on the real kernel's cpuset hierarchy (whichever of v1
and v2 this host has; a cgroup is made for the test and removed), and on generated v2 trees for
what a host cannot show safely: symlinks out of the mount, a parent whose effective mems are
narrower, a cgroup whose parent does not enable cpuset, a host with no cpuset at all. Every refusal
is checked to change neither the files nor the database."""
import os
import shutil
import tempfile
import unittest

from faketree import FakeTree
from lib import Daemon, DaemonTest, real_file
from test_openapi import SpecDaemonTest


def real_mount():
    """(version, directory) of the host's cpuset hierarchy, as the daemon looks for it."""
    for version, d in ((2, "/sys/fs/cgroup"), (2, "/sys/fs/cgroup/unified")):
        try:
            if "cpuset" in real_file(os.path.join(d, "cgroup.controllers")).split():
                return version, d
        except OSError:
            pass
    if os.path.exists("/sys/fs/cgroup/cpuset/cpuset.mems"):
        return 1, "/sys/fs/cgroup/cpuset"
    return None, None


VERSION, MOUNT = real_mount()
NAME = "mpdtest-cg"
MEMS = "cpuset.mems"


def online_memory_nodes():
    nodes = []
    for n in range(4096):
        if not os.path.exists("/sys/devices/system/node/node%d" % n):
            continue
        if any(l.split()[3] != "0" for l in open("/sys/devices/system/node/node%d/meminfo" % n)
               if "MemTotal" in l):
            nodes.append(n)
    return nodes


@unittest.skipIf(MOUNT is None, "this host has no cpuset hierarchy")
class CgroupMemsReal(DaemonTest):
    """A cgroup under the host's cpuset hierarchy, made here; its mems set and read back."""

    def setUp(self):
        self.dir = os.path.join(MOUNT, NAME)
        if os.path.isdir(self.dir):
            os.rmdir(os.path.join(self.dir, "sub")) if os.path.isdir(os.path.join(self.dir, "sub")) else None
            os.rmdir(self.dir)
        os.mkdir(self.dir)
        self.addCleanup(os.rmdir, self.dir)
        if VERSION == 2:
            sc = os.path.join(MOUNT, "cgroup.subtree_control")
            if "cpuset" not in real_file(sc).split():
                with open(sc, "w") as f:
                    f.write("+cpuset")
                self.addCleanup(self._disable_cpuset, sc)
        self.nodes = online_memory_nodes()

    def _disable_cpuset(self, sc):
        with open(sc, "w") as f:
            f.write("-cpuset")

    def put(self, path, body):
        return self.d.request("PUT", "/v1/cgroups/" + path, body=body)

    def test_get_root_and_the_new_cgroup(self):
        root = self.d.get("/v1/cgroups").json
        self.assertEqual((root["version"], root["root"], root["path"]), (VERSION, True, ""))
        self.assertIn(NAME, root["children"])
        eff = "cpuset.mems.effective" if VERSION == 2 else "cpuset.effective_mems"
        self.assertEqual(root["mems_effective"], real_file(os.path.join(MOUNT, eff)))
        cg = self.d.get("/v1/cgroups/" + NAME).json
        self.assertEqual((cg["path"], cg["root"], cg["procs"], cg["children"]), (NAME, False, 0, []))
        self.assertEqual(cg["mems"], real_file(os.path.join(self.dir, MEMS)))

    def test_set_mems_is_written_read_back_and_recorded(self):
        want = str(self.nodes[0])
        r = self.put(NAME, {"mems": want})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(real_file(os.path.join(self.dir, MEMS)), want)
        self.assertEqual((r.json["mems"], r.json["mems_effective"]), (want, want))
        op = self.d.get("/v1/history/%d" % r.json["operation_id"]).json
        self.assertEqual((op["kind"], op["status"]), ("cgroup.mems", "ok"))
        self.assertEqual(op["request"], {"path": NAME, "mems": want})
        self.assertEqual(op["result"]["mems_after"], want)
        self.assertEqual(op["actor"]["uid"], 0)

    def test_cli_show_and_mems(self):
        want = str(self.nodes[0])
        p = self.d.ctl("cgroup", "mems", NAME, want)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"operation \d+: mems \(empty\) -> %s" % want)
        self.assertEqual(real_file(os.path.join(self.dir, MEMS)), want)
        p = self.d.ctl("cgroup", "show", "/" + NAME)
        self.assertRegex(p.stdout, r"(?m)^mems\s+%s$" % want)
        p = self.d.ctl("cgroup", "show", "/")
        self.assertRegex(p.stdout, r"(?m)^children\s+.*%s" % NAME)
        db = self.d.db_snapshot()
        p = self.d.ctl("cgroup", "mems", NAME, "1,,2")
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("(nodes.malformed)", p.stderr)
        p = self.d.ctl("cgroup", "mems", NAME, want, user="nobody")
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("(auth.forbidden)", p.stderr)
        self.assertEqual(self.d.db_snapshot(), db)

    def test_bad_input_changes_nothing(self):
        self.assertEqual(self.put(NAME, {"mems": str(self.nodes[0])}).status, 200)
        before_file, db = real_file(os.path.join(self.dir, MEMS)), self.d.db_snapshot()
        missing = max(self.nodes) + 1
        cases = [
            ({"mems": "0-"}, 400, "nodes.malformed"),
            ({"mems": "3-1"}, 400, "nodes.malformed"),
            ({"mems": "1,,2"}, 400, "nodes.malformed"),
            ({"mems": "99999999999999999999"}, 400, "nodes.malformed"),
            ({"mems": "4096"}, 400, "nodes.malformed"),
            ({"mems": " 0"}, 400, "nodes.malformed"),
            ({"mems": "0\n"}, 400, "nodes.malformed"),
            ({"mems": "-1"}, 400, "nodes.malformed"),
            ({"mems": "0\u0000"}, 400, "request.malformed_json"),   # jansson refuses \u0000
            ({"mems": str(missing)}, 422, "nodes.not_in_topology"),
            ({"mems": 0}, 400, "request.wrong_type"),
            ({"mems": ["0"]}, 400, "request.wrong_type"),
            ({}, 400, "request.missing_field"),
            ({"mems": "0", "cpus": "0"}, 400, "request.unknown_field"),
        ]
        for body, status, code in cases:
            with self.subTest(body=body):
                r = self.put(NAME, body)
                self.assertProblem(r, status, code)
        self.assertEqual(real_file(os.path.join(self.dir, MEMS)), before_file)
        self.assertEqual(self.d.db_snapshot(), db)

    def test_path_escapes_are_refused(self):
        db = self.d.db_snapshot()
        for path, status, code in (
                ("/v1/cgroups/%s/../%s" % (NAME, NAME), 400, "cgroup.bad_path"),
                ("/v1/cgroups/..", 400, "cgroup.bad_path"),
                ("/v1/cgroups/../../etc", 400, "cgroup.bad_path"),
                ("/v1/cgroups/%s/./" % NAME, 400, "cgroup.bad_path"),
                ("/v1/cgroups//etc", 400, "cgroup.bad_path"),
                ("/v1/cgroups/%s//x" % NAME, 400, "cgroup.bad_path"),
                ("/v1/cgroups/%s/" % NAME, 400, "cgroup.bad_path"),
                ("/v1/cgroups/.%s" % NAME, 400, "cgroup.bad_path"),
                ("/v1/cgroups/%s/%s" % (NAME, MEMS), 400, "cgroup.bad_path"),   # a file, not a cgroup
                ("/v1/cgroups/%s%%2F..%%2F.." % NAME, 400, "request.bad_path"),
                ("/v1/cgroups/%s%%00x" % NAME, 400, "request.bad_path"),
                ("/v1/cgroups/no-such-cgroup-mpd", 404, "cgroup.not_found")):
            for method, body in (("GET", None), ("PUT", {"mems": str(self.nodes[0])})):
                with self.subTest(method=method, path=path):
                    r = self.d.request(method, path, body=body)
                    self.assertProblem(r, status, code)
        r = self.d.request("PUT", "/v1/cgroups", body={"mems": "0"})
        self.assertProblem(r, 409, "cgroup.root")
        self.assertEqual(self.d.db_snapshot(), db)

    def test_a_refusal_of_the_kernel_is_recorded(self):
        """v1: a child's mems outside the new value is EBUSY (cpuset1_validate_change); v2 takes
        it (the child's effective set follows). Either way the outcome is in history."""
        sub = os.path.join(self.dir, "sub")
        self.assertEqual(self.put(NAME, {"mems": str(self.nodes[0])}).status, 200)
        os.mkdir(sub)
        self.addCleanup(os.rmdir, sub)
        self.assertEqual(self.put(NAME + "/sub", {"mems": str(self.nodes[0])}).status, 200)
        r = self.put(NAME, {"mems": ""})
        op = self.d.get("/v1/history?kind=cgroup.mems&limit=1").json["operations"][0]
        if VERSION == 1:
            self.assertProblem(r, 409, "cgroup.kernel_refused")
            self.assertEqual(r.json["operation_id"], op["id"])
            self.assertEqual((op["status"], op["errno"]), ("failed", 16))
            self.assertEqual(real_file(os.path.join(self.dir, MEMS)), str(self.nodes[0]))
        else:
            self.assertEqual(r.status, 200, r.raw)
            self.assertEqual(op["status"], "ok")


def v2_tree(root):
    """A 4-node tree with a cgroup v2 hierarchy: a (cpuset, mems ""), a/narrow (effective 0-1),
    a/narrow/leaf, nocpuset (its parent does not enable cpuset), and symlinks out."""
    t = FakeTree(root, nodes=4)
    cg = "sys/fs/cgroup/"
    t.write(cg + "cgroup.controllers", "cpuset cpu io memory pids\n")
    t.write(cg + "cgroup.subtree_control", "cpuset memory\n")
    t.write(cg + "cpuset.mems.effective", "0-3\n")
    t.write(cg + "cgroup.procs", "1\n2\n")
    for d, eff in (("a", "0-3"), ("a/narrow", "0-1"), ("a/narrow/leaf", "0-1")):
        t.write(cg + d + "/cpuset.mems", "\n")
        t.write(cg + d + "/cpuset.mems.effective", eff + "\n")
        t.write(cg + d + "/cgroup.procs", "")
    t.write(cg + "nocpuset/cgroup.procs", "")
    os.symlink("/etc", t.path(cg + "evil"))
    os.symlink("../../../../../..", t.path(cg + "a/up"))
    os.symlink("narrow", t.path(cg + "a/alias"))   # even one that stays inside is not followed
    return t


class CgroupMemsGeneratedV2(DaemonTest):
    tree_factory = staticmethod(v2_tree)

    def test_v2_is_detected_and_read(self):
        r = self.d.get("/v1/cgroups/a/narrow").json
        self.assertEqual((r["version"], r["mount"], r["mems"], r["mems_effective"]), (2, "fs/cgroup", "", "0-1"))
        self.assertEqual(r["children"], ["leaf"])
        self.assertIsNone(r["memory_migrate"])
        self.assertEqual(sorted(self.d.get("/v1/cgroups/a").json["children"]), ["narrow"])   # no symlinks
        self.assertEqual(self.d.get("/v1/cgroups").json["procs"], 2)

    def test_parent_effective_mems_bound_the_child(self):
        snap, db = self.tree.snapshot(), self.d.db_snapshot()
        r = self.d.request("PUT", "/v1/cgroups/a/narrow/leaf", body={"mems": "1-2"})
        self.assertProblem(r, 422, "cgroup.bad_nodes")
        self.assertIn("node 2", r.json["detail"])
        r = self.d.request("PUT", "/v1/cgroups/a/narrow/leaf", body={"mems": "4"})
        self.assertProblem(r, 422, "nodes.not_in_topology")
        self.assertEqual(self.tree.snapshot(), snap)
        self.assertEqual(self.d.db_snapshot(), db)
        r = self.d.request("PUT", "/v1/cgroups/a/narrow/leaf", body={"mems": "1"})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.tree.read("sys/fs/cgroup/a/narrow/leaf/cpuset.mems").strip(), "1")
        r = self.d.request("PUT", "/v1/cgroups/a", body={"mems": ""})   # v2: empty = inherit
        self.assertEqual(r.status, 200, r.raw)

    def test_symlinks_are_never_followed(self):
        snap, db = self.tree.snapshot(), self.d.db_snapshot()
        for path in ("evil", "evil/ssh", "a/up", "a/up/etc", "a/alias", "a/alias/leaf"):
            for method, body in (("GET", None), ("PUT", {"mems": "0"})):
                with self.subTest(method=method, path=path):
                    r = self.d.request(method, "/v1/cgroups/" + path, body=body)
                    self.assertProblem(r, 400, "cgroup.bad_path")
        self.assertEqual(self.tree.snapshot(), snap)
        self.assertEqual(self.d.db_snapshot(), db)

    def test_a_cgroup_without_cpuset(self):
        self.assertEqual(self.d.get("/v1/cgroups/nocpuset").json["cpuset"], False)
        r = self.d.request("PUT", "/v1/cgroups/nocpuset", body={"mems": "0"})
        self.assertProblem(r, 409, "cgroup.unavailable")


class CgroupAnswersMatchSpec(SpecDaemonTest):
    tree_factory = staticmethod(v2_tree)

    def test_answers(self):
        # single-segment paths: the spec's {path} template is matched per segment here
        self.call("GET", "/v1/cgroups")
        self.call("GET", "/v1/cgroups/a")
        self.call("PUT", "/v1/cgroups/a", {"mems": "0-1"})
        self.call("PUT", "/v1/cgroups/a", {"mems": "4"}, status=422)
        self.call("PUT", "/v1/cgroups/a", {"mems": "0-"}, status=400)
        self.call("PUT", "/v1/cgroups", {"mems": "0"}, status=409)
        self.call("PUT", "/v1/cgroups/nocpuset", {"mems": "0"}, status=409)
        self.call("GET", "/v1/cgroups/nothere", status=404)
        self.call("GET", "/v1/cgroups/evil", status=400)


class NoCpuset(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2))

    def test_unavailable(self):
        for method, path, body in (("GET", "/v1/cgroups", None), ("GET", "/v1/cgroups/a", None),
                                   ("PUT", "/v1/cgroups/a", {"mems": "0"})):
            with self.subTest(method=method, path=path):
                self.assertProblem(self.d.request(method, path, body=body), 409, "cgroup.unavailable")


if __name__ == "__main__":
    unittest.main()
