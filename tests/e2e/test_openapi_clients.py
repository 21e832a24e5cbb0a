"""schema/openapi.yaml as real tools consume it (pinned in tests/e2e/npm/, installed from the npm
registry into a cache directory on first use; skipped, with the reason, only when npm or the
registry cannot be reached):

* openapi-typescript generates a TypeScript client's types from it, and tsc --strict compiles a
  small client against them: the names a client relies on exist with the types it needs (instants
  as RFC 3339 strings beside the ns, operation_id, the cursor and not before=, summary, 405/413/414
  declared on operations), and what the description forbids fails to compile;
* Prism, as a proxy in front of a daemon's TCP listener, checks live answers against the
  description: every GET operation, called with its parameters' examples, answers with a status
  the operation declares and a body Prism finds valid (no sl-violations header), both directly
  and HEAD on the daemon answers the same status without a body."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from faketree import FakeTree
from lib import DaemonTest, free_port
from test_openapi import SPEC, load_spec

HERE = os.path.dirname(os.path.abspath(__file__))
NPM_DIR = os.path.join(HERE, "npm")
CACHE = os.environ.get("MPD_NPM_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mempolicyd", "npm")


def tools():
    """The directory whose node_modules holds the pinned tools, installed once per lockfile."""
    if not shutil.which("npm") or not shutil.which("node"):
        raise unittest.SkipTest("npm/node are not installed (packaging/deps.sh test installs them)")
    with open(os.path.join(NPM_DIR, "package-lock.json"), "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()[:16]
    d = os.path.join(CACHE, key)
    if os.path.exists(os.path.join(d, "node_modules", ".bin", "prism")):
        return d
    tmp = d + ".tmp%d" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(NPM_DIR, f), tmp)
    # npm ci: exactly the lockfile; no install scripts (Prism's only one is telemetry).
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", tmp],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        if any(w in p.stderr for w in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH")):
            raise unittest.SkipTest("the npm registry cannot be reached: " + p.stderr.strip().splitlines()[-1])
        raise AssertionError("npm ci failed:\n" + p.stderr[-3000:])
    shutil.rmtree(d, ignore_errors=True)
    os.rename(tmp, d)
    return d


def tool(d, name):
    return os.path.join(d, "node_modules", ".bin", name)


# A client written against the generated types. Each line states something the description must
# give a generated client; the @ts-expect-error lines must NOT compile (tsc fails if they do).
CLIENT_TS = r"""
import type { paths, components } from "./api";

type Json<P extends keyof paths, M extends keyof paths[P], S extends number> =
  paths[P][M] extends { responses: infer R }
    ? S extends keyof R ? R[S] extends { content: infer C } ? C[keyof C] : never : never
    : never;

type Job = components["schemas"]["Job"];
type Op = components["schemas"]["OperationSummary"];

// instants: exact ns and RFC 3339 text side by side
export function created(j: Job): Date { return new Date(j.created_at); }
export function finished(j: Job): Date | null { return j.finished_at === null ? null : new Date(j.finished_at); }
const ns: number = ({} as Job).created_ns;
// @ts-expect-error the text is a string, not a number
const bad_at: number = ({} as Job).created_at;

// one name for a history operation
const op_id: number | null = ({} as Job).operation_id;
// @ts-expect-error op_id is gone
const old_op_id = ({} as Job).op_id;

// history items say what changed
export function line(o: Op): string { return `${o.id} ${o.started_at} ${o.kind} ${o.summary}`; }
const page: Json<"/v1/history", "get", 200> = { operations: [], next_cursor: null };

// one paging scheme: a cursor for jobs as for history
type JobsQuery = NonNullable<paths["/v1/jobs"]["get"]["parameters"]["query"]>;
const q: JobsQuery = { cursor: "c1f-0a1b2c3d", limit: 10, status: "ok" };
// @ts-expect-error before= is gone
const q_old: JobsQuery = { before: 3 };
const jobs: Json<"/v1/jobs", "get", 200> = { jobs: [], next_cursor: null };

// the router's answers are declared on operations
type Problem = components["schemas"]["Problem"];
const p405: Problem = {} as Json<"/v1/health", "get", 405>;
const p413: Problem = {} as Json<"/v1/knobs/{name}", "put", 413>;
const p414: Problem = {} as Json<"/v1/history", "get", 414>;

