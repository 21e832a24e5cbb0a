"""8 clients changing and reading knobs at once (on a generated tree, so the real /sys is not
hammered): no request fails, every acknowledged change is in history in the order it was
acknowledged (one that found every knob at its value says unchanged and records nothing), each change starts from the previous one's value, and the database is intact."""
import random
import threading
import time

from faketree import FakeTree
from lib import DaemonTest

KNOBS = {
    "thp.enabled": ["always", "madvise", "never"],
    "thp.defrag": ["always", "defer", "defer+madvise", "madvise", "never"],
    "thp.khugepaged.max_ptes_none": list(range(0, 512, 7)),
    "vm.compaction_proactiveness": list(range(0, 101, 3)),
    "mempolicy.weighted_interleave.node2": list(range(1, 256, 5)),
}
CLIENTS = 8
SECONDS = 3.0


class KnobsConcurrencyTest(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    def test_parallel_changes_and_reads(self):
        acked = []          # (op_id, client) in the order each client saw its answer
        failures = []
        reads = [0]
        unchanged = [0]     # answers that changed nothing (and recorded nothing)
        lock = threading.Lock()
        stop = time.monotonic() + SECONDS

        def client(seed):
            rnd = random.Random(seed)
            while time.monotonic() < stop:
                try:
                    choice = rnd.random()
                    if choice < 0.3:
                        name = rnd.choice(list(KNOBS))
                        r = self.d.request("PUT", "/v1/knobs/" + name, {"value": rnd.choice(KNOBS[name])})
                        names = [name]
                    elif choice < 0.6:
                        names = rnd.sample(list(KNOBS), rnd.randint(2, 4))
                        r = self.d.request("PATCH", "/v1/knobs",
                                           {"knobs": {n: rnd.choice(KNOBS[n]) for n in names}})
                    else:
                        r = self.d.get(rnd.choice(["/v1/knobs", "/v1/knobs/thp.enabled", "/v1/history?limit=5"]))
                        names = None
                    if r.status != 200:
                        with lock:
                            failures.append(r)
                        continue
                    with lock:
                        if names is None:
                            reads[0] += 1
                        elif r.json["status"] == "unchanged":
                            # every knob already had its value: nothing written, nothing recorded
                            self.assertEqual((r.json["operation_id"], r.json["changed"]), (None, False))
                            unchanged[0] += 1
                        else:
                            self.assertEqual(r.json["status"], "ok")
                            acked.append((r.json["operation_id"], seed))
                except Exception as ex:   # noqa: BLE001 - any exception is a failed request
                    with lock:
                        failures.append(ex)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        self.assertEqual(failures, [])
        self.assertGreater(len(acked), 50, "too few changes to say anything")
        self.assertGreater(reads[0], 50)

        # Every acknowledged operation is in history, as ok, with its knobs.
        rows = self.d.sql("SELECT id, status FROM operations WHERE kind = 'knobs.set' ORDER BY id")
        recorded = dict(rows)
        ids = [op for op, _ in acked]
        self.assertEqual(len(set(ids)), len(ids))
        for op in ids:
            self.assertEqual(recorded.get(op), "ok", op)
        self.assertEqual(sorted(recorded), sorted(ids))   # nothing recorded that was not acknowledged

        # Per knob: ids increase in the order of the changes, and each change starts where the
        # previous one ended.
        changes = self.d.sql("SELECT op_id, knob, old, new FROM knob_changes ORDER BY op_id, seq")
        last = {}
        for op, knob, old, new in changes:
            if knob in last:
                prev_op, prev_new = last[knob]
                self.assertLess(prev_op, op)
                self.assertEqual(old, prev_new, "op %d: %s old %s, previous new %s" % (op, knob, old, prev_new))
            last[knob] = (op, new)
        for knob, (op, new) in last.items():
            v = self.d.get("/v1/knobs/" + knob).json["value"]
            self.assertEqual(str(v), new, knob)

        # Per client, acknowledgement order is id order (one client's requests are sequential).
        for seed in range(CLIENTS):
            mine = [op for op, s in acked if s == seed]
            self.assertEqual(mine, sorted(mine), "client %d" % seed)
        self.assertEqual(self.d.sql("PRAGMA integrity_check"), [("ok",)])
        print("\n  %d changes and %d reads in %.1f s by %d clients" % (len(acked), reads[0], SECONDS, CLIENTS))
