"""schema/openapi.yaml cannot drift silently from the code:

* its paths and methods are exactly server/api/routes.c's table (a "{}" segment is any "{name}"),
  a route flagged R_ADMIN is marked x-requires-admin and may answer 403 (as may a route whose
  handler checks the caller itself, marked x-caller-checked), a route flagged R_BODY has
  a request body (and may answer 413/415), every path parameter is declared, every $ref resolves;
  R_CALLER is x-requires-caller; every operation declares who may call it (`security`: {} for the
  Unix socket's SO_PEERCRED caller, bearer for the TLS listener) and the TLS listener's 401/429;
  the probe route is a path per kind of server/probes' table, each body the members its parser
  takes; operations have descriptions, examples no placeholders, docs/reference/openapi.md the
  counts;
* live answers of a daemon on a generated tree (GETs of every resource, the change answers, and a
  few problems) are checked against the schema declared for their method, path and status: the
  content type, every member declared, every required member present, JSON types and enums, at
  every level where the schema lists properties; Location exactly where the spec declares it;
  tokens' answers too, and over TCP what runs as the caller is 403 before its body is read.

The spec is read by a small reader of the YAML subset it is written in (block mappings and
sequences, flow sequences of scalars, quoted and plain scalars, | and > blocks), so the test needs
no PyYAML; where PyYAML is installed, the reader's result must equal yaml.safe_load's."""
import http.client
import json
import os
import re
import socket
import time
import unittest

from faketree import FakeTree
from lib import DaemonTest, Response, free_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPEC = os.path.join(ROOT, "schema", "openapi.yaml")
ROUTES = os.path.join(ROOT, "server", "api", "routes.c")
METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")


# ---- a reader for the YAML subset schema/openapi.yaml is written in ------------------------------

class YamlSubsetError(ValueError):
    pass


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _blank(line):
    s = line.strip()
    return not s or s.startswith("#")


def _split_flow(text):
    """'a, "b, c", d' -> ['a', '"b, c"', 'd'] (commas inside quotes kept)."""
    out, cur, quote = [], "", None
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur += ch
        elif ch == ",":
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _scalar(text):
    t = text.strip()
    if t.startswith("'"):
        if not t.endswith("'") or len(t) < 2:
            raise YamlSubsetError("unterminated quote: %r" % t)
        return t[1:-1].replace("''", "'")
    if t.startswith('"'):
        return json.loads(t)
    if t.startswith("["):
        if not t.endswith("]"):
            raise YamlSubsetError("unterminated flow sequence: %r" % t)
        return [_scalar(x) for x in _split_flow(t[1:-1])]
    if t == "{}":
        return {}
    if t.startswith(("{", "&", "*", "!", "%", "@", "`")) or " #" in t:
        raise YamlSubsetError("outside the subset: %r" % t)
    if t in ("null", "~", ""):
        return None
    if t == "true":
        return True
    if t == "false":
        return False
    if re.fullmatch(r"-?[0-9]+", t):
        return int(t)
    if re.fullmatch(r"-?[0-9]+\.[0-9]+", t):
        return float(t)
    return t


def _split_key(content):
    """'key: rest' -> ('key', 'rest'); None when content is not a mapping entry."""
    if content[0] in "'\"":
        q = content[0]
        end = content.find(q, 1)
        while q == "'" and end + 1 < len(content) and content[end + 1] == "'":
            end = content.find(q, end + 2)
        if end < 0 or content[end + 1:end + 2] != ":":
            return None
        return _scalar(content[:end + 1]), content[end + 2:].strip()
    if content.startswith("["):
        return None
    m = re.match(r"([^:]+?):(?: (.*))?$", content)
    if not m:
        return None
    return m.group(1), (m.group(2) or "").strip()


