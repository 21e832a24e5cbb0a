"""schema/openapi.yaml as real tools consume it (pinned in tests/e2e/npm/, installed from the npm
registry into a cache directory on first use; skipped, with the reason, only when npm or the
registry cannot be reached):

* redocly lint with its recommended rules reports no error (and does report one where a rule is
  broken);
* openapi-typescript generates a TypeScript client's types from it, and tsc --strict compiles a
  small client against them: the names a client relies on exist with the types it needs (instants
  as RFC 3339 strings beside the ns, operation_id, the cursor and not before=, summary,
  401/405/413/414/429 declared on operations, each probe kind's body), and what the description
  forbids fails to compile ({size_mb: 64} for thp-fault among it);
* the generated types compiled into a client that node runs against a live daemon read every
  instant of its answers exactly (BigInt ns from the _at text, checked against the _ns digits);
* Prism, as a proxy in front of a daemon's TCP listener, checks live answers against the
  description: every GET operation, called with its parameters' examples, answers with a status
  the operation declares and a body Prism finds valid (no sl-violations header), both directly
  and HEAD on the daemon answers the same status without a body."""
import hashlib
import json
import os
import re
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

// the TLS listener's answers, before routing, on every operation
const p401: Problem = {} as Json<"/v1/health", "get", 401>;
const p429: Problem = {} as Json<"/v1/probes/thp-fault", "post", 429>;
type Sec = paths["/v1/jobs"]["get"] extends { security?: infer S } ? S : never;

// a probe's body is typed per kind: its own members, the common ones, nothing else
type Body<P extends keyof paths> =
  paths[P] extends { post: { requestBody: { content: { "application/json": infer B } } } } ? B : never;
const thp: Body<"/v1/probes/thp-fault"> = { size: "64M" };
const thp_full: Body<"/v1/probes/thp-fault"> = { size: 67108864, loops: 3, policy: { mode: "preferred", nodes: "1" },
                                                 cpus: "0", timeout_s: 30 };
// @ts-expect-error size_mb is no member of thp-fault's body
const thp_bad: Body<"/v1/probes/thp-fault"> = { size_mb: 64 };
// @ts-expect-error loops is a number
const thp_loops: Body<"/v1/probes/thp-fault"> = { loops: "3" };
const alloc: Body<"/v1/probes/hugetlb-alloc"> = { page_size: "2M", pages: 512, batch: 16 };
// @ts-expect-error pages is required
const alloc_bad: Body<"/v1/probes/hugetlb-alloc"> = { page_size: "2M" };
// @ts-expect-error thp is the touch probe's list of modes, not a string
const touch_bad: Body<"/v1/probes/touch"> = { thp: "always" };
const sparse: Body<"/v1/probes/sparse-touch"> = { size: "1G", threads: 8, compare_thp: true };
const frag: Body<"/v1/probes/fragment"> = { node: 0, during: { probe: "thp-fault", size: "64M" } };
// @ts-expect-error during names a kind the table does not have
const frag_bad: Body<"/v1/probes/fragment"> = { during: { probe: "thp-faults", size: "64M" } };
const queued: Job = {} as Json<"/v1/probes/thp-fault", "post", 202>;

export const used = [ns, bad_at, op_id, old_op_id, page, q, q_old, jobs, p405, p413, p414, p401, p429,
                     {} as Sec, thp, thp_full, thp_bad, thp_loops, alloc, alloc_bad, touch_bad, sparse, frag,
                     frag_bad, queued];
"""

# Refused at compile time, by its own tsc run (not only by @ts-expect-error): the error names it.
WRONG_PROBE_TS = r"""
import type { paths } from "./api";
type Body = paths["/v1/probes/thp-fault"]["post"]["requestBody"]["content"]["application/json"];
export const b: Body = { size_mb: 64 };
"""

# A client against a live daemon's TCP listener (reads; a change there is 403). It reads each
# instant the way a JavaScript client must, from its RFC 3339 text, into an exact BigInt of ns,
# and prints what it read; the test compares that with the answer's own digits. It sends a
# typed probe request too, and reads the typed refusal.
LIVE_TS = r"""
import type { paths, components } from "./api";
declare const process: { argv: string[]; exitCode?: number };

