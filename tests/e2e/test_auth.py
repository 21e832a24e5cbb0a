"""Who may change things: root, and members of --admin-group (primary or supplementary group);
everyone else may read. Users and a group are created for the test and removed afterwards."""
import os
import pwd
import shutil
import subprocess
import tempfile
import unittest

from faketree import FakeTree
from lib import Daemon

GROUP = "mpdtest-admins"
MEMBER = "mpdtest-member"      # in GROUP as a supplementary group
PRIMARY = "mpdtest-primary"    # GROUP is its primary group
OUTSIDER = "mpdtest-outsider"  # in no admin group


def run(*cmd):
    subprocess.run(cmd, check=True, capture_output=True)


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
