"""Every operation is one structured log event (server/oplog.c, reached from the store's events
through server/observe.c):

- --log-format json: every stderr line is one JSON object that jq parses; each operation the
  history holds with a final status is exactly one event, whose fields match its row; every member
  is documented in docs/reference/logs.md; no launched program's argv or environment value and no
  token secret is ever in the log;
- MESSAGE_ID: --list-message-ids gives every kind of --list-kinds its own fixed 128-bit id, as
  docs/reference/logs.md lists them;
- --log-format journal, and auto when stderr is the journal's stream (JOURNAL_STREAM): the events
  reach a real systemd-journald, and `journalctl MESSAGE_ID=...` and `MPD_KIND=...` find them with
  their MPD_* fields. The machine has no journald of its own (no systemd as PID 1): the test starts
  one in a private mount namespace, with /run bound to a directory of its own, so its socket
  (/run/systemd/journal/socket, where the daemon writes) and its runtime journal
  (/run/log/journal) are the test's and the host's /run is untouched."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import DAEMON, Daemon
from test_metrics import wait_job

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOC = os.path.join(REPO, "docs", "reference", "logs.md")
JQ = shutil.which("jq")
JOURNALD = "/lib/systemd/systemd-journald"
JOURNALCTL = shutil.which("journalctl")
SECRET_ARG = "argv-secret-7f3a"
SECRET_ENV = "env-secret-91c2"


def operations(d):
    """Kinds of operation of several shapes: recorded at once (knobs.set, ok and failed), a job
    (hugepages.resize), a launch with a secret in its argv and its environment, one that fails."""
    ids = []
    r = d.request("PUT", "/v1/knobs/thp.defrag", body={"value": "never"})
    assert r.status == 200, r.raw
    ids.append(r.json["operation_id"])
    r = d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 3}})
    assert r.status == 202, r.raw
    wait_job(d, r.json["id"])
    r = d.request("POST", "/v1/processes", body={"argv": ["/bin/sh", "-c", "exit 0", SECRET_ARG],
                                                "env": {"MPD_TEST_SECRET": SECRET_ENV}})
    assert r.status == 201, r.raw
    r = d.request("POST", "/v1/processes", body={"argv": ["/nonexistent/mpd-test-program", SECRET_ARG]})
    assert r.status >= 400, r.raw
    r = d.request("POST", "/v1/tokens", body={"name": "logtest", "scope": "read"})
    assert r.status == 201, r.raw
    return r.json["token"]


def finished_ops(d):
    return {row[0]: row[1:] for row in d.sql(
        "SELECT id, kind, status, source, actor_uid FROM operations WHERE status NOT IN ('running', 'queued')")}


def documented_fields():
    with open(DOC) as f:
        return set(re.findall(r"^\| `([a-z_]+)` \| `([A-Z_]+)` \|", f.read(), re.M))


class JsonLog(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-logs-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(os.path.join(self.tmp, "tree"), nodes=2)
        self.d = Daemon(self.tree, ["--log-format", "json"]).start()
        self.addCleanup(self.d.cleanup)

    def lines(self):
        with open(self.d.log) as f:
            return f.read().splitlines()

    @unittest.skipUnless(JQ, "jq is not installed (packaging/deps.sh test)")
    def test_each_operation_is_one_event_every_line_parses_with_jq_and_nothing_secret(self):
        token = operations(self.d)
        ops = finished_ops(self.d)
        self.assertGreaterEqual({k for k, *_ in ops.values()}, {"knobs.set", "hugepages.resize", "process.launch"})
        self.assertIn("failed", {s for _, s, *_ in ops.values()})
        # The daemon writes its last lines at stop: read everything it wrote.
        self.assertEqual(self.d.stop(), 0)
        with open(self.d.log) as f:
            p = subprocess.run([JQ, "-c", "."], stdin=f, capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = self.lines()
        self.assertEqual(len(p.stdout.splitlines()), len(lines))   # one object per line, no more
        objs = [json.loads(x) for x in lines]
        for o in objs:
            self.assertEqual(set(o) >= {"ts", "level", "message"}, True, o)
            self.assertRegex(o["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        events = [o for o in objs if "operation_id" in o]
        self.assertEqual(sorted(e["operation_id"] for e in events), sorted(ops), "one event per operation")
        ids = dict(l.split("\t") for l in subprocess.run([DAEMON, "--list-message-ids"], capture_output=True,
                                                         text=True, check=True).stdout.splitlines())
        doc = documented_fields()
        json_names = {j for j, _ in doc}
        for e in events:
            kind, status, source, uid = ops[e["operation_id"]]
            self.assertEqual((e["kind"], e["status"], e["source"], e.get("actor_uid")), (kind, status, source, uid), e)
            self.assertEqual(e["message_id"], ids[kind])
            self.assertEqual(e["level"], "info" if status == "ok" else "warn", e)
            self.assertLessEqual(set(e) - {"ts", "level", "message"}, json_names, "undocumented fields")
            if status == "failed":
                self.assertTrue(e.get("error"), e)
        text = "\n".join(lines)
        for secret in (SECRET_ARG, SECRET_ENV, token):
            self.assertNotIn(secret, text)

    def test_bad_format_is_refused(self):
        p = subprocess.run([DAEMON, "--log-format", "xml", "--socket", os.path.join(self.tmp, "s"), "--db",
                            os.path.join(self.tmp, "x.db")], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("unknown log format 'xml'", p.stderr)


class MessageIds(unittest.TestCase):
    def test_every_kind_has_its_own_documented_id(self):
        kinds = [l.split("\t")[0] for l in subprocess.run([DAEMON, "--list-kinds"], capture_output=True, text=True,
                                                           check=True).stdout.splitlines()]
        rows = [l.split("\t") for l in subprocess.run([DAEMON, "--list-message-ids"], capture_output=True,
                                                      text=True, check=True).stdout.splitlines()]
        ids = dict(rows)
        self.assertEqual(len(ids), len(rows))
        self.assertEqual(len(set(ids.values())), len(ids), "an id used twice")
        for k in kinds:
            self.assertIn(k, ids, "kind %s has no MESSAGE_ID of its own (server/oplog.c)" % k)
        for v in ids.values():
            self.assertRegex(v, r"^[0-9a-f]{32}$")
        with open(DOC) as f:
            doc = f.read()
        for k, v in ids.items():
            self.assertIn("| `%s` | `%s` |" % (k, v), doc, "docs/reference/logs.md lacks %s's id" % k)


class PrivateJournald:
    """systemd-journald in a mount namespace of its own with /run bound to dir/run. start()
    returns the command prefix that runs a program in the same namespace, where
    /run/systemd/journal/socket is this journald's."""
    SCRIPT = r"""
set -eu
mkdir -p "$1/run"
mount --bind "$1/run" /run
[ -d /var/log/journal ] && mount -t tmpfs -o size=8m mpd-test-journal /var/log/journal
( %s >"$1/journald.log" 2>&1 & echo $! >"$1/journald.pid" )
i=0
while [ ! -S /run/systemd/journal/socket ]; do
    i=$((i + 1)); [ $i -lt 400 ] || { echo "journald made no socket" >&2; cat "$1/journald.log" >&2; exit 1; }
    sleep 0.025
done
shift
exec "$@"
""" % JOURNALD

    def __init__(self, dir):
        self.dir = dir

    def prefix(self):
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", self.SCRIPT, "sh", self.dir]

    def stop(self):
        try:
            with open(os.path.join(self.dir, "journald.pid")) as f:
                os.kill(int(f.read()), signal.SIGTERM)
        except (OSError, ValueError):
            pass

    def find(self, *matches, want=1, timeout=20):
        """The entries journalctl finds for the matches (FIELD=value), once there are want."""
        deadline = time.monotonic() + timeout
        out = []
        while time.monotonic() < deadline:
            p = subprocess.run([JOURNALCTL, "-D", os.path.join(self.dir, "run", "log", "journal"), "--no-pager",
                                "-o", "json"] + list(matches), capture_output=True, text=True, timeout=30)
            out = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
            if len(out) >= want:
                return out
            time.sleep(0.1)
        raise AssertionError("journalctl %s: %d entries, want %d" % (" ".join(matches), len(out), want))


