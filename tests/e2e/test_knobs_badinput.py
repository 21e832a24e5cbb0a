"""Bad input to the knob and history resources: every case gets the right status and problem body
and leaves the knob files (generated tree, or the real /sys) and the database exactly as they were."""
import http.client
import json
import os
import socket
import subprocess

from faketree import FakeTree
from lib import DaemonTest, Response, real_file

THP = "sys/kernel/mm/transparent_hugepage/"
JSON = {"Content-Type": "application/json"}


class BadInputMixin:
    def files(self):
        raise NotImplementedError

    def refused(self, method, path, status, code=None, body=None, raw=None, headers=None):
        """Sends the request and asserts the problem, and that nothing changed anywhere."""
        before, db = self.files(), self.d.db_snapshot()
        if raw is not None and headers is None:
            headers = JSON
        if status in (413, 415):
            r = self.early_answer(method, path, raw, headers)
        else:
            r = self.d.request(method, path, body=body, raw=raw, headers=headers)
        self.assertProblem(r, status, code)
        self.assertEqual(self.files(), before, "%s %s %r changed a knob" % (method, path, body or raw))
        self.assertEqual(self.d.db_snapshot(), db, "%s %s %r wrote to the database" % (method, path, body or raw))
        return r

    def early_answer(self, method, path, raw, headers):
        """The router answers 413/415 from the headers and does not read the body, so the body is
        sent best-effort (a Unix socket keeps the answer readable after EPIPE)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(self.d.socket)
        try:
            head = "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\nConnection: close\r\n" % (
                method, path, len(raw))
            head += "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
            try:
                s.sendall(head.encode() + raw)
            except (BrokenPipeError, ConnectionResetError):
                pass
            r = http.client.HTTPResponse(s)
            r.begin()
            return Response(r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace"))
        finally:
            s.close()

    def test_malformed_json(self):
        for raw in (b'{"value":', b"{value: 1}", b'{"value":"never"} x', b"\xff\xfe", b"[]", b'"never"',
                    b'{"value":"never",}', b"{'value':'never'}"):
            code = "request.not_an_object" if raw == b"[]" else "request.malformed_json"
            self.refused("PUT", "/v1/knobs/thp.enabled", 400, code, raw=raw)
            self.refused("PATCH", "/v1/knobs", 400, None, raw=raw)
        self.refused("PUT", "/v1/knobs/thp.enabled", 400, "request.empty_body", raw=b"")
        # an integer beyond int64 is refused by the parser, not truncated
        self.refused("PUT", "/v1/knobs/vm.nr_overcommit_hugepages", 400, "request.malformed_json",
                     raw=b'{"value": 9223372036854775808}')

    def test_duplicate_keys(self):
        self.refused("PUT", "/v1/knobs/thp.enabled", 400, "request.duplicate_key",
                     raw=b'{"value":"never","value":"always"}')
        self.refused("PATCH", "/v1/knobs", 400, "request.duplicate_key",
                     raw=b'{"knobs":{"thp.enabled":"never","thp.enabled":"always"}}')

    def test_unknown_and_missing_fields(self):
        self.refused("PUT", "/v1/knobs/thp.enabled", 400, "request.unknown_field", {"value": "never", "force": True})
        self.refused("PATCH", "/v1/knobs", 400, "request.unknown_field", {"knobs": {"thp.enabled": "never"}, "x": 1})
        self.refused("PUT", "/v1/knobs/thp.enabled", 400, "request.missing_field", {})
        self.refused("PATCH", "/v1/knobs", 400, "request.missing_field", {"knob": {"thp.enabled": "never"}})
        self.refused("PATCH", "/v1/knobs", 400, "request.invalid", {"knobs": {}})

    def test_wrong_json_types(self):
        for v in (1, None, True, [], {}, 1.5):
            self.refused("PUT", "/v1/knobs/thp.enabled", 400, "request.wrong_type", {"value": v})
        for v in (1.5, "abc", "0x10", " 5", "5 ", "", None, True, [], {}, "1e3"):
            self.refused("PUT", "/v1/knobs/thp.khugepaged.max_ptes_none", 400, "request.wrong_type", {"value": v})
        for v in ("yes", "true", 0.0, None):
            self.refused("PUT", "/v1/knobs/thp.use_zero_page", 400, "request.wrong_type", {"value": v})
        for v in ([], "thp.enabled", 1, None):
            self.refused("PATCH", "/v1/knobs", 400, "request.wrong_type", {"knobs": v})
        self.refused("PATCH", "/v1/knobs", 400, "request.wrong_type", {"knobs": {"thp.enabled": 2}})

    def test_unknown_knob_and_path_like_names(self):
        for name in ("thp.nothing", "THP.ENABLED", "enabled", "%ff%fe", "..", "%2e%2e"):
            self.refused("GET", "/v1/knobs/" + name, 404)
            self.refused("PUT", "/v1/knobs/" + name, 404, None, {"value": "never"})
        # An escaped '/' is a separator smuggled into a segment: refused before routing.
        for name in ("..%2F..%2Fx", "thp.enabled%2F..%2F..%2Fx", "thp.enabled%00"):
            self.refused("GET", "/v1/knobs/" + name, 400, "request.bad_path")
            self.refused("PUT", "/v1/knobs/" + name, 400, "request.bad_path", {"value": "never"})
        for path in ("/v1/knobs/thp.enabled/../../x", "/v1/knobs/thp.enabled/x", "/v1/knobs/../health",
                     "/v1/knobs/%ff/x"):
            self.refused("PUT", path, 404, None, {"value": "never"})
        for name in ("thp.enabled/../../x", "thp.enabled/../../../../../etc/passwd",
                     "../../../kernel/mm/transparent_hugepage/enabled", "kernel/mm/transparent_hugepage/enabled",
                     "/sys/kernel/mm/transparent_hugepage/enabled", ""):
            r = self.refused("PATCH", "/v1/knobs", 404, "knob.unknown", {"knobs": {name: "never"}})
        self.assertIn("no knob", r.json["detail"])

    def test_value_not_allowed(self):
        for v in ("sometimes", "[never]", "never\n", "Never", "nev", "never ", "always madvise", "x" * 100):
            self.refused("PUT", "/v1/knobs/thp.enabled", 422, "knob.value_not_allowed", {"value": v})
        self.refused("PUT", "/v1/knobs/thp.defrag", 422, "knob.value_not_allowed", {"value": "inherit"})

    def test_number_out_of_range(self):
        for name, v in (("thp.khugepaged.max_ptes_none", 512), ("thp.khugepaged.max_ptes_none", -1),
                        ("thp.khugepaged.pages_to_scan", 0), ("thp.khugepaged.pages_to_scan", 4294967296),
                        ("vm.compaction_proactiveness", 101), ("vm.zone_reclaim_mode", 8),
                        ("numa.balancing", 4), ("thp.use_zero_page", 2), ("thp.use_zero_page", "2"),
                        ("thp.khugepaged.max_ptes_none", "99999999999999999999999")):
            self.refused("PUT", "/v1/knobs/" + name, 422, "knob.out_of_range", {"value": v})

    def test_patch_validates_everything_before_writing(self):
        # the first knob is fine; the second is not: nothing is written, nothing is recorded
        self.refused("PATCH", "/v1/knobs", 422, "knob.out_of_range",
                     {"knobs": {"thp.defrag": "defer", "thp.khugepaged.max_ptes_none": 512}})
        self.refused("PATCH", "/v1/knobs", 404, "knob.unknown",
                     {"knobs": {"thp.enabled": "never", "thp.nothing": 1}})
        self.refused("PATCH", "/v1/knobs", 422, "knob.value_not_allowed",
                     {"knobs": {"thp.khugepaged.max_ptes_swap": 1, "thp.enabled": "sometimes"}})

    def test_body_over_64k(self):
        big = {"knobs": {"thp.enabled": "never"}, "pad": "x" * (70 * 1024)}
        self.refused("PATCH", "/v1/knobs", 413, "request.too_large", raw=json.dumps(big).encode())
        self.refused("PUT", "/v1/knobs/thp.enabled", 413, "request.too_large",
                     raw=b'{"value":"' + b"n" * (65 * 1024) + b'"}')

    def test_wrong_content_type(self):
        body = b'{"value":"never"}'
        for ct in ("text/plain", "application/x-www-form-urlencoded", "application/jsonx"):
            self.refused("PUT", "/v1/knobs/thp.enabled", 415, "request.unsupported_media_type", raw=body,
                         headers={"Content-Type": ct})
        self.refused("PATCH", "/v1/knobs", 415, "request.unsupported_media_type",
                     raw=b'{"knobs":{"thp.enabled":"never"}}', headers={})

    def test_bad_query(self):
        self.refused("PUT", "/v1/knobs/thp.enabled?dry_run=maybe", 400, "request.bad_query", {"value": "never"})
        self.refused("PATCH", "/v1/knobs?forcibly=1", 400, "request.unknown_query", {"knobs": {"thp.enabled": "never"}})
        self.refused("GET", "/v1/knobs?name=thp.enabled", 400, "request.unknown_query")

    def test_wrong_method(self):
        r = self.refused("DELETE", "/v1/knobs/thp.enabled", 405, "request.method_not_allowed")
        self.assertEqual(r.headers.get("Allow"), "GET, HEAD, PUT")
        self.refused("POST", "/v1/history", 405)

    def test_unauthorised_caller(self):
        """A non-root uid outside the admin group may read but not change (raw HTTP via curl as nobody)."""
        def as_nobody(*args):
            return subprocess.run(["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups",
                                   "curl", "-sS", "--unix-socket", self.d.socket, "-w", "\n%{http_code}"]
                                  + list(args), capture_output=True, text=True, timeout=30)
        before, db = self.files(), self.d.db_snapshot()
        for args in (["-X", "PUT", "-H", "Content-Type: application/json", "-d", '{"value":"never"}',
                      "http://localhost/v1/knobs/thp.enabled"],
                     ["-X", "PATCH", "-H", "Content-Type: application/json", "-d",
                      '{"knobs":{"thp.enabled":"never"}}', "http://localhost/v1/knobs"],
                     ["-X", "PUT", "-H", "Content-Type: application/json", "-d", '{"value":"never"}',
                      "http://localhost/v1/knobs/thp.enabled?dry_run=true"]):
            p = as_nobody(*args)
            self.assertEqual(p.returncode, 0, p.stderr)
            body, status = p.stdout.rsplit("\n", 1)
            self.assertEqual(status, "403", p.stdout)
            self.assertEqual(json.loads(body)["code"], "auth.forbidden")
        p = as_nobody("http://localhost/v1/knobs/thp.enabled")
        self.assertEqual(p.stdout.rsplit("\n", 1)[1], "200", p.stdout)
        self.assertEqual(self.files(), before)
        self.assertEqual(self.d.db_snapshot(), db)


class KnobsBadInputFakeTest(BadInputMixin, DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    def files(self):
        return self.tree.snapshot()


class KnobsBadInputRealTest(BadInputMixin, DaemonTest):
    """The same against the real kernel: /sys must not move. (Run under flock /tmp/mpd-thp.lock when
    other tests may change THP at the same time.)"""
    WATCH = ["/sys/kernel/mm/transparent_hugepage/" + f for f in
             ("enabled", "defrag", "shmem_enabled", "use_zero_page", "khugepaged/defrag",
              "khugepaged/pages_to_scan", "khugepaged/max_ptes_none", "khugepaged/max_ptes_swap")] + \
            ["/proc/sys/vm/compaction_proactiveness", "/proc/sys/vm/zone_reclaim_mode", "/proc/sys/kernel/numa_balancing"]

    def files(self):
        return {p: real_file(p) for p in self.WATCH if os.path.exists(p)}