class YamlSubset:
    def __init__(self, text):
        self.lines = text.split("\n")
        self.i = 0

    def load(self):
        self._skip()
        doc = self._block(_indent(self.lines[self.i]))
        self._skip()
        if self.i < len(self.lines):
            raise YamlSubsetError("line %d: unexpected indentation" % (self.i + 1))
        return doc

    def _skip(self):
        while self.i < len(self.lines) and _blank(self.lines[self.i]):
            self.i += 1

    def _block(self, ind):
        content = self.lines[self.i].strip()
        if content == "-" or content.startswith("- "):
            return self._seq(ind)
        return self._map(ind)

    def _map(self, ind):
        d = {}
        while True:
            self._skip()
            if self.i >= len(self.lines):
                return d
            line = self.lines[self.i]
            if _indent(line) < ind:
                return d
            if _indent(line) > ind:
                raise YamlSubsetError("line %d: unexpected indentation" % (self.i + 1))
            kv = _split_key(line.strip())
            if not kv:
                if line.strip().startswith("-"):
                    return d
                raise YamlSubsetError("line %d: not a mapping entry" % (self.i + 1))
            key, rest = kv
            if key in d:
                raise YamlSubsetError("line %d: duplicate key %r" % (self.i + 1, key))
            self.i += 1
            d[key] = self._value(rest, ind)

    def _seq(self, ind):
        out = []
        while True:
            self._skip()
            if self.i >= len(self.lines):
                return out
            line = self.lines[self.i]
            content = line.strip()
            if _indent(line) != ind or not (content == "-" or content.startswith("- ")):
                if _indent(line) > ind:
                    raise YamlSubsetError("line %d: unexpected indentation" % (self.i + 1))
                return out
            after = content[1:].strip()
            if not after:
                self.i += 1
                self._skip()
                out.append(self._block(_indent(self.lines[self.i])))
            elif _split_key(after):
                # "- key: value" opens a mapping whose keys sit two columns in
                self.lines[self.i] = " " * (ind + 2) + after
                out.append(self._map(ind + 2))
            else:
                self.i += 1
                out.append(self._value(after, ind))

    def _value(self, rest, ind):
        if rest == "":
            self._skip()
            if self.i < len(self.lines) and _indent(self.lines[self.i]) > ind:
                return self._block(_indent(self.lines[self.i]))
            return None
        if rest[0] in "|>":
            return self._block_scalar(rest, ind)
        if rest.startswith("["):
            while rest.count("[") > rest.count("]"):
                if self.i >= len(self.lines):
                    raise YamlSubsetError("unterminated flow sequence")
                rest += " " + self.lines[self.i].strip()
                self.i += 1
        return _scalar(rest)

    def _block_scalar(self, header, ind):
        if header not in ("|", "|-", ">", ">-"):
            raise YamlSubsetError("block scalar header %r outside the subset" % header)
        raw = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and _indent(line) <= ind:
                break
            raw.append(line)
            self.i += 1
        while raw and not raw[-1].strip():
            raw.pop()
        if not raw:
            return ""
        bi = min(_indent(x) for x in raw if x.strip())
        body = [x[bi:] if x.strip() else "" for x in raw]
        if header[0] == "|":
            text = "\n".join(body)
        else:
            text, prev_blank = "", True
            for x in body:
                if not x:
                    text += "\n"
                    prev_blank = True
                elif x.startswith(" "):
                    raise YamlSubsetError("more-indented lines in a folded block are outside the subset")
                else:
                    text += ("" if prev_blank else " ") + x
                    prev_blank = False
        return text if header.endswith("-") else text + "\n"


def load_spec():
    with open(SPEC) as f:
        return YamlSubset(f.read()).load()


# ---- the route table ----------------------------------------------------------------------------

ROUTE_RE = re.compile(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,\s*(\w+)\s*,\s*([^}]*?)\s*\}')


def load_routes():
    """[(method, pattern with {} segments, handler, set of flags)] from routes.c's table."""
    with open(ROUTES) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    m = re.search(r"api_routes\[\]\s*=\s*\{(.*?)\n\};", text, re.S)
    if not m:
        raise AssertionError("no api_routes table in " + ROUTES)
    routes = []
    for method, pattern, fn, flags in ROUTE_RE.findall(m.group(1)):
        routes.append((method, pattern, fn, {f.strip() for f in flags.split("|")} - {"0", ""}))
    return routes


def normalise(path):
    return re.sub(r"\{[^}/]*\}", "{}", path)


PROBES = os.path.join(ROOT, "server", "probes")
PROBE_ROUTE = "/v1/probes/{}"


def load_probe_kinds():
    """{kind: set of the parser's own member names} from server/probes/*.c: each kind's
    `.name = "..."` and the `struct probe_param` table its entry names (`.params = TABLE`), the
    one list the parser refuses any other member by (probe_params_only) and GET /v1/probes lists."""
    kinds = {}
    for f in sorted(os.listdir(PROBES)):
        if not f.endswith(".c"):
            continue
        with open(os.path.join(PROBES, f)) as fh:
            text = re.sub(r"/\*.*?\*/", "", fh.read(), flags=re.S)
        m = re.search(r'\.name\s*=\s*"([^"]+)"', text)
        if not m:
            continue
        t = re.search(r"\.params\s*=\s*(\w+)", text)
        if not t:
            raise AssertionError("%s: the kind %s names no parameter table (.params)" % (f, m.group(1)))
        body = re.search(r"\bstruct\s+probe_param\s+%s\[\]\s*=\s*\{(.*?)\};" % t.group(1), text, re.S)
        if not body:
            raise AssertionError("%s: no struct probe_param %s[] table" % (f, t.group(1)))
        kinds[m.group(1)] = set(re.findall(r'\{\s*"([^"]+)"\s*,', body.group(1)))
    return kinds


def route_of(path, patterns):
    """The route pattern a spec path stands for: its own with {} segments, or for a path the spec
    spells out per value (POST /v1/probes/touch, a body per kind) the pattern it is a value of."""
    n = normalise(path)
    if n in patterns:
        return n
    for pat in patterns:
        if "{}" in pat and re.match("^" + re.escape(pat).replace(r"\{\}", "[^/{}]+") + "$", n):
            return pat
    return n


# ---- a subset validator over the parsed spec -----------------------------------------------------

JSON_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class SchemaMismatch(AssertionError):
    pass