class JournalDaemon(Daemon):
    def __init__(self, journald, *a, **kw):
        super().__init__(*a, **kw)
        self.journald = journald

    def command(self):
        return self.journald.prefix() + super().command()


# The private mount namespace needs "/" to be a mount point: `unshare --propagation private`
# makes "/" private first (mount(2) on "/", EINVAL in a chroot whose root is a plain directory,
# as tools/fresh-root-test's is). Without it the bind over /run would propagate to the host's
# mount namespace, so the test is skipped there rather than run with shared propagation. Every
# real machine, CI's included, has "/" mounted.
@unittest.skipUnless(os.access(JOURNALD, os.X_OK) and JOURNALCTL and shutil.which("unshare") and os.geteuid() == 0,
                     "needs root, unshare, journalctl and %s" % JOURNALD)
@unittest.skipUnless(os.path.ismount("/"), "/ is not a mount point (a chroot): no private mount namespace can be made "
                     "without one, and a journald bound over /run must not leak out")
class Journal(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-journal-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(os.path.join(self.tmp, "tree"), nodes=2)
        self.j = PrivateJournald(os.path.join(self.tmp, "j"))
        os.mkdir(self.j.dir)
        self.addCleanup(self.j.stop)

    def start(self, args, env=None):
        d = JournalDaemon(self.j, self.tree, args)
        d.env = env
        d.start(timeout=30)
        self.addCleanup(d.cleanup)
        return d

    def check_events(self, d):
        token = operations(d)
        ops = finished_ops(d)
        ids = dict(l.split("\t") for l in subprocess.run([DAEMON, "--list-message-ids"], capture_output=True,
                                                         text=True, check=True).stdout.splitlines())
        knob_ops = sorted(i for i, (k, *_) in ops.items() if k == "knobs.set")
        got = self.j.find("MESSAGE_ID=" + ids["knobs.set"], want=len(knob_ops))
        self.assertEqual(sorted(int(e["MPD_OPERATION_ID"]) for e in got), knob_ops)
        e = got[0]
        kind, status, source, uid = ops[int(e["MPD_OPERATION_ID"])]
        self.assertEqual((e["MPD_KIND"], e["MPD_STATUS"], e["MPD_SOURCE"], e["MPD_ACTOR_UID"]),
                         (kind, status, source, str(uid)))
        self.assertEqual((e["PRIORITY"], e["SYSLOG_IDENTIFIER"]), ("6", "mempolicyd"))
        self.assertIn("MPD_ACTOR", e)
        # every operation is there once, found by its kind's field too
        every = self.j.find("SYSLOG_IDENTIFIER=mempolicyd", "MPD_OPERATION_ID", want=0)
        for k in {k for k, *_ in ops.values()}:
            n = sum(1 for _, (kk, *_) in ops.items() if kk == k)
            self.assertEqual(len(self.j.find("MPD_KIND=" + k, want=n)), n, k)
        launched = [e for e in self.j.find("MESSAGE_ID=" + ids["process.launch"], want=2)]
        self.assertIn("failed", [e["MPD_STATUS"] for e in launched])
        self.assertTrue(all(e["PRIORITY"] == "4" for e in launched if e["MPD_STATUS"] == "failed"))
        allj = subprocess.run([JOURNALCTL, "-D", os.path.join(self.j.dir, "run", "log", "journal"), "--no-pager",
                               "-o", "export"], capture_output=True, timeout=30).stdout
        for secret in (SECRET_ARG, SECRET_ENV, token):
            self.assertNotIn(secret.encode(), allj)
        del every

    def test_journal_format_events_are_found_by_message_id_and_fields(self):
        self.check_events(self.start(["--log-format", "journal"]))

    def test_auto_picks_the_journal_when_stderr_is_its_stream(self):
        # systemd's JOURNAL_STREAM names the stream's dev:ino: here the daemon's log file stands
        # in for it, so auto must choose the journal.
        log = os.path.join(self.tmp, "stream.log")
        open(log, "w").close()
        d = JournalDaemon(self.j, self.tree, [])
        d.log = log
        st = os.stat(log)
        d.env = {"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)}
        d.start(timeout=30)
        self.addCleanup(d.cleanup)
        r = d.request("PUT", "/v1/knobs/thp.defrag", body={"value": "never"})
        self.assertEqual(r.status, 200, r.raw)
        got = self.j.find("MPD_OPERATION_ID=%d" % r.json["operation_id"])
        self.assertEqual(got[0]["MPD_KIND"], "knobs.set")
        with open(log) as f:
            self.assertNotIn("operation %d" % r.json["operation_id"], f.read())

    def test_journal_without_a_journald_is_refused(self):
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                            'mkdir -p "$1" && mount --bind "$1" /run && shift && exec "$@"', "sh",
                            os.path.join(self.tmp, "empty-run"), DAEMON, "--log-format", "journal", "--socket",
                            os.path.join(self.tmp, "s"), "--db", os.path.join(self.tmp, "x.db")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("log format journal: /run/systemd/journal/socket", p.stderr)


if __name__ == "__main__":
    unittest.main()
