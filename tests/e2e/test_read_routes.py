"""R_READ routes (api/slow.c, issue 22: writes that readers cannot slow): the large answers that
change nothing — GET /v1/history and /v1/schedules pages among them — run on the daemon's reader
threads, which lowered their own priority to nice 10, with their connection suspended. So (1) the
pages being built are on threads at nice 10 (found blocked on the test hook: with
MEMPOLICYD_TEST_HOLD_SLOW naming a FIFO each such handler waits until a test has opened and closed
it), never on the threads that serve writes; (2) while every reader thread holds a page and one
more page is queued behind them, root's knob change and a health check are served — a write never
waits in the readers' queue; (3) the pages, once let go, are the same as without the hold."""
import errno
import json
import os
import platform
import select
import shutil
import socket
import tempfile
import time
import unittest

from faketree import FakeTree
from lib import Daemon
from test_router import raw_response

READER_THREADS = 2   # SLOW_READ_THREADS, server/api/slow.h
READER_NICE = 10     # SLOW_READ_NICE
# openat's number, which a thread blocked opening the hook's FIFO shows in /proc/.../syscall
OPENAT = {"x86_64": 257, "aarch64": 56}.get(platform.machine())
PAGES = ["/v1/history?limit=1000", "/v1/schedules?limit=1000", "/v1/history?limit=5"]
KNOB = "/v1/knobs/thp.khugepaged.pages_to_scan"
KNOB_SUMMARY = "thp.khugepaged.pages_to_scan 1002→1003"   # the change made while the pages are held


def get_bytes(path):
    return ("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode()


def threads(pid):
    """{tid: (nice, policy, syscall number or None)} of pid's threads."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%d/task/%s/syscall" % (pid, t)) as f:
                sc = f.read().split()
        except OSError:
            continue   # a thread that ended meanwhile
        # stat after the comm: state is field 3, so field n is fields[n - 3]
        nice, policy = int(fields[19 - 3]), int(fields[41 - 3])
        out[int(t)] = (nice, policy, int(sc[0]) if sc and sc[0].lstrip("-").isdigit() else None)
    return out


@unittest.skipIf(OPENAT is None, "openat's syscall number is not known here for %s" % platform.machine())
class ReadRoutesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-read-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(self.tmp, nodes=2)
        self.d = Daemon(self.tree)
        self.addCleanup(self.d.cleanup)
        self.d.start()
        for v in (1000, 1001, 1002):
            self.assertEqual(self.d.request("PUT", KNOB, body={"value": v}).status, 200)
        self.assertEqual(self.d.request("POST", "/v1/schedules", body={
            "cron": "0 3 1 1 *", "enabled": False,
            "action": {"hugepages": {"size": "2M", "nodes": {"0": 1}}}}).status, 201)
        self.before = {p: self.d.get(p).json for p in PAGES}
        self.d.stop()

    def held_on_fifo(self, pid, n, timeout=60):
        """The tids of n threads of pid blocked opening the hook's FIFO (a page held there)."""
        deadline = time.monotonic() + timeout
        while True:
            ts = threads(pid)
            held = {t: v for t, v in ts.items() if v[2] == OPENAT}
            if len(held) >= n:
                return held, ts
            if time.monotonic() > deadline:
                raise AssertionError("%d of %d pages reached a reader thread (are the list routes R_READ?): %r"
                                     % (len(held), n, ts))
            time.sleep(0.01)

    def release(self, fifo):
        """Lets every page blocked on the FIFO go (one open and close of its write end); False when
        no thread was waiting on it."""
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return False
            raise
        os.close(fd)
        return True

    def test_pages_run_at_nice_10_and_writes_pass_them(self):
        fifo = os.path.join(self.tmp, "hold")
        os.mkfifo(fifo)
        self.d.env = {"MEMPOLICYD_TEST_HOLD_SLOW": fifo}
        self.d.start()
        self.addCleanup(self.d.stop)
        socks = []
        for p in PAGES:   # one more page than there are reader threads: the last one is queued
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(60)
            s.connect(self.d.socket)
            s.sendall(get_bytes(p))
            socks.append(s)
            self.addCleanup(s.close)
        held, ts = self.held_on_fifo(self.d.proc.pid, READER_THREADS)
        self.assertEqual(len(held), READER_THREADS, ts)
        for tid, (nice, policy, _) in held.items():
            self.assertEqual((nice, policy), (READER_NICE, 0), "page held on thread %d: %r" % (tid, ts))
        # The threads that serve everything else kept their priority: the lowering is the reader
        # threads' own, not the process's.
        others = sorted(v[:2] for t, v in ts.items() if t not in held and v[:2] != (0, 0))
        # the scans' thread at SCHED_IDLE (api/slow.c) and the store's checkpointer at nice 10
        # (store/ckpt.c), which serves no request
        self.assertEqual(others, [(0, 5), (10, 0)], ts)
        # Every reader thread holds a page and a third waits behind them: a write and a read of
        # another route are served meanwhile.
        r = self.d.request("PUT", KNOB, body={"value": 1003})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.d.get("/v1/health").status, 200)
        got = {}
        deadline = time.monotonic() + 60
        while len(got) < len(PAGES):
            self.assertLess(time.monotonic(), deadline, "pages answered: %r" % sorted(got))
            self.release(fifo)
            waiting = [s for p, s in zip(PAGES, socks) if p not in got]
            for s in select.select(waiting, [], [], 0.05)[0]:
                line, _, body = raw_response(s)   # readable: the answer is on its way, read it whole
                got[PAGES[socks.index(s)]] = (line, json.loads(body))
        for p in PAGES:
            line, page = got[p]
            self.assertIn(" 200 ", line, p)
            if p.startswith("/v1/schedules"):
                self.assertEqual(page, self.before[p], p)
            else:   # the handler ran once let go: the change made meanwhile is the newest operation
                ops, was = page["operations"], self.before[p]["operations"]
                self.assertEqual((ops[0]["kind"], ops[0]["summary"]), ("knobs.set", KNOB_SUMMARY), ops[0])
                self.assertEqual(ops[1:], was[:len(ops) - 1], p)

if __name__ == "__main__":
    unittest.main()
