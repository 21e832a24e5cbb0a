"""The arrows of docs/DESIGN.md's layer picture, checked on every `#include "..."` of the sources.

Each file belongs to a room (its directory). A room may include only the
rooms its line below names: a handler that reaches the kernel, a store that calls up into the
metrics registry, or a kernel file that includes a use case fails here with the file and line.
Upward calls exist only as function pointers registered by main() (a job kind's run, the
scheduler's fire, the store's events), never as includes.

No daemon: the rule is about the text of the sources, and the test fails on the first forbidden
include it finds rather than on what a build happens to link."""
import glob
import os
import re
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Headers at server/'s top that every server room may use: leaves that include nothing of ours.
LEAVES = {"server/log.h", "server/clock.h"}
# server/app.h (struct app: every room above the kernel and the store sees it as const).
APP = "server/app.h"

# room -> what it may include besides itself and common/ (a room name, or one header).
ALLOWED = {
    "common": set(),
    "client": set(),
    "server/kernel": LEAVES,
    "server/priv": LEAVES | {"server/kernel", "server/probes", "server/fleet"},
    "server/probes": LEAVES | {"server/kernel"},
    # The profile parser and merger: pure text to a document, files only through a loader.
    "server/profiles": set(),
    # The NFD labels file's format (build, check, write one file): pure, for the serving side's
    # writer (ops/labels.c) and the privileged helper's check alike.
    "server/fleet": set(),
    "server/store": LEAVES,
    "server/jobs": LEAVES | {APP, "server/store"},
    "server/ops": LEAVES | {APP, "server/jobs", "server/store", "server/kernel", "server/priv", "server/probes",
                   "server/profiles", "server/fleet"},
    # Nothing of the privilege boundary: the serving side accepts on the Unix socket itself, and a
    # launch's identity is the helper's question about the connection (server/priv/identity.h).
    "server/api": LEAVES | {APP, "server/metrics.h", "server/ops", "server/jobs", "server/store"},
    # server/'s own files: main() wires every room; the others are named one by one.
    "server": None,
}
# server/'s top-level files other than main.c, with what each may include.
TOP = {
    "server/app.h": {"server/kernel/caps.h", "server/store/retain.h"},
    "server/metrics.c": {"server/metrics.h", "server/store/events.h"},
}
COMMON_OK = {"common"}

# Known arrows against the rule, each with why it is still there. None today: the privileged
# helper's client moved above the kernel (server/priv/, ops -> priv/act.h -> kernel), and nothing
# may join this set without its reason.
PENDING = set()


# Headers private to their room (DESIGN: "stmts.h and internal.h are private to it").
PRIVATE = {"server/store/internal.h", "server/store/stmts.h"}


def room_of(rel):
    d = os.path.dirname(rel)
    return d


def target_room(inc):
    if inc in LEAVES or inc == APP or inc.count("/") == 1 and inc.startswith("server/"):
        return inc           # a top-level header is its own room
    return room_of(inc)


def allowed(rel, inc):
    room, target = room_of(rel), target_room(inc)
    if inc in PRIVATE and room != room_of(inc):
        return False
    if room not in ALLOWED:
        return False         # a room this test does not know: say so rather than pass
    if target == room or target in COMMON_OK:
        return True
    if room == "server":
        if rel in TOP:
            return inc in TOP[rel] or inc in LEAVES or target == "server" or inc == rel[:-2] + ".h"
        return True          # main.c, config.c, ...: the wiring
    rules = ALLOWED[room]
    return target in rules or inc in rules