type Job = components["schemas"]["Job"];
type Problem = components["schemas"]["Problem"];
type Body<P extends keyof paths> =
  paths[P] extends { post: { requestBody: { content: { "application/json": infer B } } } } ? B : never;

// "2026-11-30T12:46:07.123456789Z" -> 1796042767123456789n, exactly: whole seconds through
// Date (exact in ms), the nine fraction digits as they are.
export function nsOf(at: string): bigint {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{9})Z$/.exec(at);
  if (!m) throw new Error("not an instant: " + at);
  return BigInt(Date.parse(m[1] + "Z") / 1000) * 1000000000n + BigInt(m[2]);
}

// Every "<stem>_at" of an answer, at any depth: [path of its _ns, exact ns as decimal text].
function instants(v: unknown, path: string, out: [string, string | null][]): void {
  if (Array.isArray(v)) { v.forEach((x, i) => instants(x, `${path}[${i}]`, out)); return; }
  if (v === null || typeof v !== "object") return;
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (k.endsWith("_at") && (typeof x === "string" || x === null))
      out.push([`${path}.${k.slice(0, -3)}_ns`, x === null ? null : nsOf(x).toString()]);
    instants(x, `${path}.${k}`, out);
  }
}

async function main(): Promise<void> {
  const [base, jobId, opId, schedId] = process.argv.slice(2);
  const read: Record<string, [string, string | null][]> = {};
  const jr = await fetch(`${base}/v1/jobs/${jobId}`);
  const job: Job = await jr.json();
  // the typed members first: what a client would write
  const typed: [string, string | null][] = [
    ["$.created_ns", nsOf(job.created_at).toString()],
    ["$.started_ns", job.started_at === null ? null : nsOf(job.started_at).toString()],
    ["$.finished_ns", job.finished_at === null ? null : nsOf(job.finished_at).toString()],
  ];
  read["/v1/jobs/" + jobId] = typed;
  for (const url of [`/v1/history/${opId}`, `/v1/schedules/${schedId}`, "/v1/jobs?limit=5", "/v1/history?limit=5"]) {
    const out: [string, string | null][] = [];
    instants(await (await fetch(base + url)).json(), "$", out);
    read[url] = out;
  }
  // a typed probe call: over TCP every change is refused, with a typed problem
  const body: Body<"/v1/probes/thp-fault"> = { size: "64M", loops: 1 };
  const pr = await fetch(`${base}/v1/probes/thp-fault`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const problem: Problem = await pr.json();
  console.log(JSON.stringify({ read, probe: { status: pr.status, code: problem.code } }));
}
main().catch((e) => { console.error(String(e)); process.exitCode = 1; });
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
        # ...and a thp-fault body with a member of another spelling is refused, naming it.
        with open(os.path.join(work, "wrong_probe.ts"), "w") as f:
            f.write(WRONG_PROBE_TS)
        p = subprocess.run(tsc + [os.path.join(work, "wrong_probe.ts")], capture_output=True, text=True, timeout=300)
        self.assertNotEqual(p.returncode, 0, "a thp-fault body with size_mb compiled")
        self.assertIn("size_mb", p.stdout)


class RedoclyLint(unittest.TestCase):
    def lint(self, d, spec):
        # From an empty directory (no redocly.yaml of anyone's applies), without telemetry.
        cwd = tempfile.mkdtemp(prefix="mpd-redocly-")
        self.addCleanup(shutil.rmtree, cwd, True)
        env = dict(os.environ, REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_UPDATE_NOTICE="true")
        p = subprocess.run([tool(d, "redocly"), "lint", "--extends", "recommended", "--format", "json", spec],
                           capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
        try:
            out = json.loads(p.stdout[p.stdout.index("{"):])
        except ValueError:
            raise AssertionError("redocly lint said no JSON (exit %d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
        return p.returncode, out

    def test_recommended_rules_report_no_error(self):
        d = tools()
        rc, out = self.lint(d, SPEC)
        errors = [pr for pr in out["problems"] if pr["severity"] == "error"]
        self.assertEqual(errors, [], json.dumps(errors[:5], indent=1))
        self.assertEqual((rc, out["totals"]["errors"]), (0, 0))
        # ...and the rules are on: an operation without security is an error.
        text = open(SPEC).read()
        broken = text.replace("      security:\n        - {}\n        - bearer: []\n        - bearer: []\n"
                              "          clientCertificate: []\n", "", 1)
        self.assertNotEqual(broken, text)
        path = os.path.join(tempfile.mkdtemp(prefix="mpd-redocly-"), "broken.yaml")
        self.addCleanup(shutil.rmtree, os.path.dirname(path), True)
        with open(path, "w") as f:
            f.write(broken)
        rc, out = self.lint(d, path)
        self.assertNotEqual(rc, 0)
        self.assertIn("security-defined", {pr["ruleId"] for pr in out["problems"] if pr["severity"] == "error"})


class TcpDaemonAndTools(DaemonTest):
    """The pinned tools, and a daemon on a generated tree with a TCP listener for them. No tests."""
    tree_factory = staticmethod(lambda root: FakeTree(root, nodes=4))

    @classmethod
    def setUpClass(cls):
        cls.npm = tools()
        cls.port = free_port()
        cls.daemon_args = ("--listen-tcp", "127.0.0.1:%d" % cls.port)
        super().setUpClass()


class GeneratedClientAgainstALiveDaemon(TcpDaemonAndTools):
    """The generated types compiled into a client (tsc, then node) that calls a daemon's TCP
    listener: it reads every instant of a job, an operation, a schedule and two lists exactly,
    which the test checks against the answers' own digits (Python's integers are exact)."""

    def test_instants_are_read_exactly_and_a_typed_probe_call_is_sent(self):
        job = self.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 2}}).json
        self.addCleanup(self.d.request, "PUT", "/v1/hugepages/2M", body={"nodes": {"0": 0}})
        deadline = time.monotonic() + 20
        while self.d.get("/v1/jobs/%d" % job["id"]).json["status"] in ("queued", "running"):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)
        job = self.d.get("/v1/jobs/%d" % job["id"]).json
        sched = self.d.request("POST", "/v1/schedules", body={"cron": "0 2 * * *",
                                                               "action": {"hugepages": {"size": "2M", "total": 1}}})
        self.assertEqual(sched.status, 201, sched.raw)
        self.addCleanup(self.d.request, "DELETE", "/v1/schedules/%d" % sched.json["id"])
        work = tempfile.mkdtemp(prefix="mpd-ts-live-")
        self.addCleanup(shutil.rmtree, work, True)
        p = subprocess.run([tool(self.npm, "openapi-typescript"), SPEC, "-o", os.path.join(work, "api.d.ts")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(work, "live.ts"), "w") as f:
            f.write(LIVE_TS)
        p = subprocess.run([tool(self.npm, "tsc"), "--strict", "--target", "es2022", "--module", "commonjs",
                            "--lib", "es2022,dom", "--outDir", os.path.join(work, "out"), os.path.join(work, "live.ts")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = subprocess.run(["node", os.path.join(work, "out", "live.js"), "http://127.0.0.1:%d" % self.port,
                            str(job["id"]), str(job["operation_id"]), str(sched.json["id"])],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        got = json.loads(p.stdout)
        self.assertEqual(got["probe"], {"status": 403, "code": "auth.forbidden"})
        checked = 0
        for url, pairs in got["read"].items():
            answer = self.d.get(url).json   # exact integers
            self.assertTrue(pairs, url + ": no instants read")
            for path, ns in pairs:
                node = answer
                for part in re.findall(r"\.(\w+)|\[(\d+)\]", path):
                    node = node[part[0]] if part[0] else node[int(part[1])]
                self.assertEqual(ns, None if node is None else str(node), "%s %s" % (url, path))
                checked += ns is not None
        self.assertGreaterEqual(checked, 10)


class PrismProxyValidatesLiveAnswers(TcpDaemonAndTools):
    @classmethod
    def setUpClass(cls):
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
        narrowed = spec_text.replace("      required: [status, privileged_helper, version, kernel_release, schema_version, profile, "
                                     "capabilities]",
                                     "      required: [status, privileged_helper, version, kernel_release, schema_version, profile, "
                                     "capabilities,\n"
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
