"""The node labels file (--node-labels-file, docs/reference/fleet.md): a Node Feature Discovery local
feature file. Read here with NFD's own grammar (source/local/local.go of node-feature-discovery:
lines trimmed, '# +expiry-time=' in Go's time.RFC3339 applies to the lines after it and drops them
once passed, '#' lines are comments, the rest NAME[=VALUE] split at the first '='; files over
65536 bytes and dot files are skipped) and the Kubernetes label syntax the API server holds labels
to. Against the real kernel (read only) and a generated tree (what is changed, hostile values)."""
import datetime
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import unittest

from faketree import FakeTree
from lib import Daemon, DaemonTest

NS = 1000000000
PREFIX = "mempolicyd.io/"
PART = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
EXPIRY_S, REFRESH_S = 300, 120   # server/ops/labels.h
NFD_MAX = 65536                  # source/local/local.go: MaxFeatureFileSize


def nfd_parse(text, now):
    """(labels, expiry) as NFD's local source reads text at time now (an aware datetime), with the
    Kubernetes label checks the API server applies on top; raises on anything either refuses."""
    expiry = now   # NFD: ExpiryTime starts at now, and a line is dropped when it is Before(now)
    labels, seen_expiry = {}, None
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith("# +"):
                key, _, value = line[3:].partition("=")
                if key != "expiry-time":
                    raise AssertionError("a directive NFD does not know: %r" % line)
                # Go's time.RFC3339 as the daemon writes it: whole seconds, UTC ("Z").
                expiry = datetime.datetime.strptime(value.strip(), "%Y-%m-%dT%H:%M:%SZ").replace(
                    tzinfo=datetime.timezone.utc)
                seen_expiry = expiry
            continue
        if expiry < now:
            continue
        name, eq, value = line.partition("=")
        if not eq:
            value = "true"
        if not name.startswith(PREFIX) or not PART.match(name[len(PREFIX):]):
            raise AssertionError("not a Kubernetes label name in the daemon's namespace: %r" % line)
        if value and not PART.match(value):
            raise AssertionError("not a Kubernetes label value: %r" % line)
        if name in labels:
            raise AssertionError("label %s twice" % name)
        labels[name[len(PREFIX):]] = value
    return labels, seen_expiry