class Validator:
    def __init__(self, spec):
        self.spec = spec

    def resolve(self, node):
        seen = 0
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/"):
                raise SchemaMismatch("external $ref %s" % ref)
            node = self.spec
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            seen += 1
            if seen > 20:
                raise SchemaMismatch("$ref loop at %s" % ref)
        return node

    def flatten(self, schema):
        """The schema with allOf merged in: (types, enum, properties, required, items, extra)."""
        schema = self.resolve(schema)
        parts = [schema] + [self.flatten_raw(s) for s in schema.get("allOf", [])]
        types, props, required, enum, items, addl = None, {}, set(), None, None, None
        for p in parts:
            if "type" in p:
                t = p["type"] if isinstance(p["type"], list) else [p["type"]]
                types = t if types is None else [x for x in types if x in t]
            props.update(p.get("properties", {}))
            required |= set(p.get("required", []))
            if "enum" in p:
                enum = p["enum"]
            if "items" in p:
                items = p["items"]
            if isinstance(p.get("additionalProperties"), dict):
                addl = p["additionalProperties"]
        return {"types": types, "props": props, "required": required, "enum": enum, "items": items,
                "addl": addl, "oneOf": schema.get("oneOf"), "anyOf": schema.get("anyOf"),
                "has_props": any("properties" in p for p in parts)}

    def flatten_raw(self, schema):
        s = self.flatten(schema)
        out = {"properties": s["props"], "required": sorted(s["required"])}
        if s["types"] is not None:
            out["type"] = s["types"]
        if s["enum"] is not None:
            out["enum"] = s["enum"]
        if s["items"] is not None:
            out["items"] = s["items"]
        if s["addl"] is not None:
            out["additionalProperties"] = s["addl"]
        if not s["has_props"]:
            out.pop("properties")
        return out

    def check(self, value, schema, where="$"):
        s = self.flatten(schema)
        alts = s["oneOf"] or s["anyOf"]
        if alts:
            errors = []
            for alt in alts:
                try:
                    self.check(value, alt, where)
                    break
                except SchemaMismatch as e:
                    errors.append(str(e))
            else:
                raise SchemaMismatch("%s: matches none of the alternatives: %s" % (where, "; ".join(errors)))
        if s["types"] is not None and not any(JSON_TYPES[t](value) for t in s["types"]):
            raise SchemaMismatch("%s: %r is not of type %s" % (where, value, s["types"]))
        if s["enum"] is not None and value not in s["enum"]:
            raise SchemaMismatch("%s: %r is not one of %s" % (where, value, s["enum"]))
        if isinstance(value, dict):
            if s["has_props"]:
                for k in value:
                    if k not in s["props"]:
                        raise SchemaMismatch("%s: member %r is not declared" % (where, k))
            for k in s["required"]:
                if k not in value:
                    raise SchemaMismatch("%s: required member %r is missing" % (where, k))
            for k, v in value.items():
                if k in s["props"]:
                    self.check(v, s["props"][k], "%s.%s" % (where, k))
                elif s["addl"] is not None:
                    self.check(v, s["addl"], "%s.%s" % (where, k))
        if isinstance(value, list) and s["items"] is not None:
            for i, v in enumerate(value):
                self.check(v, s["items"], "%s[%d]" % (where, i))


