"""Who may change things: root, and members of --admin-group (primary or supplementary group);
everyone else may read. Users and a group are created for the test and removed afterwards."""
import json
import os
import pwd
import sys
import shutil
import subprocess
import tempfile
import unittest

from faketree import FakeTree
from lib import USER_CWD, Daemon, shared_copy
from test_openapi import load_routes

GROUP = "mpdtest-admins"
MEMBER = "mpdtest-member"      # in GROUP as a supplementary group
PRIMARY = "mpdtest-primary"    # GROUP is its primary group
OUTSIDER = "mpdtest-outsider"  # in no admin group


def run(*cmd):
    subprocess.run(cmd, check=True, capture_output=True)


# Sends each [method, path, body] of a JSON list read from stdin over the socket in argv[1] and
# prints [[status, code], ...]: run as another user, so the daemon sees that user's credentials.
# lib.py is importable from argv[2] (a copy the user may read: lib.shared_copy).
AS_USER = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from lib import UnixHTTPConnection
out = []
for method, path, body in json.load(sys.stdin):
    c = UnixHTTPConnection(sys.argv[1])
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={} if body is None else {"Content-Type": "application/json"})
    r = c.getresponse(); raw = r.read()
    out.append([r.status, json.loads(raw).get("code") if r.status >= 400 else None])
    c.close()
print(json.dumps(out))
"""


def route_requests():
    """One request per route of routes.c, with ids no test made (a change let through would
    still touch nothing that exists) and "{}" bodies (invalid, refused after the auth check)."""
    fill = {"/v1/knobs/{}": "thp.enabled", "/v1/hugepages/{}": "2M", "/v1/hugepages/{}/availability": "2M"}
    reqs = []
    for method, pattern, _, flags in load_routes():
        path = pattern.replace("{}", fill.get(pattern, "999999"))
        if pattern.endswith("availability"):
            path += "?count=1"
        if pattern == "/v1/history/compare":
            path += "?ids=999998,999999"
        reqs.append((method, path, {} if "R_BODY" in flags else None, "R_ADMIN" in flags))
    return reqs


class AdminGroup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for u in (MEMBER, PRIMARY, OUTSIDER):
            subprocess.run(["userdel", u], capture_output=True)
        subprocess.run(["groupdel", GROUP], capture_output=True)
        run("groupadd", GROUP)
        run("useradd", "-M", "-N", "-g", "nogroup", "-G", GROUP, MEMBER)
        run("useradd", "-M", "-N", "-g", GROUP, PRIMARY)
        run("useradd", "-M", "-N", "-g", "nogroup", OUTSIDER)
        cls.tmp = tempfile.mkdtemp(prefix="mpd-auth-")
        os.chmod(cls.tmp, 0o755)
        cls.tree = FakeTree(cls.tmp, nodes=2)
        cls.d = Daemon(cls.tree, ["--admin-group", GROUP]).start()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.d.cleanup()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            for u in (MEMBER, PRIMARY, OUTSIDER):
                subprocess.run(["userdel", u], capture_output=True)
            subprocess.run(["groupdel", GROUP], capture_output=True)
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, cls.d.last_log))

    def test_supplementary_and_primary_members_may_change(self):
        for user, value in ((MEMBER, "never"), (PRIMARY, "always")):
            with self.subTest(user=user):
                p = self.d.ctl("--json", "knob", "set", "thp.enabled=" + value, user=user)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("[%s]" % value, self.tree.read("sys/kernel/mm/transparent_hugepage/enabled"))
                op = self.d.get("/v1/history?limit=1").json["operations"][0]
                self.assertEqual(op["actor"], {"uid": pwd.getpwnam(user).pw_uid, "name": user})

    def test_outsider_may_read_but_not_change(self):
        tree, db = self.tree.snapshot(), self.d.db_snapshot()
        p = self.d.ctl("knob", "get", "thp.enabled", user=OUTSIDER)
        self.assertEqual(p.returncode, 0, p.stderr)
        for args in (["knob", "set", "thp.enabled=never"], ["pool", "resize", "2M", "--total", "1", "--no-wait"],
                     ["schedule", "add", "--cron", "0 2 * * *", "--size", "2M", "--total", "1"]):
            with self.subTest(args=args):
                p = self.d.ctl(*args, user=OUTSIDER)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn("(auth.forbidden)", p.stderr)
                self.assertEqual(p.stdout, "")
        self.assertEqual(self.tree.snapshot(), tree)
        self.assertEqual(self.d.db_snapshot(), db)

    def as_user(self, user, reqs):
        gid = str(pwd.getpwnam(user).pw_gid)
        p = subprocess.run(["setpriv", "--reuid", user, "--regid", gid, "--init-groups", "--",
                            sys.executable, "-c", AS_USER, self.d.socket, os.path.dirname(shared_copy("lib.py"))],
                           input=json.dumps([r[:3] for r in reqs]), capture_output=True, text=True, timeout=60,
                           cwd=USER_CWD)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_every_route_as_outsider_and_as_member(self):
        """Derived from routes.c: every R_ADMIN route answers an outsider 403 auth.forbidden and
        every other route serves it; a member passes the check on all of them."""
        reqs = route_requests()
        self.assertGreaterEqual(len([r for r in reqs if r[3]]), 6)   # the table was read
        tree, db = self.tree.snapshot(), self.d.db_snapshot()
        for (method, path, body, admin), (status, code) in zip(reqs, self.as_user(OUTSIDER, reqs)):
            with self.subTest(user=OUTSIDER, method=method, path=path):
                if admin:
                    self.assertEqual((status, code), (403, "auth.forbidden"))
                elif body is not None:
                    # Open to every caller (POST /v1/processes runs the program as the caller):
                    # past the auth check, the "{}" body itself is refused.
                    self.assertEqual(status, 400, code)
                    self.assertNotEqual(code, "auth.forbidden")
                else:
                    # 409: a resource the generated host lacks (cgroup.unavailable: no cpuset)
                    self.assertIn(status, (200, 404, 409), code)
        self.assertEqual(self.tree.snapshot(), tree)
        self.assertEqual(self.d.db_snapshot(), db)
        for (method, path, _, admin), (status, code) in zip(reqs, self.as_user(MEMBER, reqs)):
            with self.subTest(user=MEMBER, method=method, path=path):
                if path.startswith("/v1/tokens"):
                    # past the admin check, tokens are root's alone (api/tokens.c)
                    self.assertEqual((status, code), (403, "token.root_only"))
                    continue
                self.assertNotEqual(status, 403, code)
                self.assertLess(status, 500, code)

    def test_unknown_admin_group_refuses_to_start(self):
        d = Daemon(self.tree, ["--admin-group", "no-such-group-mpd"])
        try:
            p = subprocess.run(d.command(), capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2)
            self.assertIn("no such group 'no-such-group-mpd'", p.stderr)
            self.assertFalse(os.path.exists(d.socket))
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
