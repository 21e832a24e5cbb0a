"""packaging/prometheus/ and packaging/grafana/ against promtool, a live daemon and a real
Prometheus (Debian's package):

- the rules file passes `promtool check rules`, its unit tests (`promtool test rules`) pass,
  every recording rule has a unit test of its values, and every alert has a runbook line, a
  summary, a unit test where it fires and one where it does not yet, and a line in
  docs/reference/prometheus.md;
- every query of the dashboard and of the rules parses (each is written into a rules file that
  promtool checks, Grafana's variables replaced by values of their type) and every metric they
  name is in the daemon's /metrics or is a recording rule of the file;
- a real Prometheus loads the rules, scrapes a daemon over its TCP listener, and an alert induced
  on the daemon fires: the test reads it from /api/v1/alerts. The store's write errors are
  induced with a trigger that refuses the write (as test_store_full.py does); the drift alert
  with a foreign write to a key of a profile applied with on-drift = report (the generated
  tree's file, which the drift watcher's fanotify group sees as it sees sysfs)."""
import calendar
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

from faketree import FakeTree
from lib import Daemon, free_port
from test_metrics import stop_prometheus, wait_job

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RULES = os.path.join(REPO, "packaging", "prometheus", "mempolicyd.rules.yml")
RULE_TESTS = os.path.join(REPO, "packaging", "prometheus", "tests")
DASHBOARD = os.path.join(REPO, "packaging", "grafana", "mempolicyd-dashboard.json")
RUNBOOKS = os.path.join(REPO, "docs", "reference", "prometheus.md")
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")

# Prometheus' own series a rule may use.
PROMETHEUS_OWN = {"up"}
# Grafana's variables in the dashboard's queries, each replaced by a value of its kind.
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "$instance": ".*"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
            "group_right", "inf", "nan"}


def rules():
    with open(RULES) as f:
        return yaml.safe_load(f)


def alerts():
    return [r for g in rules()["groups"] for r in g["rules"] if "alert" in r]


def recorded():
    return {r["record"] for g in rules()["groups"] for r in g["rules"] if "record" in r}


def dashboard_exprs():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    return dash, out


def grafana_free(expr):
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    assert "$" not in expr, "a Grafana variable the test does not know: " + expr
    return expr