def instant_text(ns):
    """What the daemon writes beside an instant: RFC 3339 UTC with nine fraction digits."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + ".%09dZ" % (ns % 10**9)


def check_instants(value, where="$"):
    """The rule of docs/DESIGN.md "Time in answers": an *_ns past 2^53 (an instant: no duration
    comes near it) has its *_at beside it, and every *_at is exactly its *_ns as text (or null beside
    null). Returns how many instants it saw, so a caller can tell that it looked at some."""
    seen = 0
    if isinstance(value, list):
        for i, v in enumerate(value):
            seen += check_instants(v, "%s[%d]" % (where, i))
    elif isinstance(value, dict):
        for k, v in value.items():
            seen += check_instants(v, "%s.%s" % (where, k))
            if k.endswith("_ns") and isinstance(v, int) and v >= 2**53:
                if k[:-3] + "_at" not in value:
                    raise SchemaMismatch("%s.%s: an instant without %s_at" % (where, k, k[:-3]))
                seen += 1
            if k.endswith("_at"):
                ns = value.get(k[:-3] + "_ns", "absent")
                if ns == "absent":
                    raise SchemaMismatch("%s.%s: no %s_ns beside it" % (where, k, k[:-3]))
                want = None if ns is None else instant_text(ns)
                if v != want:
                    raise SchemaMismatch("%s.%s: %r, want %r" % (where, k, v, want))
    return seen


def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


# ---- static checks ------------------------------------------------------------------------------

class SpecMatchesRouteTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spec = load_spec()
        cls.routes = load_routes()
        cls.v = Validator(cls.spec)

    def operations(self):
        for path, item in self.spec["paths"].items():
            for m, op in item.items():
                if m in METHODS:
                    yield path, m.upper(), item, op

    def test_reader_agrees_with_pyyaml_when_installed(self):
        try:
            import yaml
        except ImportError:
            self.skipTest("PyYAML is not installed; the subset reader is checked by the other tests")
        with open(SPEC) as f:
            self.assertEqual(yaml.safe_load(f), self.spec)

    def test_route_table_was_read(self):
        # The parser must see the table, or the comparison below would compare two empty sets.
        self.assertGreaterEqual(len(self.routes), 20)
        self.assertIn(("GET", "/v1/health"), {(m, p) for m, p, _, _ in self.routes})

    def test_paths_and_methods_are_the_route_table(self):
        code = {(m, p) for m, p, _, _ in self.routes}
        patterns = {p for _, p, _, _ in self.routes}
        spec = {(m, route_of(p, patterns)) for p, m, _, _ in self.operations()}
        self.assertEqual(sorted(code - spec), [], "routes in routes.c missing from openapi.yaml")
        self.assertEqual(sorted(spec - code), [], "operations in openapi.yaml that routes.c does not have")
        self.assertEqual(len(code), len(self.routes), "routes.c lists a method + pattern twice")

    def test_probe_paths_are_the_probe_table_and_their_bodies_its_parsers(self):
        # POST /v1/probes/{kind} is one path per kind, so that a generated client types each body:
        # the kinds are server/probes' table, and each body declares exactly what the kind's
        # parser takes beside the framework's common members.
        kinds = load_probe_kinds()
        self.assertGreaterEqual(len(kinds), 7, kinds)
        probe_paths = {p[len("/v1/probes/"):]: item for p, item in self.spec["paths"].items()
                       if p.startswith("/v1/probes/")}
        self.assertEqual(sorted(probe_paths), sorted(kinds))
        common = set(self.v.flatten({"$ref": "#/components/schemas/ProbeCommon"})["props"])
        self.assertEqual(common, {"policy", "cpus", "cpunodes", "timeout_s"})
        for kind, item in probe_paths.items():
            body = item["post"]["requestBody"]["content"]["application/json"]
            schema = self.v.resolve(body["schema"])
            self.assertIs(schema.get("unevaluatedProperties"), False, kind + ": the body is closed")
            props = set(self.v.flatten(schema)["props"])
            # (a common member a parser also names, hugetlb-alloc's timeout_s, never reaches it:
            # the framework takes it first)
            self.assertEqual(props - common, kinds[kind] - common, kind + ": the parser's members")
            self.v.check(body["example"], schema, kind + " example")
            with self.assertRaises(SchemaMismatch):
                self.v.check(dict(body["example"], size_mb=64), schema, kind)

    def test_admin_and_body_flags(self):
        patterns = {p for _, p, _, _ in self.routes}
        ops = {}
        for p, m, _, op in self.operations():
            ops.setdefault((m, route_of(p, patterns)), []).append(op)
        for method, pattern, fn, flags in self.routes:
            for op in ops.get((method, pattern), []):   # none: test_paths_and_methods_are_the_route_table names it
                self.check_flags(method, pattern, fn, flags, op)

    def check_flags(self, method, pattern, fn, flags, op):
        where = "%s %s (%s)" % (method, pattern, fn)
        admin = "R_ADMIN" in flags
        self.assertEqual(bool(op.get("x-requires-admin")), admin, where + ": x-requires-admin vs R_ADMIN")
        caller = "R_CALLER" in flags
        self.assertEqual(bool(op.get("x-requires-caller")), caller, where + ": x-requires-caller vs R_CALLER")
        # Who may call it, as a generated client reads it: {} is the Unix socket (SO_PEERCRED),
        # bearer the TLS listener; what runs as the caller and the tokens' own routes are the
        # socket's only.
        socket_only = caller or pattern.startswith("/v1/tokens")
        want = [{}] if socket_only else [{}, {"bearer": []}, {"bearer": [], "clientCertificate": []}]
        self.assertEqual(op.get("security"), want, where + ": security")
        # The TLS listener answers these on any path, before routing.
        for st, ref in (("401", "Unauthenticated"), ("429", "RateLimited")):
            self.assertEqual(op["responses"].get(st), {"$ref": "#/components/responses/" + ref}, where + ": " + st)
        # A route open to every caller may still refuse some (a launch naming another user):
        # its handler decides, and the spec says so with x-caller-checked. Any other read's
        # 403 is the TLS listener's client certificate alone.
        refuses = admin or caller or bool(op.get("x-caller-checked"))
        self.assertEqual(op["responses"].get("403") != {"$ref": "#/components/responses/ClientCertificateForbidden"},
                         refuses, where + ": 403 beyond auth.client_certificate iff R_ADMIN, R_CALLER or x-caller-checked")
        body = "R_BODY" in flags
        self.assertEqual("requestBody" in op, body, where + ": requestBody vs R_BODY")
        self.assertEqual("415" in op["responses"], body, where + ": 415 iff R_BODY")
        # What the router answers on any route is declared on every operation, not only in an
        # x- extension that generated clients ignore: 405 (another method of the path), 413 (a
        # Content-Length over 64 KiB), 414 (a URL over 1 KiB).
        for st, ref in (("405", "MethodNotAllowed"), ("413", "ContentTooLarge"), ("414", "UriTooLong")):
            self.assertEqual(op["responses"].get(st), {"$ref": "#/components/responses/" + ref}, where + ": " + st)
        if body:
            self.assertIn("application/json", op["requestBody"]["content"], where)

    def test_path_parameters_are_declared(self):
        for path, m, item, op in self.operations():
            params = [self.v.resolve(p) for p in item.get("parameters", []) + op.get("parameters", [])]
            declared = {p["name"] for p in params if p["in"] == "path"}
            self.assertEqual(declared, set(re.findall(r"\{([^}]+)\}", path)), "%s %s" % (m, path))

    def test_every_ref_resolves_and_ids_are_unique(self):
        for ref in set(refs(self.spec)):
            self.assertIsInstance(self.v.resolve({"$ref": ref}), dict, ref)
        ids = [op["operationId"] for _, _, _, op in self.operations()]
        self.assertEqual(len(ids), len(set(ids)))

    def test_errors_are_problems_and_successes_json(self):
        for path, m, _, op in self.operations():
            for status, resp in op["responses"].items():
                resp = self.v.resolve(resp)
                ctypes = set(resp.get("content", {}))
                want = {"application/problem+json"} if int(status) >= 400 else {"application/json"}
                if path == "/metrics" and int(status) < 400:   # the Prometheus formats
                    want = {"text/plain", "application/openmetrics-text"}
                self.assertEqual(ctypes, want, "%s %s %s" % (m, path, status))

    def test_every_instant_has_its_text_beside_it(self):
        # The time rule in the description: X_at is declared exactly beside an X_ns, as a date-time,
        # nullable exactly when X_ns is, and required exactly when X_ns is; and every member the
        # daemon treats as an instant (server/api/instants.c) has its X_at, and says to read it.
        pairs = 0
        with open(os.path.join(ROOT, "server", "api", "instants.c")) as f:
            listed = re.search(r"instants\[\]\s*=\s*\{(.*?)\};", f.read(), re.S).group(1)
        instants = set(re.findall(r'"(\w+_ns)"', listed))
        self.assertIn("expires_ns", instants)

        def walk(node, where):
            nonlocal pairs
            if isinstance(node, dict):
                props = node.get("properties")
                if isinstance(props, dict):
                    req = set(node.get("required", []))
                    for k, v in props.items():
                        if k in instants:
                            self.assertIn(k[:-3] + "_at", props, "%s.%s: an instant without its _at" % (where, k))
                            self.assertIn(k[:-3] + "_at", v.get("description", ""), "%s.%s: says to read" % (where, k))
                        if not k.endswith("_at"):
                            continue
                        ns = props.get(k[:-3] + "_ns")
                        self.assertIsNotNone(ns, "%s.%s: no %s_ns beside it" % (where, k, k[:-3]))
                        self.assertEqual(v.get("format"), "date-time", "%s.%s" % (where, k))
                        self.assertEqual("null" in str(v["type"]), "null" in str(ns["type"]), "%s.%s" % (where, k))
                        self.assertEqual(k in req, k[:-3] + "_ns" in req, "%s.%s required" % (where, k))
                        pairs += 1
                for k, v in node.items():
                    walk(v, where + "." + k)
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, "%s[%d]" % (where, i))
        walk(self.spec, "$")
        self.assertGreaterEqual(pairs, 10)

    def test_every_response_and_path_parameter_has_an_example_of_its_schema(self):
        # A generated client's tests, a mock server (Prism) and Dredd run on examples: each
        # response's media type has one, valid against its schema (tools/spec-examples.py writes
        # them from a live daemon's answers), and each path parameter and required query
        # parameter has one, so that a tool can call every operation from the description alone.
        seen = set()
        for path, m, item, op in self.operations():
            for status, resp in op["responses"].items():
                name = resp.get("$ref", "%s %s %s" % (m, path, status))
                if name in seen:
                    continue
                seen.add(name)
                for ctype, media in self.v.resolve(resp).get("content", {}).items():
                    where = "%s (%s)" % (name, ctype)
                    self.assertIn("example", media, where + ": no example")
                    if ctype.endswith("json"):
                        try:
                            self.v.check(media["example"], media["schema"], where)
                        except SchemaMismatch as e:
                            self.fail(str(e))
                    else:
                        self.assertIsInstance(media["example"], str, where)
            for prm in item.get("parameters", []) + op.get("parameters", []):
                prm = self.v.resolve(prm)
                if prm["in"] == "path" or prm.get("required"):
                    self.assertIn("example", prm, "%s %s: parameter %s" % (m, path, prm["name"]))
        self.assertGreater(len(seen), 40)

    def test_every_operation_says_what_it_does_and_examples_are_no_placeholders(self):
        # A generated client's documentation is these descriptions; an example a tool filled in
        # from the schema alone ("path": "path") shows a client nothing it could get. A value the
        # schema there chooses from a closed list is not one: GET /v1/probes' "size": "size" is
        # the parameter size's type, one of ProbeList's enum.
        placeholders = []

        def sub(schema, key=None):
            """The schema of member key (or of the items, key None) under schema; None unknown."""
            if schema is None:
                return None
            s = self.v.flatten(schema)
            if key is None:
                return s["items"]
            return s["props"].get(key, s["addl"])

        def chosen(schema, x):
            return schema is not None and x in (self.v.flatten(schema)["enum"] or [])

        def walk(v, schema, where):
            if isinstance(v, dict):
                for k, x in v.items():
                    if isinstance(x, str) and x == k and not chosen(sub(schema, k), x):
                        placeholders.append("%s.%s" % (where, k))
                    walk(x, sub(schema, k), "%s.%s" % (where, k))
            elif isinstance(v, list):
                for i, x in enumerate(v):
                    if isinstance(x, str) and where.endswith("." + x) and not chosen(sub(schema), x):
                        placeholders.append("%s[%d]" % (where, i))
                    walk(x, sub(schema), "%s[%d]" % (where, i))
        for path, m, _, op in self.operations():
            self.assertTrue(op.get("description", "").strip(), "%s %s has no description" % (m, path))
            for status, resp in op["responses"].items():
                for ctype, media in self.v.resolve(resp).get("content", {}).items():
                    walk(media.get("example"), media.get("schema"), "%s %s %s" % (m, path, status))
        self.assertEqual(placeholders, [])
        # The exemption is the enum's alone: the same value where the schema lists no choice is one.
        walk({"params": {"size": "size"}}, {"type": "object", "properties": {"params": {
            "type": "object", "additionalProperties": {"type": "string"}}}}, "self-check")
        self.assertEqual(placeholders, ["self-check.params.size"])

    def test_the_reference_page_counts_what_is_here(self):
        # docs/reference/openapi.md says how many routes, operations and paths this file has.
        with open(os.path.join(ROOT, "docs", "reference", "openapi.md")) as f:
            m = re.search(r"all (\d+) routes of its table as (\d+) operations on (\d+) paths", f.read())
        self.assertIsNotNone(m, "docs/reference/openapi.md no longer counts the routes")
        ops = sum(1 for _ in self.operations())
        self.assertEqual(tuple(map(int, m.groups())), (len(self.routes), ops, len(self.spec["paths"])))

    def test_validator_refuses_what_it_should(self):
        # The live checks below are only as good as this.
        v = self.v
        health = {"$ref": "#/components/schemas/Health"}
        good = {"status": "ok", "privileged_helper": "running", "version": "1", "kernel_release": "6",
                "schema_version": 4, "profile": {"name": None, "state": "none", "reasons": []},
                "capabilities": {"thp": True, "mthp_sizes": [], "hugetlb_sizes": ["2M"],
                                 "weighted_interleave": False, "numa_balancing": True,
                                 "madv_collapse": True, "cgroup_version": 2}}
        v.check(good, health)
        for bad in (dict(good, extra=1), {k: x for k, x in good.items() if k != "version"},
                    dict(good, schema_version="4"), dict(good, status="down"), dict(good, privileged_helper="gone"),
                    dict(good, capabilities=dict(good["capabilities"], thp=1)),
                    dict(good, capabilities=dict(good["capabilities"], hugetlb_sizes=[2048]))):
            with self.assertRaises(SchemaMismatch):
                v.check(bad, health)
        op = {"$ref": "#/components/schemas/Operation"}   # allOf of the summary and the rest
        with self.assertRaises(SchemaMismatch):
            v.check({"id": 1}, op)


# ---- live answers --------------------------------------------------------------------------------

KHP = "sys/kernel/mm/transparent_hugepage/khugepaged/"


class SpecDaemonTest(DaemonTest):
    """A daemon on a generated 4-node tree, and answers checked against the spec. No tests here."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.spec = load_spec()
        cls.v = Validator(cls.spec)
        cls.templates = []
        for path in cls.spec["paths"]:
            rx = "^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(path)) + "$"
            cls.templates.append((path.count("{"), path, re.compile(rx)))
        cls.templates.sort()
        cls.instants = 0

    def operation(self, method, url):
        """(template, operation); operation is None for a method the path does not have, template
        None for a path the spec does not have."""
        path = url.split("?")[0]
        for _, template, rx in self.templates:   # literal segments win, as in the router
            if rx.match(path):
                return template, self.spec["paths"][template].get(method.lower())
        return None, None

    def call(self, method, url, body=None, status=200):
        """The request, and its answer checked against the spec's response for that status: the
        operation's own, or for a path or method the spec lacks, the router's (404, 405)."""
        r = self.d.request(method, url, body=body)
        self.assertEqual(r.status, status, r.raw)
        template, op = self.operation(method, url)
        if op is None:
            self.assertEqual(r.status, 404 if template is None else 405, "%s %s" % (method, url))
            resp = self.spec["x-router-responses"][str(r.status)]
        else:
            resp = op["responses"].get(str(r.status))
        self.assertIsNotNone(resp, "%s %s answered %d, which the spec does not list" % (method, template, r.status))
        resp = self.v.resolve(resp)
        ctype = r.content_type.split(";")[0].strip()
        self.assertIn(ctype, resp.get("content", {}), "%s %s %d" % (method, template, r.status))
        try:
            self.v.check(r.json, resp["content"][ctype]["schema"], "%s %s %d" % (method, template, r.status))
        except SchemaMismatch as e:
            self.fail("%s\nanswer: %s" % (e, r.raw[:2000]))
        try:
            self.instants += check_instants(r.json, "%s %s" % (method, template))
        except SchemaMismatch as e:
            self.fail("%s\nanswer: %s" % (e, r.raw[:2000]))
        declared = {h.lower() for h in resp.get("headers", {})}
        for h in ("location", "allow"):
            present = any(k.lower() == h for k in r.headers)
            self.assertEqual(present, h in declared, "%s %s %d: header %s" % (method, template, r.status, h))
        return r

    def schema(self, op, status, ctype):
        return self.v.resolve(op["responses"][str(status)])["content"][ctype]["schema"]

    def wait_job(self, job_id):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            job = self.call("GET", "/v1/jobs/%d" % job_id).json
            if job["status"] not in ("queued", "running"):
                return job
            time.sleep(0.05)
        self.fail("job %d did not end" % job_id)