export const used = [ns, bad_at, op_id, old_op_id, page, q, q_old, jobs, p405, p413, p414];
"""


class GeneratedTypeScriptClient(unittest.TestCase):
    def test_types_generate_and_a_client_compiles_against_them(self):
        d = tools()
        work = tempfile.mkdtemp(prefix="mpd-ts-")
        self.addCleanup(shutil.rmtree, work, True)
        p = subprocess.run([tool(d, "openapi-typescript"), SPEC, "-o", os.path.join(work, "api.d.ts")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(work, "client.ts"), "w") as f:
            f.write(CLIENT_TS)
        tsc = [tool(d, "tsc"), "--noEmit", "--strict", "--target", "es2022", "--module", "es2022",
               "--moduleResolution", "bundler", "--noUnusedLocals", "false"]
        p = subprocess.run(tsc + [os.path.join(work, "client.ts")], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # ...and the compile can fail: a name the description does not have is an error.
        with open(os.path.join(work, "wrong.ts"), "w") as f:
            f.write('import type { components } from "./api";\n'
                    'export const x: string = ({} as components["schemas"]["Job"]).created_when;\n')
        p = subprocess.run(tsc + [os.path.join(work, "wrong.ts")], capture_output=True, text=True, timeout=300)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("created_when", p.stdout)


class PrismProxyValidatesLiveAnswers(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    @classmethod
    def setUpClass(cls):
        cls.npm = tools()
        cls.port = free_port()
        cls.daemon_args = ("--listen-tcp", "127.0.0.1:%d" % cls.port)
        super().setUpClass()
        cls.prism_port = free_port()
        cls.prism_log = open(os.path.join(cls.tmp, "prism.log"), "w")
        cls.prism = subprocess.Popen([tool(cls.npm, "prism"), "proxy", SPEC, "http://127.0.0.1:%d" % cls.port,
                                      "--port", str(cls.prism_port), "--errors"],
                                     stdout=cls.prism_log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/v1/health" % cls.prism_port, timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline or cls.prism.poll() is not None:
                    cls.tearDownClass()
                    raise AssertionError("prism did not start: " + open(cls.prism_log.name).read()[-2000:])
                time.sleep(0.3)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "prism", None):
            cls.prism.terminate()
            try:
                cls.prism.wait(10)
            except subprocess.TimeoutExpired:
                cls.prism.kill()
                cls.prism.wait()
            cls.prism_log.close()
        super().tearDownClass()

    def via_prism(self, method, url):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.prism_port, url), method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def test_every_get_operation_with_its_examples(self):
        spec = load_spec()
        comps = spec["components"]["parameters"]
        # something for the id examples (1) to name: a job, its operation, a schedule
        self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 1}})
        self.addCleanup(self.d.request, "PUT", "/v1/hugepages/2M", body={"nodes": {"0": 0}})
        self.d.request("POST", "/v1/schedules", body={"cron": "0 2 * * *", "action": {"hugepages": {"size": "2M", "total": 1}}})
        checked = 0
        for path, item in spec["paths"].items():
            op = item.get("get")
            # A GET for root alone (GET /v1/tokens) is 403 through Prism's TCP and 200 on the
            # socket by design: test_tls.py and test_auth.py cover it.
            if not op or path == "/metrics" or op.get("x-requires-admin"):
                continue
            params = [comps[p["$ref"].split("/")[-1]] if "$ref" in p else p
                      for p in item.get("parameters", []) + op.get("parameters", [])]
            url, query = path, []
            for p in params:
                ex = p.get("example", p.get("schema", {}).get("example"))
                if p["in"] == "path":
                    self.assertIsNotNone(ex, "%s: no example for %s" % (path, p["name"]))
                    url = url.replace("{%s}" % p["name"], str(ex))
                elif p.get("required"):
                    self.assertIsNotNone(ex, "%s: no example for the required %s" % (path, p["name"]))
                    query.append("%s=%s" % (p["name"], ex))
            if query:
                url += "?" + "&".join(query)
            status, headers, body = self.via_prism("GET", url)
            where = "GET %s -> %d %s" % (url, status, body[:300])
            self.assertIn(str(status), op["responses"], where)
            self.assertNotIn("sl-violations", {k.lower() for k in headers}, where + " " + headers.get("sl-violations", ""))
            direct = self.d.get(url)
            self.assertEqual(direct.status, status, where)
            # HEAD straight to the daemon (the description does not list HEAD operations: RFC 9110
            # implies them from GET, and Prism answers 405 for a method it does not see)
            head = self.d.request("HEAD", url)
            self.assertEqual((head.status, head.raw), (status, ""), "HEAD " + url)
            checked += 1
        self.assertGreaterEqual(checked, 15)

    def test_prism_does_report_an_answer_the_description_does_not_allow(self):
        # The check above is only as good as Prism's eye: a description that declares less than
        # the daemon answers must make Prism object.
        spec_text = open(SPEC).read()
        narrowed = spec_text.replace("      required: [status, version, kernel_release, schema_version, capabilities]",
                                     "      required: [status, version, kernel_release, schema_version, capabilities,\n"
                                     "        not_in_the_answer]", 1)
        self.assertNotEqual(narrowed, spec_text, "the Health schema's required line moved: update this test")
        path = os.path.join(self.tmp, "narrowed.yaml")
        with open(path, "w") as f:
            f.write(narrowed)
        port = free_port()
        log = open(os.path.join(self.tmp, "prism2.log"), "w")
        p = subprocess.Popen([tool(self.npm, "prism"), "proxy", path, "http://127.0.0.1:%d" % self.port,
                              "--port", str(port), "--errors"], stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(log.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.terminate)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/v1/topology" % port, timeout=5).read()
                break
            except urllib.error.HTTPError:
                break
            except (urllib.error.URLError, ConnectionError):
                self.assertLess(time.monotonic(), deadline, "prism did not start")
                time.sleep(0.3)
        try:
            r = urllib.request.urlopen("http://127.0.0.1:%d/v1/health" % port, timeout=30)
            status, headers = r.status, dict(r.headers)
        except urllib.error.HTTPError as e:
            status, headers = e.code, dict(e.headers)
        self.assertTrue(status >= 500 or "sl-violations" in {k.lower() for k in headers}, (status, headers))


if __name__ == "__main__":
    unittest.main()
