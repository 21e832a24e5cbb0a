"""The profile at start (docs/reference/profiles.md, At start): READY=1 (sd_notify, read from a
datagram socket as systemd would) comes only once the configured profile is applied, so a unit
ordered before it (the kubelet: packaging/mempolicyd.service has Before=kubelet.service) finds the
knobs and pools made: at the moment READY=1 arrives the tree already holds the profile's values and
GET /v1/profile says applied, and STATUS= says so. An invalid profile at start applies nothing, is
not fatal (READY=1 all the same) and is in the state with its file:line:column. On main READY=1 is
sent with nothing applied."""
import os
import shutil
import unittest

from faketree import FakeTree
from lib import Daemon
from test_profile_reload import profiles_top, wait_for
from test_systemd import Notify

THP = "sys/kernel/mm/transparent_hugepage/"
HP0 = "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"
DB = "[knobs]\nthp.enabled = never\nthp.defrag = defer\n[hugepages.2M]\nnode0 = 6\n"


class StartApply(unittest.TestCase):
    def setUp(self):
        self.top, self.pdir = profiles_top("mpd-boot-")
        self.tree = FakeTree(os.path.join(self.top, "tree"), nodes=2)
        self.notify = Notify(os.path.join(self.top, "notify"))
        os.chmod(self.notify.path, 0o777)   # the serving side is not root
        self.d = None

    def tearDown(self):
        if self.d:
            self.d.cleanup()
        self.notify.close()
        shutil.rmtree(self.top, ignore_errors=True)

    def put(self, name, text):
        with open(os.path.join(self.pdir, name), "w") as f:
            f.write(text)

    def start(self, profile):
        self.d = Daemon(self.tree, args=("--profiles-dir", self.pdir, "--profile", profile))
        self.d.env = {"NOTIFY_SOCKET": self.notify.path}
        self.d.start(timeout=30)

    def test_ready_only_once_the_profile_is_applied(self):
        self.put("db.conf", DB)
        self.assertEqual(self.tree.read(THP + "enabled"), "always [madvise] never")
        self.start("db")
        ready = self.notify.wait_for("READY=1")
        # Read at once: READY=1 was sent after the apply's last write.
        self.assertEqual(self.tree.read(THP + "enabled"), "always madvise [never]")
        self.assertEqual(self.tree.read(THP + "defrag"), "always [defer] defer+madvise madvise never")
        self.assertEqual(self.tree.read(HP0), "6")
        self.assertIn("STATUS=serving on", ready)
        self.assertTrue(any("profile db applied" in m for m in self.notify.msgs), self.notify.msgs)
        p = self.d.get("/v1/profile").json
        self.assertEqual((p["name"], p["state"]), ("db", "applied"), p)
        # The state is installed by the job before the runner records its end: the row follows.
        wait_for(lambda: self.d.sql("SELECT source, status FROM jobs WHERE kind = 'profile.apply'")
                 == [("start", "ok")], "the start-time job recorded ok", self.d)

    def test_an_invalid_profile_at_start_applies_nothing_and_is_not_fatal(self):
        self.put("db.conf", "[knobs]\nthp.enabled = never\nthp.defrag = sometimes\n")
        self.start("db")
        self.notify.wait_for("READY=1")
        self.assertEqual(self.tree.read(THP + "enabled"), "always [madvise] never")
        p = self.d.get("/v1/profile").json
        self.assertEqual((p["error"]["code"], p["error"]["file"], p["error"]["line"], p["error"]["column"]),
                         ("profile.bad_value", "db.conf", 3, 1), p)
        self.assertTrue(any("profile db not applied: db.conf:3:1: " in m for m in self.notify.msgs), self.notify.msgs)
        self.assertEqual(self.d.sql("SELECT count(*) FROM jobs WHERE kind = 'profile.apply'"), [(0,)])


if __name__ == "__main__":
    unittest.main()
