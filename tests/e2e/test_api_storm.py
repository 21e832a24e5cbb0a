"""A storm of generated requests, most of them wrong, against a daemon on a generated 4-node tree.

Every route of server/api/routes.c is hit with methods, path parameters, query strings, content types
and bodies drawn from a grammar of near-misses: a valid request with one thing broken (a field
dropped, renamed, of another JSON type, out of range, duplicated in the raw text, truncated, not
UTF-8), plus plain junk. What must hold for every answer:
  - never 5xx, and the daemon keeps answering;
  - any 4xx is an RFC 9457 problem (type, title, status equal to the HTTP status, detail, a dotted
    machine code);
  - a 4xx changed nothing: the generated tree and every database table are as they were;
  - 2xx answers are JSON.
At the end the database passes PRAGMA integrity_check and the sanitized daemon exits 0.

The generator is seeded: MPD_STORM_SEED=N (and MPD_STORM_N=count) replays or widens a run; the
seed is in every failure message."""
import json
import os
import random
import re
import time
import urllib.parse

from faketree import FakeTree
from lib import DaemonTest

SEEDS = [int(os.environ["MPD_STORM_SEED"])] if "MPD_STORM_SEED" in os.environ else [1, 2, 3]
COUNT = int(os.environ.get("MPD_STORM_N", "350"))
CODE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")

JUNK_TEXT = ["", " ", "..", "../../x", "a/b", "%2e%2e", "\u00e9", "x" * 300, "-1", "0", "1e3", "0x10", "+5",
             "18446744073709551616", "9223372036854775808", "null", "true", "[]", "{}"]
JUNK_JSON = [None, True, False, 0, -1, 1.5, 2 ** 63, -2 ** 63 - 1, 1e308, "", "x", "always", [], [1], {}, {"a": 1},
             "\u0000", "x" * 5000]
SIZES = ["2M", "2048kB", "1G", "1048576kB", "2m", "64M", "0", "-2M", "2MiB", "kB", "2048", "4K"] + JUNK_TEXT[:8]
CRONS = ["0 2 * * *", "*/5 * * * *", "0 0 1 1 MON-FRI", "60 * * * *", "* * *", "0 2 * * * *", "a b c d e",
         "1-0 * * * *", "*/0 * * * *", "0 24 * * *", "0 0 31 2 *", "0 0 * * 8", ""]
TZS = ["UTC", "+02:00", "-05:30", "Europe/Paris", "+25:00", "", "Z"]