def metric_names(expr):
    """The metric names a PromQL expression selects: identifiers that are not functions or
    aggregations (followed by "("), keywords, label names (inside {...}, by/on/... lists) or
    parts of strings, durations and numbers."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"(?<![\w.:])[a-zA-Z_:][a-zA-Z0-9_:]*", s):
        if s[m.end():].lstrip().startswith("(") or m.group(0).lower() in KEYWORDS:
            continue
        names.add(m.group(0))
    return names


def promtool(*args, **kw):
    return subprocess.run([PROMTOOL] + list(args), capture_output=True, text=True, timeout=60, **kw)


@unittest.skipUnless(PROMTOOL, "promtool (Debian package prometheus) is not installed")
class Rules(unittest.TestCase):
    def test_promtool_check_rules_is_clean(self):
        p = promtool("check", "rules", RULES)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)
        self.assertNotIn("WARNING", p.stdout + p.stderr)

    def test_promtool_unit_tests_pass(self):
        files = sorted(os.path.join(RULE_TESTS, f) for f in os.listdir(RULE_TESTS) if f.endswith(".yml"))
        self.assertTrue(files)
        p = promtool("test", "rules", *files)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_every_alert_has_a_runbook_a_firing_unit_test_and_docs(self):
        fired, quiet = set(), set()
        for f in os.listdir(RULE_TESTS):
            with open(os.path.join(RULE_TESTS, f)) as fh:
                for t in yaml.safe_load(fh)["tests"]:
                    for a in t.get("alert_rule_test", []):
                        (fired if a.get("exp_alerts") else quiet).add(a["alertname"])
        with open(RUNBOOKS) as f:
            doc = f.read()
        self.assertTrue(alerts())
        for a in alerts():
            name = a["alert"]
            self.assertTrue(a.get("annotations", {}).get("runbook", "").strip(), name + " has no runbook")
            self.assertTrue(a["annotations"].get("summary", "").strip(), name + " has no summary")
            self.assertIn(a.get("labels", {}).get("severity"), ("info", "warning", "critical"), name)
            self.assertIn(name, fired, name + ": no promtool test where it fires")
            self.assertIn(name, quiet, name + ": no promtool test where it does not fire yet")
            self.assertIn("`%s`" % name, doc, name + " is not in docs/reference/prometheus.md")

    def test_every_recording_rule_has_a_unit_test(self):
        tested = set()
        for f in os.listdir(RULE_TESTS):
            with open(os.path.join(RULE_TESTS, f)) as fh:
                for t in yaml.safe_load(fh)["tests"]:
                    for x in t.get("promql_expr_test", []):
                        if x.get("exp_samples"):
                            tested |= metric_names(x["expr"])
        self.assertTrue(recorded())
        self.assertEqual(recorded() - tested, set(), "recording rules without a promql_expr_test")

    def test_the_name_finder_finds_names(self):
        # the checks below are only as good as this
        self.assertEqual(metric_names('sum by (node) (rate(a_b{x="y",le="1"}[5m])) * on(size) group_left c:d'),
                         {"a_b", "c:d"})
        self.assertEqual(metric_names('histogram_quantile(0.99, sum by (le) (x_bucket)) > 1e9 or vector(0)'),
                         {"x_bucket"})
        self.assertEqual(metric_names('label_replace(sum without (node) (m), "node", "total", "", "")'), {"m"})


@unittest.skipUnless(PROMTOOL, "promtool (Debian package prometheus) is not installed")
class Dashboard(unittest.TestCase):
    """The dashboard and the rules against what a daemon exports after a resize (so that the
    histogram has series; a family without samples still names itself in its TYPE line)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mpd-dash-")
        os.chmod(cls.tmp, 0o755)
        cls.tree = FakeTree(os.path.join(cls.tmp, "tree"), nodes=2)
        cls.d = Daemon(cls.tree).start()
        try:
            r = cls.d.request("PUT", "/v1/hugepages/2M", body={"nodes": {"0": 4}})
            assert r.status == 202, r.raw
            wait_job(cls.d, r.json["id"])
            text = cls.d.get("/metrics").raw
        except BaseException:
            cls.d.cleanup()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise
        cls.exported = set()
        for line in text.splitlines():
            m = re.match(r"# TYPE (\S+) (\S+)", line)
            if m:
                cls.exported.add(m.group(1))
                if m.group(2) == "histogram":
                    cls.exported |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
            elif line and not line.startswith("#"):
                cls.exported.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.cleanup()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, cls.d.last_log))

    def test_dashboard_shape(self):
        dash, exprs = dashboard_exprs()
        self.assertTrue(exprs)
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)), ids)
        self.assertEqual({v["name"] for v in dash["templating"]["list"]}, {"datasource", "instance"})
        for p in dash["panels"]:
            self.assertIn("gridPos", p, p["title"])
            if p["type"] != "row":
                self.assertTrue(p["targets"], p["title"])
                self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
        kinds = {p["type"] for p in dash["panels"]}
        self.assertIn("heatmap", kinds)
        heat = [t for p in dash["panels"] if p["type"] == "heatmap" for t in p["targets"]]
        self.assertTrue(all(t["format"] == "heatmap" and "_bucket" in t["expr"] for t in heat), heat)

    def test_every_dashboard_query_parses(self):
        _, exprs = dashboard_exprs()
        doc = {"groups": [{"name": "dashboard", "rules": [
            {"record": "dashboard:panel_%d" % i, "expr": grafana_free(e)} for i, (_, e) in enumerate(exprs)]}]}
        path = os.path.join(self.tmp, "dashboard-queries.yml")
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
        p = promtool("check", "rules", path)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # and promtool does refuse a bad one (the check can fail)
        with open(path, "w") as f:
            yaml.safe_dump({"groups": [{"name": "x", "rules": [{"record": "x:y", "expr": "sum by (node) (("}]}]}, f)
        self.assertNotEqual(promtool("check", "rules", path).returncode, 0)

    def known(self):
        return self.exported | recorded() | PROMETHEUS_OWN

    def test_every_metric_the_dashboard_names_exists(self):
        _, exprs = dashboard_exprs()
        for title, e in exprs:
            missing = metric_names(grafana_free(e)) - self.known()
            self.assertFalse(missing, "panel %r names %s, which nothing exports" % (title, sorted(missing)))

    def test_every_metric_the_rules_name_exists(self):
        for g in rules()["groups"]:
            for r in g["rules"]:
                missing = metric_names(r["expr"]) - self.known()
                self.assertFalse(missing, "%s names %s" % (r.get("alert") or r.get("record"), sorted(missing)))


