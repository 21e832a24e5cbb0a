#!/usr/bin/env python3
"""Writes into schema/openapi.yaml an `example:` for the responses a daemon on a generated tree
can give: it starts one (the build in --bin, a 4-node FakeTree, a scratch database), makes the
requests below, and puts each answer, with every array cut to its first two items, under the
response's media type (an operation's own response, or a shared one in components/responses).
Responses the scenario cannot reach on a generated tree (a process, a cgroup, a probe, a store that
is full) keep the examples written by hand from real answers (docs/reference/*.md).
tests/e2e/test_openapi.py checks every example against its schema, so a change of an answer's
shape that is not written here fails there; run this again after such a change.

    flock /tmp/mpd-test.lock tools/spec-examples.py [--bin DIR]"""
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SPEC = os.path.join(ROOT, "schema", "openapi.yaml")
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


def trim(v):
    """Arrays cut to two items, at every depth: the shape, not the whole catalogue."""
    if isinstance(v, list):
        return [trim(x) for x in v[:2]]
    if isinstance(v, dict):
        return {k: trim(x) for k, x in v.items()}
    return v


def yaml_lines(v, ind):
    """v as block YAML in the subset test_openapi.py reads (strings double-quoted as JSON)."""
    pad = " " * ind
    if isinstance(v, dict):
        if not v:
            return [pad + "{}"]
        out = []
        for k, x in v.items():
            key = json.dumps(k, ensure_ascii=False)
            if isinstance(x, (dict, list)) and x:
                out.append("%s%s:" % (pad, key))
                out += yaml_lines(x, ind + 2)
            else:
                out.append("%s%s: %s" % (pad, key, scalar(x)))
        return out
    if isinstance(v, list):
        if not v:
            return [pad + "[]"]
        out = []
        for x in v:
            if isinstance(x, (dict, list)) and x:
                out.append(pad + "-")
                out += yaml_lines(x, ind + 2)
            else:
                out.append("%s- %s" % (pad, scalar(x)))
        return out
    return [pad + scalar(v)]


def scalar(x):
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return repr(x)
    if isinstance(x, dict):
        return "{}"
    if isinstance(x, list):
        return "[]"
    return json.dumps(x, ensure_ascii=False)


def set_example(lines, where, ctype, value):
    """Puts `example:` (replacing one there) in the media type `ctype` of the response found by
    where: ("path", path, method, status) or ("component", name)."""
    def find(start, end, text, ind):
        for i in range(start, end):
            if lines[i] == " " * ind + text:
                return i
        raise KeyError("%s at indent %d" % (text, ind))

    def block_end(i, ind):
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > ind):
            j += 1
        return j

    if where[0] == "path":
        _, path, method, status = where
        p = find(find(0, len(lines), "paths:", 0), len(lines), path + ":", 2)
        m = find(p, block_end(p, 2), method + ":", 4)
        r = find(m, block_end(m, 4), "responses:", 6)
        s = find(r, block_end(r, 6), "'%s':" % status, 8)
        c = find(s, block_end(s, 8), "content:", 10)
        mt = find(c, block_end(c, 10), ctype + ":", 12)
        ind = 14
    else:
        comp = find(0, len(lines), "components:", 0)
        r = find(comp, block_end(comp, 0), "responses:", 2)
        s = find(r, block_end(r, 2), where[1] + ":", 4)
        c = find(s, block_end(s, 4), "content:", 6)
        mt = find(c, block_end(c, 6), ctype + ":", 8)
        ind = 10
    end = block_end(mt, ind - 2)
    body = lines[mt + 1:end]
    # drop an example there already
    k = 0
    kept = []
    while k < len(body):
        if body[k] == " " * ind + "example:" or body[k].startswith(" " * ind + "example: "):
            k += 1
            while k < len(body) and (not body[k].strip() or len(body[k]) - len(body[k].lstrip()) > ind):
                k += 1
            continue
        kept.append(body[k])
        k += 1
    if isinstance(value, str):
        ex = [" " * ind + "example: |-"] + [" " * (ind + 2) + x for x in value.split("\n")]
    else:
        ex = [" " * ind + "example:"] + yaml_lines(trim(value), ind + 2)
    lines[mt + 1:end] = kept + ex