class LiveAnswersMatchSpec(SpecDaemonTest):

    def test_metrics_answers_a_declared_text_type(self):
        # Not JSON, so call() cannot check it: its Content-Type must be one the spec declares.
        content = self.spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
        for accept, want in ((None, "text/plain"), ("application/openmetrics-text", "application/openmetrics-text")):
            r = self.d.request("GET", "/metrics", headers={"Accept": accept} if accept else None)
            self.assertEqual(r.status, 200, r.raw)
            ctype = r.content_type.split(";")[0].strip()
            self.assertEqual(ctype, want)
            self.assertIn(ctype, content)

    def test_reads_changes_and_their_records(self):
        # Every resource before this test adds to it.
        for url in ("/v1/health", "/v1/topology", "/v1/knobs", "/v1/knobs/thp.enabled",
                    "/v1/knobs/thp.khugepaged.pages_to_scan", "/v1/history", "/v1/history/stats",
                    "/v1/hugepages", "/v1/hugepages/2M", "/v1/hugepages/1G/availability?count=1",
                    "/v1/hugepages/2M/availability?count=3&node=0", "/v1/jobs", "/v1/schedules"):
            self.call("GET", url)

        # A knob change, its dry run, and its record.
        knob = "/v1/knobs/thp.khugepaged.pages_to_scan"
        old = self.call("GET", knob).json["value"]
        self.addCleanup(self.d.request, "PUT", knob, body={"value": old})
        self.call("PUT", knob + "?dry_run=true", {"value": 1024})
        op = self.call("PUT", knob, {"value": 1024}).json
        self.call("PATCH", "/v1/knobs", {"knobs": {"thp.khugepaged.pages_to_scan": "2048",
                                                   "thp.defrag": "defer", "thp.use_zero_page": True}})
        self.call("PATCH", "/v1/knobs", {"knobs": {"thp.defrag": "madvise"}})
        # Each operation says what changed, in the list and in full alike.
        one = self.call("GET", "/v1/history/%d" % op["operation_id"]).json
        self.assertEqual(one["summary"], "thp.khugepaged.pages_to_scan %s→1024" % old)
        listed = self.call("GET", "/v1/history?kind=knobs.set&limit=3").json["operations"]
        self.assertEqual(listed[2]["id"], op["operation_id"])
        self.assertEqual(listed[2]["summary"], one["summary"])
        self.assertTrue(listed[1]["summary"].startswith("thp.khugepaged.pages_to_scan 1024→2048, thp.defrag "),
                        listed[1]["summary"])
        self.assertEqual(listed[0]["summary"], "thp.defrag defer→madvise")
        page = self.call("GET", "/v1/history?kind=knobs.set&limit=1").json
        self.assertIsNotNone(page["next_cursor"])
        self.call("GET", "/v1/history?kind=knobs.set&limit=1&cursor=" + page["next_cursor"])
        self.call("GET", "/v1/history?limit=1&cursor=" + page["next_cursor"], status=400)   # cursor_mismatch

        # A resize: its dry-run plan, the 202 job (with Location), the finished job, its record,
        # the statistics it feeds.
        self.call("PUT", "/v1/hugepages/2M", {"nodes": {"0": 3}, "dry_run": True})
        job = self.call("PUT", "/v1/hugepages/2M", {"nodes": {"0": 3, "1": 2}, "batch": 2}, status=202).json
        self.addCleanup(self.d.request, "PUT", "/v1/hugepages/2M", body={"nodes": {"0": 0, "1": 0}})
        done = self.wait_job(job["id"])
        self.assertEqual(done["status"], "ok", done)
        rec = self.call("GET", "/v1/history/%d" % done["operation_id"]).json
        self.assertEqual(rec["summary"], "2M node0 +3 ok, node1 +2 ok")
        stats = self.call("GET", "/v1/history/stats?size=2M&node=0").json
        self.assertEqual(stats["count"], 2)
        self.call("GET", "/v1/hugepages/2M")
        self.call("GET", "/v1/jobs?kind=hugepages.resize&limit=5")
        self.call("GET", "/v1/hugepages/2M/availability?count=100000&node=1")
        # A finished job cannot be cancelled: a 409 problem.
        self.call("DELETE", "/v1/jobs/%d" % job["id"], status=409)

        # A schedule: 201 with Location, list, one, delete.
        s = self.call("POST", "/v1/schedules", {"cron": "0 2 * * *", "timezone": "+02:00",
                                                "action": {"hugepages": {"size": "2M", "total": 4}}},
                      status=201).json
        self.call("GET", "/v1/schedules")
        self.call("GET", "/v1/schedules/%d" % s["id"])
        self.call("DELETE", "/v1/schedules/%d" % s["id"])
        # call() checked the time rule on every answer above; it must have had instants to check
        self.assertGreater(self.instants, 10)

    def test_token_answers_and_their_instants(self):
        # root on the Unix socket: what the TLS listener's tokens look like, made, listed, used
        # (never here: last_used stays null) and revoked; each answer against Token's schema,
        # whose _at members are required beside their _ns, null beside null.
        made = self.call("POST", "/v1/tokens", {"name": "spec", "scope": "read", "expires_in_s": 3600},
                         status=201).json
        self.addCleanup(self.d.request, "DELETE", "/v1/tokens/spec")
        self.assertEqual(made["expires_at"], instant_text(made["expires_ns"]))
        self.assertIsNone(made["last_used_at"])
        forever = self.call("POST", "/v1/tokens", {"name": "spec-forever", "scope": "admin"}, status=201).json
        self.addCleanup(self.d.request, "DELETE", "/v1/tokens/spec-forever")
        self.assertEqual((forever["expires_ns"], forever["expires_at"]), (None, None))
        self.call("DELETE", "/v1/tokens/spec")
        items = {t["name"]: t for t in self.call("GET", "/v1/tokens").json["items"]}
        self.assertEqual(items["spec"]["revoked_at"], instant_text(items["spec"]["revoked_ns"]))
        self.assertIsNone(items["spec-forever"]["revoked_at"])

    def test_a_probe_start_and_its_refusals(self):
        # Each kind's own path in the description; the daemon's one route answers them all.
        job = self.call("POST", "/v1/probes/touch", {"size": "4M", "timeout_s": 30}, status=202).json
        done = self.wait_job(job["id"])
        self.assertEqual(done["status"], "ok", done)
        self.call("GET", "/v1/history/%d" % done["operation_id"])
        self.call("POST", "/v1/probes/thp-fault", {"size_mb": 64}, status=400)          # unknown member
        self.call("POST", "/v1/probes/thp-fault", {"size": "3M"}, status=422)           # not whole 2 MiB
        self.call("POST", "/v1/probes/hugetlb-alloc", {"page_size": "2M"}, status=400)  # pages is required

    def test_a_kernel_refusal_carries_the_operation(self):
        rel = KHP + "pages_to_scan"
        self.tree.einval(rel)
        self.addCleanup(self.tree.write, rel, "4096")
        r = self.call("PATCH", "/v1/knobs", {"knobs": {"thp.defrag": "defer", "thp.khugepaged.pages_to_scan": 4096}},
                      status=422)
        for k in ("operation_id", "operation_status", "changes", "errno", "errno_name", "instance"):
            self.assertIn(k, r.json)
        self.call("GET", "/v1/history/%d" % r.json["operation_id"])

    def test_problems_of_the_router_and_the_handlers(self):
        self.call("GET", "/v1/knobs/thp.nothing", status=404)
        self.call("GET", "/v1/jobs/x", status=404)
        self.call("GET", "/v1/topology?x=1", status=400)
        self.call("GET", "/v1/hugepages/2M/availability", status=400)
        self.call("GET", "/v1/history/stats?kind=knobs.set", status=422)
        self.call("PUT", "/v1/hugepages/2M", {"total": 1, "nodes": {"0": 1}}, status=400)
        self.call("POST", "/v1/schedules", {"cron": "61 * * * *", "action": {"hugepages": {"size": "2M", "total": 1}}},
                  status=422)
        self.call("GET", "/v1/knobs/" + "a" * 1100, status=414)
        r = self.d.request("GET", "/v1/health", headers={"Content-Length": str(64 * 1024 + 1)}, raw=b"")
        self.assertProblem(r, 413, "request.too_large")
        self.v.check(r.json, self.schema(self.spec["paths"]["/v1/health"]["get"], 413, "application/problem+json"))
        r = self.call("DELETE", "/v1/knobs", status=405)
        self.assertEqual(r.headers.get("Allow"), "GET, HEAD, PATCH")
        self.call("GET", "/v1/nothing", status=404)