def includes(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                yield n, m.group(1)


def violations():
    files = sorted(glob.glob(os.path.join(ROOT, "server", "**", "*.[ch]"), recursive=True) +
                   glob.glob(os.path.join(ROOT, "common", "*.[ch]")) + glob.glob(os.path.join(ROOT, "client", "*.[ch]")))
    bad = []
    for f in files:
        rel = os.path.relpath(f, ROOT)
        for n, inc in includes(f):
            if not allowed(rel, inc) and (rel, inc) not in PENDING:
                bad.append("%s:%d includes %s (%s -> %s)" % (rel, n, inc, room_of(rel), target_room(inc)))
    return files, bad


class TheArrowsHold(unittest.TestCase):
    def test_no_forbidden_include(self):
        files, bad = violations()
        self.assertGreater(len(files), 150, "the sources were not found")
        self.assertEqual(bad, [], "includes against docs/DESIGN.md's arrows:\n  " + "\n  ".join(bad))

    def test_the_rule_catches_what_it_names(self):
        # The checker itself: each forbidden arrow of the issue is refused, each allowed one passes.
        refused = [("server/api/knobs.c", "server/kernel/knobs.h"), ("server/api/x.c", "server/priv/priv.h"),
                   ("server/api/x.c", "server/kernel/priv.h"), ("server/store/db.c", "server/metrics.h"),
                   ("server/store/db.c", "server/ops/knobs.h"), ("server/store/db.c", "server/api/api.h"),
                   ("server/kernel/knobs.c", "server/ops/knobs.h"), ("server/kernel/knobs.c", "server/store/db.h"),
                   ("server/kernel/knobs.c", "server/jobs/jobs.h"), ("server/kernel/knobs.c", "server/priv/priv.h"),
                   ("server/kernel/knobs.c", "server/probes/probe.h"), ("server/kernel/knobs.c", "server/app.h"),
                   ("server/jobs/jobs.c", "server/ops/kinds.h"), ("server/ops/knobs.c", "server/api/api.h"),
                   ("server/probes/x.c", "server/store/db.h"), ("server/metrics.c", "server/store/db.h"),
                   ("common/parse.c", "server/log.h"), ("client/cli.c", "server/app.h"),
                   ("server/nowhere/x.c", "common/err.h"), ("server/fleet/nfd.c", "server/kernel/sysfs.h"),
                   ("server/fleet/nfd.c", "server/log.h"), ("server/api/x.c", "server/fleet/nfd.h")]
        passed = [("server/api/knobs.c", "server/ops/knobs.h"), ("server/ops/knobs.c", "server/kernel/knobs.h"),
                  ("server/ops/x.c", "server/priv/priv.h"), ("server/priv/priv.c", "server/kernel/sysfs.h"),
                  ("server/kernel/priv.c", "server/log.h"), ("server/store/db.c", "server/store/internal.h"),
                  ("server/metrics.c", "server/store/events.h"), ("server/main.c", "server/api/api.h"),
                  ("server/api/history.c", "server/store/history.h"), ("server/priv/helper.c", "server/fleet/nfd.h"),
                  ("server/ops/labels.c", "server/fleet/nfd.h")]
        refused += [("server/ops/x.c", "server/store/internal.h"), ("server/main.c", "server/store/stmts.h")]
        for rel, inc in refused:
            self.assertFalse(allowed(rel, inc), (rel, inc))
        for rel, inc in passed:
            self.assertTrue(allowed(rel, inc), (rel, inc))


def store_functions():
    """The store's public functions, each as "R" when its body names only a read-only connection
    (R, or P for the low-priority threads' pages: a plain read) and "W" when it names the writer, begins a transaction, or names neither (a
    helper whose connection this test cannot see counts as a write: unknown is not a read)."""
    kinds = {}
    for f in glob.glob(os.path.join(ROOT, "server", "store", "*.c")):
        text = open(f, encoding="utf-8").read()
        for m in re.finditer(r"^([a-z][^\n;]*?)\b([a-z_0-9]+)\(([^;{]*?)\)\n\{\n(.*?)\n\}\n", text, re.S | re.M):
            if m.group(1).startswith("static"):
                continue
            body = m.group(4)
            reads = re.search(r"\b[RP]\b", body) and not re.search(r"\bW\b|tx_begin\(", body)
            kinds[m.group(2)] = "R" if reads else "W"
    return kinds


class HandlersOnlyReadTheStore(unittest.TestCase):
    """DESIGN: api/ reads store/ directly for plain reads (history, stats, the schedule list); every
    write goes through an ops/ use case, which records it. An include cannot tell a read from a
    write, so the calls are checked: each store function a handler calls must be a reader's."""

    def test_no_handler_calls_a_store_write(self):
        kinds = store_functions()
        self.assertIn("history_insert", kinds)
        self.assertEqual(kinds["history_insert"], "W")
        self.assertEqual(kinds.get("history_list_each"), "R")
        bad = []
        for f in sorted(glob.glob(os.path.join(ROOT, "server", "api", "*.c"))):
            for n, line in enumerate(open(f, encoding="utf-8"), 1):
                for name in re.findall(r"\b([a-z_0-9]+)\(", line):
                    if kinds.get(name) == "W":
                        bad.append("%s:%d calls %s" % (os.path.relpath(f, ROOT), n, name))
        self.assertEqual(bad, [], "handlers that write the store (move the write into an ops/ use case):\n  " +
                         "\n  ".join(bad))


if __name__ == "__main__":
    unittest.main()