class StormTest(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4, cpuless=(3,)))

    # -- the grammar -------------------------------------------------------------------------------
    def any_json(self, depth=0):
        r = self.rng
        if depth < 3 and r.random() < 0.25:
            if r.random() < 0.5:
                return [self.any_json(depth + 1) for _ in range(r.randint(0, 3))]
            return {r.choice(["a", "value", "knobs", "nodes", "total", ""]): self.any_json(depth + 1)
                    for _ in range(r.randint(0, 3))}
        return r.choice(JUNK_JSON)

    def knob_value(self, knob):
        r = self.rng
        if r.random() < 0.5 and knob.get("allowed"):
            return r.choice(knob["allowed"] + ["bogus"])
        if r.random() < 0.5 and "min" in knob:
            return r.choice([knob["min"], knob["max"], knob["min"] - 1, knob["max"] + 1, (knob["min"] + knob["max"]) // 2])
        return self.any_json()

    def pick(self, good, bad, p_good=0.75):
        return self.rng.choice(good if self.rng.random() < p_good else bad)

    def node_map(self):
        m = {}
        for _ in range(self.rng.randint(1, 3)):
            key = self.pick(["0", "1", "2"], ["3", "4", "99", "-1", "01", "x", "", "1 "])
            m[key] = self.pick([0, 1, 2, 7, 40], [100000000, -1, 2 ** 40, "3", None, 1.0])
        return m

    def hugepages_body(self):
        r = self.rng
        b = {}
        if r.random() < 0.5:
            b["total"] = self.pick([0, 3, 10, 64], [-1, 2 ** 50, "4", None, 2.5])
        if r.random() < 0.6 or not b:
            b["nodes"] = self.node_map()
        for k, vals in (("batch", [1, 4, 16, 0, -3, "4", 2 ** 40]), ("deadline_ms", [1000, 0, -1, "1s", 10 ** 12]),
                        ("compact", [False, True, 1, "yes"]), ("dry_run", [True, False, "true", 0])):
            if r.random() < 0.3:
                b[k] = r.choice(vals)
        return b

    def schedule_body(self):
        r = self.rng
        b = {"cron": self.pick(CRONS[:3], CRONS[3:]),
             "action": {"hugepages": {"size": self.pick(SIZES[:4], SIZES[4:]), "nodes": self.node_map()}}}
        if r.random() < 0.5:
            b["timezone"] = self.pick(TZS[:3], TZS[3:])
        if r.random() < 0.2:
            b["misfire_grace_s"] = r.choice([0, 60, -1, 10 ** 9, "60"])
        if r.random() < 0.15:
            b["action"] = r.choice([{}, {"hugepages": None}, {"hugepages": {"size": "2M"}}, {"reboot": {}},
                                    self.any_json()])
        return b

    def mutate(self, body):
        """One thing broken in a dict body (sometimes nothing)."""
        r = self.rng
        if self.clean or not isinstance(body, dict) or r.random() < 0.5:
            return body
        body = json.loads(json.dumps(body))
        roll = r.random()
        keys = list(body)
        if roll < 0.3 and keys:
            del body[r.choice(keys)]
        elif roll < 0.55:
            body[r.choice(["extra", "Value", "dry-run", "nodes2", ""])] = self.any_json()
        elif roll < 0.85 and keys:
            body[r.choice(keys)] = self.any_json()
        else:
            return self.any_json()
        return body

    def encode(self, body):
        """The body as bytes: mostly json.dumps, sometimes broken in the raw text."""
        r = self.rng
        text = json.dumps(body)
        roll = r.random()
        if self.clean or roll < 0.75:
            return text.encode()
        if roll < 0.82 and text.startswith("{") and len(text) > 2:
            k = r.choice(['"value"', '"knobs"', '"total"', '"cron"', '"a"'])
            return ('{%s: 1, %s' % (k, text[1:])).encode()        # a duplicate key, maybe
        if roll < 0.88:
            return text[:r.randint(0, max(0, len(text) - 1))].encode()   # truncated
        if roll < 0.92:
            return text.encode()[:-1] + b"\xff\xfe}"                   # not UTF-8
        if roll < 0.96:
            return ("[" * 3000 + "]" * 3000).encode()                 # deep
        return r.choice([b"", b"null", b"1", b'"x"', b"{\x00}", b"{} {}", b"\xef\xbb\xbf{}"])

    def path_param(self, kind):
        """Percent-encoded as a client would (spaces, UTF-8), keeping '/', '.' and '%' raw."""
        return urllib.parse.quote(self._path_param(kind), safe="/.%")

    def _path_param(self, kind):
        r = self.rng
        if kind == "knob":
            return r.choice(self.knob_names) if r.random() < 0.6 else r.choice(JUNK_TEXT + ["thp.enabled/..", "THP.ENABLED"])
        if kind == "size":
            return self.pick(SIZES[:4], SIZES[4:])
        return str(r.choice([1, 2, 3, 5, 0, -1, 2 ** 63, 2 ** 64, "abc", "1e3", "01", " 1"]))

    def query(self, keys):
        r = self.rng
        if self.clean or r.random() < 0.7:
            return ""
        parts = []
        for _ in range(r.randint(1, 3)):
            k = r.choice(keys + ["bogus", "", "limit", "dry_run"]) if keys else r.choice(["bogus", "x", ""])
            v = r.choice(["1", "0", "true", "false", "yes", "2M", "-1", "99999999999999999999", "", "%zz", "a%26b",
                          "2026-11-29T10:00:00Z", "2026-13-01T00:00:00Z", "c1", "cZZ", "hugepages.resize", "ok"])
            parts.append(r.choice(["%s=%s" % (k, v), k, "=" + v]))
        return "?" + "&".join(parts)

    def request_spec(self):
        r = self.rng
        kinds = [
            ("GET", "/v1/health", None, []),
            ("GET", "/v1/topology", None, []),
            ("GET", "/v1/knobs", None, []),
            ("PATCH", "/v1/knobs", "patch", ["dry_run"]),
            ("GET", "/v1/knobs/{knob}", None, []),
            ("PUT", "/v1/knobs/{knob}", "knob", ["dry_run"]),
            ("GET", "/v1/history", None, ["kind", "status", "since", "until", "limit", "cursor"]),
            ("GET", "/v1/history/stats", None, ["kind", "size", "node", "since", "until", "direction"]),
            ("GET", "/v1/history/{id}", None, []),
            ("GET", "/v1/hugepages", None, []),
            ("GET", "/v1/hugepages/{size}", None, []),
            ("PUT", "/v1/hugepages/{size}", "hugepages", []),
            ("GET", "/v1/hugepages/{size}/availability", None, ["node", "count"]),
            ("GET", "/v1/jobs", None, ["kind", "status", "schedule_id", "before", "limit", "cursor"]),
            ("GET", "/v1/jobs/{id}", None, []),
            ("DELETE", "/v1/jobs/{id}", None, []),
            ("GET", "/v1/schedules", None, ["limit", "cursor"]),
            ("POST", "/v1/schedules", "schedule", []),
            ("GET", "/v1/schedules/{id}", None, []),
            ("DELETE", "/v1/schedules/{id}", None, []),
        ]
        method, tmpl, body_kind, qkeys = r.choice(kinds)
        self.clean = r.random() < 0.3   # nothing broken on purpose beyond what the values draw
        knob = r.choice(self.knobs)
        path = tmpl.replace("{knob}", self.path_param("knob")).replace("{size}", self.path_param("size")) \
                   .replace("{id}", self.path_param("id"))
        if not self.clean and r.random() < 0.08:
            method = r.choice(["GET", "PUT", "POST", "PATCH", "DELETE", "HEAD", "OPTIONS", "FOO"])
        if not self.clean and r.random() < 0.05:
            path = r.choice(["/", "//v1/knobs", "/v1/knobs/", "/v1", "/v2/knobs", "/v1/knobs//x", "/v1/./knobs",
                             "/v1/hugepages/2M/", "/v1/jobs/1/x", "/V1/HEALTH"])
        path += self.query(qkeys)
        body = None
        if body_kind == "knob":
            body = {"value": self.knob_value(knob)}
        elif body_kind == "patch":
            body = {"knobs": {k["name"]: self.knob_value(k) for k in r.sample(self.knobs, r.randint(0, 3))}}
        elif body_kind == "hugepages":
            body = self.hugepages_body()
        elif body_kind == "schedule":
            body = self.schedule_body()
        raw, ctype = None, None
        if body is not None or r.random() < 0.05:
            raw = self.encode(self.mutate(body if body is not None else self.any_json()))
            ctype = "application/json" if self.clean else r.choice(["application/json"] * 8 + ["application/json; charset=utf-8", "text/plain",
                                                         "application/jsonx", None])
        return method, path, raw, ctype

    # -- the properties ----------------------------------------------------------------------------
    def idle(self):
        """No job queued or running (a 202 resize on the tree ends in milliseconds)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            jobs = self.d.get("/v1/jobs?limit=1000").json["jobs"]
            if not [j for j in jobs if j["status"] in ("queued", "running")]:
                return
            time.sleep(0.01)
        self.fail("a job is still running after 30 s")

    def run_storm(self, seed):
        self.rng = random.Random(seed)
        self.knobs = self.d.get("/v1/knobs").json["knobs"]
        self.knob_names = [k["name"] for k in self.knobs]
        seen = {}
        for i in range(COUNT):
            method, path, raw, ctype = self.request_spec()
            where = "seed %d request %d: %s %s %r (%s)" % (seed, i, method, path, (raw or b"")[:200], ctype)
            tree, db = self.tree.snapshot(), self.d.db_snapshot()
            try:
                r = self.d.request(method, path, raw=raw, headers={"Content-Type": ctype} if ctype else None)
            except OSError as e:
                self.fail("%s: %r\n%s" % (where, e, self.d.log_text()[-2000:]))
            seen[r.status] = seen.get(r.status, 0) + 1
            if os.environ.get("MPD_STORM_TRACE"):
                print(r.status, (r.json or {}).get("code") if isinstance(r.json, dict) else "", where[:160])
            self.assertLess(r.status, 500, "%s -> %r\n%s" % (where, r, self.d.log_text()[-2000:]))
            if r.status >= 400 and method == "HEAD":
                self.assertEqual(r.raw, "", where)   # the status alone, as HTTP wants for HEAD
            elif r.status >= 400:
                self.assertTrue(r.content_type.startswith("application/problem+json"), (where, r.content_type))
                self.assertIsInstance(r.json, dict, (where, r.raw))
                for k in ("type", "title", "detail"):
                    self.assertIsInstance(r.json.get(k), str, (where, r.raw))
                self.assertEqual(r.json.get("status"), r.status, (where, r.raw))
                self.assertRegex(r.json.get("code", ""), CODE, (where, r.raw))
                self.assertEqual(self.tree.snapshot(), tree, "%s changed the tree" % where)
                self.assertEqual(self.d.db_snapshot(), db, "%s changed the database" % where)
            elif method != "HEAD" and r.status != 204:
                self.assertTrue(r.content_type.startswith("application/json"), (where, r.content_type))
                self.assertIsNotNone(r.json, (where, r.raw))
            if r.status == 202:
                self.idle()
            if r.status == 201 and method == "POST":   # no schedule may fire between two snapshots
                sid = r.json["id"]
                self.assertEqual(self.d.request("DELETE", "/v1/schedules/%d" % sid).status, 200, where)
        self.assertEqual(self.d.get("/v1/health").status, 200)
        self.assertEqual(self.d.sql("PRAGMA integrity_check"), [("ok",)])
        return seen

    def test_storm(self):
        """Generated requests: never 5xx, every refusal a problem that changed nothing."""
        for seed in SEEDS:
            with self.subTest(seed=seed):
                seen = self.run_storm(seed)
                # the grammar must reach both sides: refusals, and requests that pass validation
                self.assertTrue(any(s < 300 for s in seen), seen)
                self.assertGreaterEqual(len([s for s in seen if 400 <= s < 500]), 4, seen)
                print("storm seed %d: %s" % (seed, ", ".join("%d x%d" % kv for kv in sorted(seen.items()))))


if __name__ == "__main__":
    import unittest
    unittest.main()
