"""The profiles directory's reload (docs/reference/profiles.md, Reload): a daemon on a generated tree
whose --profiles-dir is a Kubernetes ConfigMap volume, swapped by tests/e2e/kubelet.py with the
kubelet's exact system calls (in both of its orders). Each swap is one reload (the log's reload lines
and the profile.apply jobs counted; a later swap is the fence: inotify events are read in order, so
every event of a swap is handled before the next one's rename), and a valid set is applied (the
tree's knob changes); a broken set is refused whole with its file:line:column in GET /v1/profile and
in the log while the profile in force stays (the tree unchanged); a plain directory reloads when a
file is written. On main nothing watches the directory: no reload line, the tree never changes."""
import os
import re
import shutil
import tempfile
import time
import unittest

import kubelet
from faketree import FakeTree
from lib import Daemon

THP = "sys/kernel/mm/transparent_hugepage/"
RELOAD = re.compile(r"profiles reload of swap (\.\.\S+): ")
BASE = "[knobs]\nthp.enabled = %s\n"
DB = "[profile]\ninclude = base\n[knobs]\nthp.defrag = %s\n"
# line 3, column 1 (the key): "sometimes" is not among thp.enabled's values
BROKEN = "# broken on purpose\n[knobs]\nthp.enabled = sometimes\n"


def wait_for(cond, what, d=None, timeout=20):
    """cond()'s first true value, polled; on a timeout (or the daemon d exiting) the daemon's log."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("%s within %ds:\n%s" % (what, timeout, d.log_text() if d else ""))
        if d and d.proc and d.proc.poll() is not None:
            raise AssertionError("the daemon exited with %d:\n%s" % (d.proc.returncode, d.log_text()))
        time.sleep(0.02)


def profiles_top(prefix):
    """A temporary directory with an empty profiles.d, both readable by the daemon's unprivileged
    user: (top, profiles.d)."""
    top = tempfile.mkdtemp(prefix=prefix)
    os.chmod(top, 0o755)
    pdir = os.path.join(top, "profiles.d")
    os.mkdir(pdir)
    os.chmod(pdir, 0o755)
    return top, pdir


class Reload(unittest.TestCase):
    order = kubelet.LINKS_AFTER

    def setUp(self):
        self.top, self.pdir = profiles_top("mpd-reload-")
        self.tree = FakeTree(os.path.join(self.top, "tree"), nodes=2)
        self.d = None

    def tearDown(self):
        if self.d:
            self.d.cleanup()
        shutil.rmtree(self.top, ignore_errors=True)

    def log_all(self):
        with open(self.d.log) as f:
            return f.read()

    def reloads(self):
        return RELOAD.findall(self.log_all())

    def swap(self, files):
        """One kubelet write; returns once the daemon has logged its reload of that swap."""
        ts = kubelet.write(self.pdir, files, self.order)
        wait_for(lambda: ts in self.reloads(), "no reload of swap " + ts, self.d)
        return ts

    def profile(self):
        r = self.d.get("/v1/profile")
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def applied_jobs(self):
        return self.d.sql("SELECT id, source, status FROM jobs WHERE kind = 'profile.apply' ORDER BY id")

    def test_swaps_reload_once_each_and_a_broken_set_leaves_the_old_one_in_force(self):
        kubelet.write(self.pdir, {"base.conf": BASE % "never", "db.conf": DB % "defer"}, self.order)
        self.d = Daemon(self.tree, args=("--profiles-dir", self.pdir, "--profile", "db")).start()
        wait_for(lambda: self.profile()["state"] == "applied", "the start-time apply", self.d)
        self.assertEqual(self.tree.read(THP + "enabled"), "always madvise [never]")
        self.assertEqual(self.reloads(), [], "the swap in place at start is no change")

        # A valid swap, with a profile added (whose link the kubelet makes after the rename, or
        # before it in the older order): the whole set is read from the new ..TIMESTAMP.
        s1 = self.swap({"base.conf": BASE % "madvise", "db.conf": DB % "madvise", "extra.conf": BASE % "always"})
        wait_for(lambda: self.tree.read(THP + "enabled") == "always [madvise] never", "the reload's apply", self.d)
        wait_for(lambda: self.profile()["state"] == "applied" and not self.profile()["applying_job"],
                 "the reload's apply to end", self.d)
        self.assertIn("profiles reload of swap %s: 3 profile(s), all valid; activating db" % s1, self.log_all())
        # The API reads the same set: ..data's files, not a stray file beside them.
        with open(os.path.join(self.pdir, "stray.conf"), "w") as f:
            f.write(BASE % "always")
        listed = self.d.get("/v1/profiles").json["profiles"]
        self.assertEqual([p["name"] for p in listed], ["base", "db", "extra"], listed)
        os.unlink(os.path.join(self.pdir, "stray.conf"))

        # A broken base: nothing applied, the profile in force stays, the error has its place.
        s2 = self.swap({"base.conf": BROKEN, "db.conf": DB % "never", "extra.conf": BASE % "always"})
        p = self.profile()
        self.assertEqual(p["name"], "db")
        self.assertEqual(p["state"], "degraded", p)        # its files no longer validate
        self.assertIn("invalid_profile", p["reasons"])
        self.assertEqual((p["error"]["code"], p["error"]["file"], p["error"]["line"], p["error"]["column"]),
                         ("profile.bad_value", "base.conf", 3, 1), p["error"])
        self.assertTrue(p["error"]["detail"].startswith("base.conf:3:1: "), p["error"])
        self.assertRegex(self.log_all(), r"profiles reload of swap %s: base: base\.conf:3:1: .*nothing activated, "
                         r"the profile in force \(db\) stays" % re.escape(s2))
        self.assertEqual(self.tree.read(THP + "enabled"), "always [madvise] never")
        self.assertEqual(self.tree.read(THP + "defrag"), "always defer defer+madvise [madvise] never")

        # Valid again: applied. This swap is also the fence for the two before it.
        s3 = self.swap({"base.conf": BASE % "never", "db.conf": DB % "defer"})
        wait_for(lambda: self.tree.read(THP + "enabled") == "always madvise [never]", "the third swap's apply", self.d)
        self.assertEqual(self.reloads(), [s1, s2, s3], "one reload per swap")
        jobs = self.applied_jobs()
        self.assertEqual([j[1] for j in jobs], ["start", "reload", "reload"], jobs)

    def test_plain_directory_reloads_when_a_file_is_written(self):
        with open(os.path.join(self.pdir, "db.conf"), "w") as f:
            f.write(BASE % "never")
        self.d = Daemon(self.tree, args=("--profiles-dir", self.pdir, "--profile", "db")).start()
        wait_for(lambda: self.profile()["state"] == "applied", "the start-time apply", self.d)
        tmp = os.path.join(self.pdir, ".db.conf.swp")
        with open(tmp, "w") as f:
            f.write(BASE % "madvise")
        os.rename(tmp, os.path.join(self.pdir, "db.conf"))
        wait_for(lambda: self.tree.read(THP + "enabled") == "always [madvise] never", "the reload's apply", self.d)
        self.assertIn("profiles reload: 1 profile(s), all valid; activating db", self.log_all())


class ReloadLinksBeforeSwap(Reload):
    """The older order (kubernetes commit 19e8ce7): a new NAME.conf link exists before its target."""
    order = kubelet.LINKS_BEFORE
    test_plain_directory_reloads_when_a_file_is_written = None   # no kubelet in it: run once, above


if __name__ == "__main__":
    unittest.main()