def scenario(d, tree):
    """[(where, ctype, answer)] from a daemon on a generated tree."""
    got = []

    def take(where, method, url, body=None, status=200, ctype="application/json"):
        r = d.request(method, url, body=body)
        if r.status != status:
            raise SystemExit("%s %s: %d, want %d: %s" % (method, url, r.status, status, r.raw[:500]))
        got.append((where, ctype, r.json))
        return r.json

    def op(path, method, url, body=None, status=200, ctype=None):
        return take(("path", path, method, str(status)), method.upper(), url, body, status,
                    ctype or ("application/problem+json" if status >= 400 else "application/json"))

    def problem(component, method, url, body=None, status=400):
        return take(("component", component), method, url, body, status, "application/problem+json")

    op("/v1/health", "get", "/v1/health")
    op("/v1/topology", "get", "/v1/topology")
    op("/v1/knobs", "get", "/v1/knobs")
    op("/v1/knobs/{name}", "get", "/v1/knobs/thp.enabled")
    knob = "/v1/knobs/thp.khugepaged.pages_to_scan"
    put = op("/v1/knobs/{name}", "put", knob, {"value": 1024})
    op("/v1/knobs", "patch", "/v1/knobs", {"knobs": {"thp.enabled": "madvise", "thp.defrag": "defer"}})
    op("/v1/hugepages", "get", "/v1/hugepages")
    op("/v1/hugepages/{size}", "put", "/v1/hugepages/2M", {"nodes": {"0": 4}, "dry_run": True})
    job = op("/v1/hugepages/{size}", "put", "/v1/hugepages/2M", {"nodes": {"0": 4, "1": 2}, "batch": 2}, status=202)
    deadline = time.monotonic() + 20
    while d.get("/v1/jobs/%d" % job["id"]).json["status"] in ("queued", "running"):
        if time.monotonic() > deadline:
            raise SystemExit("the resize did not end")
        time.sleep(0.05)
    done = op("/v1/jobs/{id}", "get", "/v1/jobs/%d" % job["id"])
    # A cancel of a running job answers the job (202): the same shape as GET's.
    got.append((("path", "/v1/jobs/{id}", "delete", "202"), "application/json", done))
    job2 = d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 1, "1": 0}}).json
    while d.get("/v1/jobs/%d" % job2["id"]).json["status"] in ("queued", "running"):
        time.sleep(0.05)
    op("/v1/jobs", "get", "/v1/jobs?limit=2")
    op("/v1/hugepages/{size}", "get", "/v1/hugepages/2M")
    op("/v1/hugepages/{size}/availability", "get", "/v1/hugepages/2M/availability?count=8&node=0")
    op("/v1/history", "get", "/v1/history?limit=2")
    op("/v1/history/{id}", "get", "/v1/history/%d" % put["operation_id"])
    op("/v1/history/stats", "get", "/v1/history/stats?size=2M")
    op("/v1/history/compare", "get", "/v1/history/compare?ids=%d,%d" % (done["operation_id"], job2["operation_id"]))
    s = op("/v1/schedules", "post", "/v1/schedules", {"cron": "0 2 * * *", "timezone": "UTC",
                                                     "action": {"hugepages": {"size": "2M", "total": 4}}}, status=201)
    op("/v1/schedules", "get", "/v1/schedules")
    op("/v1/schedules/{id}", "get", "/v1/schedules/%d" % s["id"])
    op("/v1/schedules/{id}", "delete", "/v1/schedules/%d" % s["id"])
    op("/v1/probes", "get", "/v1/probes")
    m = d.request("GET", "/metrics")
    text = "\n".join(line for line in m.raw.splitlines()[:6])
    got.append((("path", "/metrics", "get", "200"), "text/plain", text))
    m = d.request("GET", "/metrics", headers={"Accept": "application/openmetrics-text"})
    text = "\n".join(line for line in m.raw.splitlines()[:6]) + "\n# EOF"   # the cut, closed as OpenMetrics ends
    got.append((("path", "/metrics", "get", "200"), "application/openmetrics-text", text))

    # the shared problems
    problem("BadRequest", "GET", "/v1/topology?verbose=1")
    problem("NotFound", "GET", "/v1/knobs/thp.nothing", status=404)
    problem("MethodNotAllowed", "DELETE", "/v1/knobs", status=405)
    problem("UriTooLong", "GET", "/v1/knobs/" + "a" * 1100, status=414)
    problem("Unprocessable", "PUT", "/v1/hugepages/2M", {"nodes": {"9": 1}}, status=422)
    problem("Conflict", "DELETE", "/v1/jobs/%d" % job["id"], status=409)
    problem("KnobUnprocessable", "PUT", "/v1/knobs/thp.enabled", {"value": "sometimes"}, status=422)
    r = d.request("GET", "/v1/health", headers={"Content-Length": str(64 * 1024 + 1)}, raw=b"")
    got.append((("component", "ContentTooLarge"), "application/problem+json", r.json))
    r = d.request("PUT", "/v1/knobs/thp.enabled", raw=b"value=never", headers={"Content-Type": "text/plain"})
    got.append((("component", "UnsupportedMediaType"), "application/problem+json", r.json))
    return got