def utc(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


def read_labels(path, now=None):
    with open(path) as f:
        text = f.read()
    assert len(text.encode()) < NFD_MAX, "%d bytes: NFD skips the file" % len(text.encode())
    return nfd_parse(text, utc(now if now is not None else time.time()))


def wait_labels(path, cond, timeout=20):
    """The labels once cond(labels) holds (the daemon rewrites after a change)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if os.path.exists(path):
            last = read_labels(path)[0]
            if cond(last):
                return last
        time.sleep(0.02)
    raise AssertionError("the labels file did not change as expected within %d s; last: %s" % (timeout, last))


def bracketed(path):
    with open(path) as f:
        return re.search(r"\[([^\]]+)\]", f.read()).group(1)


def size_label(kb):
    return "%dG" % (kb // 1048576) if kb % 1048576 == 0 else "%dM" % (kb // 1024) if kb % 1024 == 0 else "%dK" % kb


class LabelsDir:
    """A features.d directory of the test's own."""

    @classmethod
    def make_dir(cls):
        cls.features = tempfile.mkdtemp(prefix="mpd-features-")
        os.chmod(cls.features, 0o755)
        cls.path = os.path.join(cls.features, "mempolicyd")


class LabelsDaemonTest(DaemonTest, LabelsDir):
    """One daemon for the class, writing the labels file into its own directory."""

    @classmethod
    def setUpClass(cls):
        cls.make_dir()
        cls.addClassCleanup(shutil.rmtree, cls.features, True)
        cls.daemon_args = ("--node-labels-file", cls.path)
        super().setUpClass()


class RealKernelLabelsTest(LabelsDaemonTest):
    """The real kernel, read only: the labels say what /sys says."""

    def test_labels_are_the_kernels_state_and_expire_ahead(self):
        labels = wait_labels(self.path, lambda l: "madv-collapse" in l)
        _, expiry = read_labels(self.path)
        now = time.time()
        self.assertIsNotNone(expiry, "no # +expiry-time directive")
        self.assertGreater(expiry.timestamp(), now, "the expiry is not in the future")
        self.assertLessEqual(expiry.timestamp(), now + EXPIRY_S + 1)
        thp = "/sys/kernel/mm/transparent_hugepage/"
        if os.path.exists(thp + "enabled"):
            self.assertEqual(labels["thp-enabled"], bracketed(thp + "enabled"))
            self.assertEqual(labels["thp-defrag"], bracketed(thp + "defrag").replace("+", "_"))
        for d in sorted(os.listdir("/sys/kernel/mm/hugepages")):
            kb = int(re.match(r"hugepages-(\d+)kB", d).group(1))
            with open("/sys/kernel/mm/hugepages/%s/nr_hugepages" % d) as f:
                self.assertEqual(labels["hugepages-" + size_label(kb)], f.read().strip())
            for node in sorted(os.listdir("/sys/devices/system/node")):
                per = "/sys/devices/system/node/%s/hugepages/%s/nr_hugepages" % (node, d)
                if re.match(r"node\d+$", node) and os.path.exists(per):
                    with open(per) as f:
                        self.assertEqual(labels["hugepages-%s-%s" % (size_label(kb), node)], f.read().strip())
        self.assertEqual(labels["mpol-weighted-interleave"],
                         "true" if os.path.exists("/sys/kernel/mm/mempolicy/weighted_interleave") else "false")
        for k in ("mpol-preferred-many", "madv-collapse"):
            self.assertIn(labels[k], ("true", "false"))
        # No free-page count: the labels hold only what changes when someone changes it.
        self.assertFalse([k for k in labels if "free" in k], labels)
        # Written through a dot file that was renamed: nothing but the file is left in the directory.
        self.assertEqual(os.listdir(self.features), ["mempolicyd"])
        st = os.stat(self.path)
        self.assertEqual(st.st_mode & 0o777, 0o644)
        self.assertEqual(st.st_uid, 0)   # the privileged side wrote it, in a directory only root may write


class FakeTreeLabelsTest(LabelsDaemonTest):
    """A generated 4-node tree: what is changed through the API shows in the labels, hostile kernel
    text makes no label and no line."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    def test_every_pool_per_size_and_node(self):
        labels = wait_labels(self.path, lambda l: "hugepages-1G-node0" in l)
        for kb in self.tree.hugetlb_kb:
            size = size_label(kb)
            total = self.tree.read("sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages" % kb)
            self.assertEqual(labels["hugepages-" + size], total)
            for n in range(self.tree.nodes):
                self.assertEqual(labels["hugepages-%s-node%d" % (size, n)], self.tree.read(
                    "sys/devices/system/node/node%d/hugepages/hugepages-%dkB/nr_hugepages" % (n, kb)))
        self.assertEqual(labels["mpol-weighted-interleave"], "true")

    def test_a_change_through_the_api_is_written_at_once(self):
        for value in ("always", "never", "madvise"):
            r = self.d.request("PUT", "/v1/knobs/thp.enabled", {"value": value})
            self.assertEqual(r.status, 200, r.raw)
            # Well within the 120 s refresh: the change itself made the daemon write.
            wait_labels(self.path, lambda l, v=value: l.get("thp-enabled") == v, timeout=10)

    def test_a_thp_word_with_a_plus_is_written_with_an_underscore(self):
        """defer+madvise (the defrag word of tuned's profiles and ours) is no label value as it
        stands ('+'); it is written defer_madvise rather than left out."""
        r = self.d.request("PUT", "/v1/knobs/thp.defrag", {"value": "defer+madvise"})
        self.assertEqual(r.status, 200, r.raw)
        labels = wait_labels(self.path, lambda l: l.get("thp-defrag") == "defer_madvise", timeout=10)
        self.assertEqual(labels["thp-defrag"], "defer_madvise")

    def test_hostile_kernel_text_makes_no_label_and_no_line(self):
        """A kernel's value is the kernel's text, not ours to trust: one that is no label value
        (here with '/', '=' and a newline the knob parser could pass on) is left out, and the
        file stays lines NFD and Kubernetes take."""
        rel = "sys/kernel/mm/transparent_hugepage/shmem_enabled"
        before = self.tree.read(rel)
        try:
            self.tree.write(rel, "always [in/jected=1] never")
            self.d.request("PUT", "/v1/knobs/thp.defrag", {"value": "never"})
            labels = wait_labels(self.path, lambda l: l.get("thp-defrag") == "never")
            self.assertNotIn("thp-shmem-enabled", labels)
            with open(self.path) as f:
                self.assertNotIn("jected", f.read())
        finally:
            self.tree.write(rel, before)


class ProfileStateLabelsTest(LabelsDaemonTest):
    """The profile in force and its state: the configured profile is applied at start (before
    READY=1), so the first file already says profile-state=applied; a foreign write under
    `report` makes it degraded, written at the drift (not at the next refresh); an apply makes it
    applied again."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=2))

    @classmethod
    def setUpClass(cls):
        cls.pdir = tempfile.mkdtemp(prefix="mpd-prof-")
        os.chmod(cls.pdir, 0o755)
        cls.addClassCleanup(shutil.rmtree, cls.pdir, True)
        with open(os.path.join(cls.pdir, "web.conf"), "w") as f:
            f.write("[profile]\non-drift = report\n[knobs]\nthp.defrag = never\n")
        cls.make_dir()
        cls.addClassCleanup(shutil.rmtree, cls.features, True)
        cls.daemon_args = ("--node-labels-file", cls.path, "--profiles-dir", cls.pdir, "--profile", "web")
        super(LabelsDaemonTest, cls).setUpClass()

    def test_profile_and_its_state(self):
        labels = wait_labels(self.path, lambda l: l.get("profile-state") == "applied")
        self.assertEqual((labels["profile"], labels["thp-defrag"]), ("web", "never"))
        # A foreign write: under report the value stays, the state is degraded, and the labels say
        # so well within the 120 s refresh (the drift itself made the daemon write).
        self.tree.write("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never")
        labels = wait_labels(self.path, lambda l: l.get("profile-state") == "degraded", timeout=20)
        self.assertEqual(labels["thp-defrag"], "madvise")
        p = self.d.ctl("profile", "apply", "web")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        labels = wait_labels(self.path, lambda l: l.get("profile-state") == "applied", timeout=10)
        self.assertEqual((labels["profile"], labels["thp-defrag"]), ("web", "never"))


class LabelsClockTest(unittest.TestCase, LabelsDir):
    """On the test clock: the expiry is EXPIRY_S past the daemon's clock, the file is written again
    once REFRESH_S have passed (before it lapses), and once the daemon is stopped nothing writes it
    again, so NFD drops its labels at the expiry. The clock is what makes the daemon rewrite the
    file here, not a knob: a generated tree's files are rewritten in place, so a knob changed in
    it can read as absent for a moment, which the real kernel's files never do."""
    T0 = 1800000000   # 2027-01-15T08:00:00Z

    def setUp(self):
        self.make_dir()
        self.tmp = tempfile.mkdtemp(prefix="mpd-tree-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=2)
        self.d = Daemon(self.tree, ["--node-labels-file", self.path], clock_ns=self.T0 * NS)

    def tearDown(self):
        try:
            self.d.cleanup()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            shutil.rmtree(self.features, ignore_errors=True)

    def expiry(self):
        with open(self.path) as f:
            return nfd_parse(f.read(), utc(self.T0))[1].timestamp()

    def test_refreshed_before_it_lapses_and_lapses_once_stopped(self):
        self.d.start()
        wait_labels(self.path, lambda l: "madv-collapse" in l and "hugepages-2M" in l)
        self.assertEqual(self.expiry(), self.T0 + EXPIRY_S)
        # Not yet due: a clock moved by less than REFRESH_S leaves the file as it is.
        ino = os.stat(self.path).st_ino
        # Due: REFRESH_S later the daemon writes it again, the expiry EXPIRY_S past the new time,
        # while the old one has not passed yet.
        t1 = self.T0 + REFRESH_S + 10
        self.d.write_clock(t1 * NS)
        self.d.proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 20
        while self.expiry() != t1 + EXPIRY_S:
            self.assertLess(time.monotonic(), deadline, "not written again at %d: expiry %d" % (t1, self.expiry()))
            time.sleep(0.02)
        self.assertNotEqual(os.stat(self.path).st_ino, ino)
        self.assertGreater(self.T0 + EXPIRY_S, t1, "the refresh came after the old expiry")
        self.assertEqual(self.d.stop(), 0)
        # Stopped: the file stays with the last expiry, and NFD reading it after that time keeps
        # none of the labels; before it, all of them.
        with open(self.path) as f:
            text = f.read()
        self.assertTrue(nfd_parse(text, utc(t1 + EXPIRY_S - 1))[0])
        self.assertEqual(nfd_parse(text, utc(t1 + EXPIRY_S + 1))[0], {})

    def test_a_reader_never_sees_a_partial_file(self):
        """10,000 opens while another thread moves the clock past each refresh, each move making
        the daemon replace the file: every read is a whole file NFD parses, with the full label
        set and one of the expiries written."""
        self.d.start()
        want = set(wait_labels(self.path, lambda l: "hugepages-1G-node1" in l))
        stop = threading.Event()
        written = [self.T0 + EXPIRY_S]
        failed = []

        def move():
            try:
                move_on()
            except Exception as e:   # a partial file read here is a failure too, not a dead thread
                failed.append("the clock mover: %r" % e)

        def move_on():
            t = self.T0
            while not stop.is_set():
                t += REFRESH_S + 1
                self.d.write_clock(t * NS)
                self.d.proc.send_signal(signal.SIGUSR2)
                deadline = time.monotonic() + 20
                while not stop.is_set() and self.expiry() != t + EXPIRY_S:
                    if time.monotonic() > deadline:
                        failed.append("not written again at %d" % t)
                        return
                    time.sleep(0.001)
                written.append(t + EXPIRY_S)

        mover = threading.Thread(target=move)
        mover.start()
        seen, inodes = set(), set()
        try:
            for i in range(10000):
                fd = os.open(self.path, os.O_RDONLY)
                try:
                    inodes.add(os.fstat(fd).st_ino)
                    data = b""
                    while True:
                        chunk = os.read(fd, 65536)
                        if not chunk:
                            break
                        data += chunk
                finally:
                    os.close(fd)
                text = data.decode()
                self.assertTrue(text.endswith("\n"), "read %d: a partial file: %r" % (i, text[-80:]))
                labels, expiry = nfd_parse(text, utc(self.T0))
                self.assertIsNotNone(expiry, "read %d: no expiry: %r" % (i, text[:80]))
                self.assertEqual(set(labels), want, "read %d: not the whole label set" % i)
                seen.add(expiry.timestamp())
        finally:
            stop.set()
            mover.join()
        self.assertFalse(failed, failed)
        self.assertLessEqual(seen, set(written))
        # The file was replaced while it was read, many times (or the test proved nothing).
        self.assertGreater(len(seen), 5, "the file was not rewritten while it was read")
        self.assertGreater(len(inodes), 1)   # replaced, not rewritten in place (numbers are reused)
        # No dot file left behind once the writer is done (stopped: a write in flight finishes).
        self.assertEqual(self.d.stop(), 0)
        self.assertEqual(os.listdir(self.features), ["mempolicyd"])


class LabelsRefusalsTest(unittest.TestCase, LabelsDir):
    """What would make a bad file is refused: a dot-file path at start; a profile name that is no
    label value is left out of the file (the profile names the daemon takes are wider than label
    values: a leading '_' or '-', a trailing '.')."""

    def setUp(self):
        self.make_dir()
        self.tmp = tempfile.mkdtemp(prefix="mpd-tree-")
        os.chmod(self.tmp, 0o755)
        self.tree = FakeTree(self.tmp, nodes=2)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        shutil.rmtree(self.features, ignore_errors=True)

    def test_a_dot_file_path_is_refused_at_start(self):
        d = Daemon(self.tree, ["--node-labels-file", os.path.join(self.features, ".mempolicyd")])
        try:
            d.start()
            self.fail("started with a dot-file labels path")
        except RuntimeError as e:
            self.assertIn("exited with 2", str(e))
            self.assertIn("does not start with a dot", str(e))
        finally:
            d.cleanup()
        self.assertEqual(os.listdir(self.features), [])

    def test_one_process_writes_it_itself(self):
        """--user root (no helper): the daemon's own act writes the same file the same way."""
        d = Daemon(self.tree, ["--node-labels-file", self.path], user="root")
        try:
            d.start()
            labels = wait_labels(self.path, lambda l: "hugepages-2M-node1" in l)
            self.assertEqual(labels["mpol-weighted-interleave"], "true")
            self.assertIn("no privilege separation (--user root)", d.log_text())
        finally:
            self.assertEqual(d.cleanup(), 0, d.last_log)
        self.assertEqual(os.listdir(self.features), ["mempolicyd"])

    def test_a_profile_name_that_is_no_label_value_is_left_out(self):
        for name in ("_db", "db.", "-db"):
            d = Daemon(self.tree, ["--node-labels-file", self.path, "--profile", name,
                                   "--profiles-dir", self.features + "-none"])
            try:
                d.start()
                labels = wait_labels(self.path, lambda l: "madv-collapse" in l)
                self.assertNotIn("profile", labels, name)
                self.assertIn("left out", d.log_text())
            finally:
                self.assertEqual(d.cleanup(), 0, d.last_log)
            os.unlink(self.path)
        d = Daemon(self.tree, ["--node-labels-file", self.path, "--profile", "db-1.2",
                               "--profiles-dir", self.features + "-none"])
        try:
            d.start()
            self.assertEqual(wait_labels(self.path, lambda l: "profile" in l)["profile"], "db-1.2")
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