@unittest.skipUnless(PROMETHEUS, "prometheus (Debian package) is not installed")
class AlertsFire(unittest.TestCase):
    """Debian's Prometheus with the rules (its copy evaluates every second), scraping a daemon."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-alerts-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = FakeTree(os.path.join(self.tmp, "tree"), nodes=2)
        self.port = free_port()
        self.d = Daemon(self.tree, ["--listen-tcp", "127.0.0.1:%d" % self.port]).start()
        self.addCleanup(self.stop_daemon)
        self.prom_port = free_port()
        cfg = os.path.join(self.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                    "rule_files: ['%s']\n"
                    "scrape_configs:\n  - job_name: mempolicyd\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (os.path.join(self.tmp, "rules.yml"), self.port))
        # a test cannot wait 15 minutes: the drift alert's for: is 2 s in this copy
        self.write_rules({"MempolicydDriftPersisting": "2s"})
        log = open(os.path.join(self.tmp, "prometheus.log"), "w")
        self.prom = subprocess.Popen([PROMETHEUS, "--config.file", cfg, "--storage.tsdb.path",
                                      os.path.join(self.tmp, "data"), "--web.listen-address",
                                      "127.0.0.1:%d" % self.prom_port], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.addCleanup(stop_prometheus, self.prom)

    def write_rules(self, fors):
        """The packaged rules with for: set per alert name as fors says (a test cannot wait 15m)."""
        doc = rules()
        for g in doc["groups"]:
            for r in g["rules"]:
                if r.get("alert") in fors:
                    r["for"] = fors[r["alert"]]
        with open(os.path.join(self.tmp, "rules.yml"), "w") as f:
            yaml.safe_dump(doc, f)

    def stop_daemon(self):
        rc = self.d.cleanup()
        self.assertIn(rc, (0, None), self.d.last_log)

    def api(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.prom_port, path), timeout=5) as r:
            body = json.load(r)
        self.assertEqual(body["status"], "success", body)
        return body["data"]

    def query(self, expr):
        return self.api("/api/v1/query?query=" + urllib.parse.quote(expr))["result"]

    def wait(self, what, fn, timeout=60):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = fn()
                if last:
                    return last
            except OSError:
                pass   # Prometheus is still starting
            time.sleep(0.25)
        with open(os.path.join(self.tmp, "prometheus.log")) as f:
            log = f.read()[-3000:]
        try:   # what the scrapes themselves said: a target down names its error here, not in the log
            targets = [(t.get("health"), t.get("lastError"), t.get("lastScrape"))
                       for t in self.api("/api/v1/targets")["activeTargets"]]
        except (OSError, AssertionError, KeyError, ValueError) as e:
            targets = "unreadable: %s" % e
        raise AssertionError("%s: never (last %r; targets %r)\n%s\ndaemon:\n%s" % (
            what, last, targets, log, self.d.log_text()[-2000:]))

    def alert(self, name, state="firing"):
        return [a for a in self.api("/api/v1/alerts")["alerts"]
                if a["labels"]["alertname"] == name and a["state"] == state]

    def evaluated_with_data(self):
        """The rules have been evaluated, healthy, after a scrape that saw the daemon up: every
        group's last evaluation is later than that scrape's timestamp."""
        # timestamp() of a bare selector is the sample's (the scrape's) time
        up = self.query('up{job="mempolicyd"}')
        when_up = self.query('timestamp(up{job="mempolicyd"})')
        groups = self.api("/api/v1/rules")["groups"]
        if not up or up[0]["value"][1] != "1" or not when_up or len(groups) != len(rules()["groups"]):
            return False
        scraped = float(when_up[0]["value"][1])
        for g in groups:
            for r in g["rules"]:
                self.assertEqual(r["health"], "ok", r)
            # RFC 3339 in UTC with up to nanoseconds: "2026-12-01T16:12:02.241034792Z"
            m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$", g.get("lastEvaluation", ""))
            if not m or calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + \
                    float(m.group(2) or 0) <= scraped:
                return False
        return True

    def test_store_write_errors_fire_the_alert(self):
        name = "MempolicydStoreWriteErrors"
        self.wait("rules evaluated on a scraped daemon", self.evaluated_with_data)
        self.assertEqual(self.alert(name), [], "fires before any write failed")
        self.assertEqual(self.alert(name, "pending"), [])
        con = sqlite3.connect(self.d.db, timeout=10, isolation_level=None)
        try:
            con.execute("CREATE TRIGGER mpd_test_refuse BEFORE INSERT ON knob_changes "
                        "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        finally:
            con.close()
        r = self.d.request("PUT", "/v1/knobs/thp.defrag", body={"value": "never"})
        self.assertEqual((r.status, r.json["code"]), (500, "store.error"), r.raw)
        firing = self.wait(name + " firing", lambda: self.alert(name))
        self.assertEqual(firing[0]["labels"]["instance"], "127.0.0.1:%d" % self.port)
        self.assertEqual(firing[0]["labels"]["severity"], "critical")
        self.assertIn("store.full", firing[0]["annotations"]["runbook"])

    def test_drift_under_report_fires_the_drift_alert(self):
        name = "MempolicydDriftPersisting"
        profiles = os.path.join(self.tmp, "profiles")
        os.mkdir(profiles)
        os.chmod(profiles, 0o755)
        with open(os.path.join(profiles, "obs.conf"), "w") as f:
            f.write("[knobs]\nthp.defrag = defer+madvise ; on-drift = report\n")
        self.d.stop()
        self.d.args += ["--profiles-dir", profiles]
        self.d.start()
        r = self.d.request("POST", "/v1/profile", body={"name": "obs"})
        self.assertEqual(r.status, 202, r.raw)
        self.assertEqual(wait_job(self.d, r.json["id"])["status"], "ok")
        self.wait("the key in sync", lambda: 'mempolicyd_profile_key_drift{key="thp.defrag"} 0' in self.d.get("/metrics").raw)
        self.wait("rules evaluated on a scraped daemon", self.evaluated_with_data)
        self.assertEqual([r["duration"] for g in self.api("/api/v1/rules")["groups"] for r in g["rules"]
                          if r["name"] == name], [2])
        self.assertEqual(self.alert(name) + self.alert(name, "pending"), [], "drift alert before any drift")
        # a foreign write (this process, not the daemon) to the managed key's file
        self.tree.write("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise madvise [never]")
        firing = self.wait(name + " firing", lambda: self.alert(name))
        self.assertEqual(firing[0]["labels"]["key"], "thp.defrag")
        self.assertEqual(firing[0]["labels"]["instance"], "127.0.0.1:%d" % self.port)
        # reported, not restored: the value stays as the writer left it
        self.assertIn("[never]", self.tree.read("sys/kernel/mm/transparent_hugepage/defrag"))

if __name__ == "__main__":
    unittest.main()