def forbidden(port):
    """A change over the TCP listener: 403 auth.forbidden."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("PUT", "/v1/knobs/thp.enabled", body=b'{"value": "never"}', headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 403:
            raise SystemExit("a change over TCP: %d, want 403" % r.status)
        return json.loads(r.read())
    finally:
        c.close()


def problem(code, status, title, detail, instance, **extra):
    p = {"type": "urn:mempolicyd:problem:" + code, "title": title, "status": status, "detail": detail,
         "code": code, "instance": instance}
    p.update(extra)
    return p


# Problems a generated tree cannot provoke, written as the daemon writes them (problem.c).
HAND = [
    (("component", "InternalError"), problem("store.error", 500, "Internal Server Error",
                                            "database error: disk I/O error", "/v1/history")),
    (("component", "ServiceUnavailable"), problem("store.busy", 503, "Service Unavailable",
                                                 "the database is locked by another process", "/v1/knobs/thp.enabled")),
    (("component", "KnobConflict"), problem("knob.unavailable", 409, "Conflict",
                                           "thp.shmem_enabled is not available on this kernel",
                                           "/v1/knobs/thp.shmem_enabled")),
    (("component", "CgroupRefusal"), problem("cgroup.unavailable", 409, "Conflict",
                                            "the parent of batch does not enable the cpuset controller",
                                            "/v1/cgroups/batch")),
    (("component", "Unauthenticated"), problem("auth.unauthenticated", 401, "Unauthorized",
                                              "this listener needs 'Authorization: Bearer TOKEN'", "/v1/health")),
    (("component", "RateLimited"), problem("auth.rate_limited", 429, "Too Many Requests",
                                          "10 failed authentications from 192.0.2.7 in 60 s; try again in 37 s",
                                          "/v1/health")),
    (("component", "ClientCertificateForbidden"),
     problem("auth.client_certificate", 403, "Forbidden", "this listener needs a client certificate signed by "
             "its client CA, and the client sent none", "/v1/health")),
    (("component", "StoreFull"), problem("store.full", 507, "Insufficient Storage",
                                        "the database's disk is full; nothing was changed", "/v1/hugepages/2M",
                                        errno=28, errno_name="ENOSPC")),
    (("component", "KnobStoreFull"), problem("store.full", 507, "Insufficient Storage",
                                            "the database's disk is full; nothing was changed",
                                            "/v1/knobs/thp.enabled", errno=28, errno_name="ENOSPC")),
    (("component", "KnobInternalError"), problem("store.error", 500, "Internal Server Error",
                                                "database error: disk I/O error", "/v1/knobs/thp.enabled")),
    (("path", "/v1/hugepages/{size}", "put", "409"),
     problem("job.conflict", 409, "Conflict", "a resize of 2M is already queued or running (job 7)",
             "/v1/hugepages/2M", job_id=7, job="/v1/jobs/7")),
    (("path", "/v1/processes", "post", "409"),
     problem("process.unsupported", 409, "Conflict", "this kernel has no MPOL_WEIGHTED_INTERLEAVE",
             "/v1/processes")),
    (("path", "/v1/processes/{pid}/migrate", "post", "409"),
     problem("process.changed", 409, "Conflict", "pid 4242 names another process now (start time differs)",
             "/v1/processes/4242/migrate")),
    (("path", "/v1/processes/{pid}/collapse", "post", "409"),
     problem("job.conflict", 409, "Conflict", "a job on process 4242 is queued or running (job 9)",
             "/v1/processes/4242/collapse", job_id=9, job="/v1/jobs/9")),
    (("component", "ProbeConflict"),
     problem("job.conflict", 409, "Conflict", "a probe job is queued or running (job 11)",
             "/v1/probes/touch", job_id=11, job="/v1/jobs/11")),
]


# Answers that need a real process or cgroup, as the references show them from real runs
# (docs/reference/processes.md, cgroups.md).
PLACEMENT = {"pid": 4242, "start_time": 81220, "name": "worker", "uid": 0, "mems_allowed": "0-1",
             "nodes": [{"node": 0, "base_bytes": 2097152, "thp_bytes": 4194304, "hugetlb_bytes": 1075838976,
                        "hugetlb": {"2M": {"pages": 1, "bytes": 2097152}, "1G": {"pages": 1, "bytes": 1073741824}},
                        "total_bytes": 1082130432}],
             "totals": {"resident_bytes": 1094754304, "base_bytes": 4235264, "thp_bytes": 8388608,
                        "thp_unattributed_bytes": 4194304, "hugetlb_bytes": 1086324736, "rollup_thp_bytes": 8388608,
                        "mappings": 6, "resident_mappings": 6, "smaps_read": True},
             "locality": {"policy_bytes": 1086324736, "on_policy_nodes_bytes": 1086324736, "share": 1.0},
             "policies": [{"policy": "bind:1", "mode": "bind", "flags": [], "nodes": "1", "maybe_truncated": False,
                           "mappings": 1, "bytes": 8388608, "locality": 1.0}]}
def queued_job(id, kind, request, ns=1796033342103143044):
    """A job as its 202 answers it: queued, the operation recorded, nothing run yet."""
    return {"id": id, "kind": kind, "status": "queued", "source": "api", "schedule_id": None,
            "actor": {"uid": 1000, "name": "alice"}, "operation_id": id + 30, "created_ns": ns,
            "created_at": "2026-11-30T15:29:02.103143044Z", "started_ns": None, "started_at": None,
            "finished_ns": None, "finished_at": None, "request": request, "progress": {"phase": "queued"},
            "result": None, "reason": None, "errno": None, "error": None}


REAL = [
    (("path", "/v1/processes/{pid}/migrate", "post", "202"),
     queued_job(12, "process.migrate", {"pid": 4242, "start_time": 81220, "from": "0", "to": "1"})),
    (("path", "/v1/processes/{pid}/collapse", "post", "202"),
     queued_job(13, "process.collapse", {"pid": 4242, "start_time": 81220, "range": "anonymous"})),
    (("component", "ProbeQueued"),
     queued_job(14, "probe.touch", {"probe": "touch", "params": {"size": 67108864, "hold_ms": 0}, "timeout_s": 60})),
    (("path", "/v1/processes/{pid}/samples", "get", "200"),
     {"pid": 4242, "start_time": 81220, "samples": [
         {"operation_id": 17, "time_ns": 1796033342103143044, "time_at": "2026-11-30T15:29:02.103143044Z",
          "result": PLACEMENT}]}),
    (("path", "/v1/processes", "post", "201"),
     {"pid": 4242, "start_time": 81220, "operation_id": 17, "uid": 1000, "gid": 1000, "user": "alice",
      "policy": {"mode": "bind", "nodes": "1", "flags": []}, "cpus": None, "watch": {"interval_ms": 1000}}),
    (("path", "/v1/processes/{pid}", "get", "200"), PLACEMENT),
    (("path", "/v1/cgroups/{path}", "get", "200"),
     {"path": "mpdtest", "version": 1, "mount": "fs/cgroup/cpuset", "root": False, "cpuset": True,
      "mems": "0", "mems_effective": "0", "memory_migrate": False, "procs": 0, "children": ["sub"]}),
    (("path", "/v1/cgroups", "get", "200"),
     {"path": "", "version": 2, "mount": "fs/cgroup", "root": True, "cpuset": True, "mems": None,
      "mems_effective": "0-1", "memory_migrate": None, "procs": 41, "children": ["batch", "system.slice"]}),
    (("path", "/v1/cgroups/{path}", "put", "200"),
     {"path": "batch", "version": 2, "mount": "fs/cgroup", "root": False, "cpuset": True, "mems": "1",
      "mems_effective": "1", "memory_migrate": None, "procs": 2, "children": [], "operation_id": 57,
      "status": "ok", "result": {"version": 2, "mems_before": "", "mems_after": "1", "effective_before": "0-1",
                                 "effective_after": "1", "memory_migrate": None}}),
]


def synth(v, schema, key=""):
    """A value of the schema, from its examples and types: for answers that need a real process,
    cgroup or probe run, which a generated tree does not have. The test checks it as any example."""
    raw = v.resolve(schema)
    if "example" in raw:
        return raw["example"]
    f = v.flatten(schema)
    alts = f["oneOf"] or f["anyOf"]
    if alts:
        return synth(v, alts[0], key)
    types = [t for t in (f["types"] or ["object" if f["has_props"] else "string"]) if t != "null"] or ["null"]
    if f["enum"]:
        return next(x for x in f["enum"] if x is not None)
    t = types[0]
    if t == "object":
        return {k: synth(v, x, k) for k, x in f["props"].items()}
    if t == "array":
        return [synth(v, f["items"], key)] if f["items"] else []
    if t == "integer":
        return raw.get("minimum", 1) if key != "pid" else 4242
    if t == "number":
        return 1.5
    if t == "boolean":
        return False
    if t == "null":
        return None
    if raw.get("format") == "date-time":
        return "2026-11-30T12:00:00.000000000Z"
    return "0" if key in ("mems", "from", "to", "cpus") else key or "text"


def fill_the_rest(lines, got):
    """Synthesized examples for every JSON response the scenario and HAND leave without one."""
    from test_openapi import Validator, YamlSubset
    spec = YamlSubset("\n".join(lines)).load()
    v = Validator(spec)
    have = {(w, c) for w, c, _ in got}
    out = []
    for path, item in spec["paths"].items():
        for m, op in item.items():
            if m not in ("get", "put", "post", "patch", "delete"):
                continue
            for status, resp in op["responses"].items():
                if "$ref" in resp:
                    continue
                where = ("path", path, m, status)
                for ctype, media in resp.get("content", {}).items():
                    if (where, ctype) not in have and "example" not in media and ctype.endswith("json"):
                        out.append((where, ctype, synth(v, media["schema"])))
    return out


def main():
    bindir = os.path.join(ROOT, "bin")
    if "--bin" in sys.argv:
        bindir = sys.argv[sys.argv.index("--bin") + 1]
    os.environ["MPD_BIN"] = os.path.abspath(bindir)
    from faketree import FakeTree
    from lib import Daemon

    tmp = tempfile.mkdtemp(prefix="mpd-examples-")
    os.chmod(tmp, 0o755)   # the daemon reads the tree as its own user (--user), as in the tests
    tree = FakeTree(tmp, nodes=4)
    from lib import free_port
    port = free_port()
    d = Daemon(tree, args=("--listen-tcp", "127.0.0.1:%d" % port))
    try:
        d.start()
        got = scenario(d, tree)
        got.append((("component", "Forbidden"), "application/problem+json", forbidden(port)))
    finally:
        d.stop()
        d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    with open(SPEC) as f:
        text = f.read()
    lines = text.split("\n")
    got += [(w, "application/problem+json", p) for w, p in HAND]
    got += [(w, "application/json", p) for w, p in REAL]
    for where, ctype, value in got:
        set_example(lines, where, ctype, value)
    rest = fill_the_rest(lines, got)
    for where, ctype, value in rest:
        set_example(lines, where, ctype, value)
    got += rest
    with open(SPEC, "w") as f:
        f.write("\n".join(lines))
    print("%d examples written" % len(got))


if __name__ == "__main__":
    main()