class TcpListenerIsReadOnly(SpecDaemonTest):
    """What the spec says of the TCP listener: the same API, reads only (the caller is unknown)."""

    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.daemon_args = ("--listen-tcp", "127.0.0.1:%d" % cls.port)
        super().setUpClass()

    def tcp(self, method, url, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request(method, url, body=json.dumps(body).encode() if body is not None else None,
                      headers={"Content-Type": "application/json"} if body is not None else {})
            r = c.getresponse()
            return Response(r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace"))
        finally:
            c.close()

    def test_reads_work_and_changes_are_refused(self):
        knob = "/v1/knobs/thp.khugepaged.pages_to_scan"
        before = self.d.db_snapshot()
        for url in ("/v1/health", knob, "/v1/hugepages/2M"):
            r = self.tcp("GET", url)
            self.assertEqual(r.status, 200, r.raw)
            self.v.check(r.json, self.schema(self.operation("GET", url)[1], 200, "application/json"), url)
        value = self.tcp("GET", knob).json["value"]
        for method, url, body in (("PUT", knob, {"value": 1000}), ("PATCH", "/v1/knobs", {"knobs": {"thp.defrag": "never"}}),
                                  ("PUT", "/v1/hugepages/2M", {"total": 1}), ("DELETE", "/v1/schedules/1", None)):
            r = self.tcp(method, url, body)
            self.assertProblem(r, 403, "auth.forbidden")
            self.assertIn("Unix socket", r.json["detail"])
            self.v.check(r.json, self.schema(self.operation(method, url)[1], 403, "application/problem+json"), url)
        self.assertEqual(self.tcp("GET", knob).json["value"], value)
        self.assertEqual(self.d.db_snapshot(), before)

    def test_what_runs_as_the_caller_is_403_before_its_body_is_read(self):
        # Over TCP the caller has no uid: a launch, a migration and a collapse are refused like
        # every other change, 403 before the body is parsed, whatever the body (none, empty,
        # not JSON), not 400 for the body first.
        before = self.d.db_snapshot()
        for url in ("/v1/processes", "/v1/processes/1/migrate", "/v1/processes/1/collapse"):
            for raw in (b"", b"{", b"[]"):
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                try:
                    c.request("POST", url, body=raw, headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    r = Response(r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace"))
                finally:
                    c.close()
                with self.subTest(url=url, body=raw):
                    self.assertProblem(r, 403, "auth.forbidden")
                    self.v.check(r.json, self.schema(self.operation("POST", url)[1], 403, "application/problem+json"))
        self.assertEqual(self.d.db_snapshot(), before)


if __name__ == "__main__":
    unittest.main()
