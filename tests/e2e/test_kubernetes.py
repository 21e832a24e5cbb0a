"""packaging/kubernetes/ held to the daemon it deploys (the package stage checks the same files
against the Kubernetes schemas): the profiles ConfigMap's profiles are valid for this daemon, the
config and the command line the DaemonSet runs are options it takes, the per-node-pool example is
daemonset.yaml but for what it says differs, and the node-problem-detector plugin exits as NPD's
custom plugin protocol wants (0 OK, 1 NonOK, anything else Unknown) for each of `mempolicyctl
profile verify --exit-code`'s answers."""
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
import unittest

import yaml

from lib import CTL, Daemon

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(REPO, "packaging", "kubernetes")
NPD = os.path.join(K8S, "npd")
NFD_FILE = "/etc/kubernetes/node-feature-discovery/features.d/mempolicyd"


def docs(name):
    with open(os.path.join(K8S, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def one(name, kind):
    found = [d for d in docs(name) if d["kind"] == kind]
    assert len(found) == 1, "%s: %d %s" % (name, len(found), kind)
    return found[0]


def conf(text):
    """key = value lines of mempolicyd.conf(5)."""
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def container(ds, name="mempolicyd"):
    return next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def option(command, name):
    return command[command.index(name) + 1] if name in command else None


class ManifestsTest(unittest.TestCase):
    """The manifests against this daemon (the real kernel, read only)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-k8s-")
        os.chmod(self.tmp, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_the_daemonset_runs_the_profiles_configmap_and_the_fleet_options(self):
        ds = one("daemonset.yaml", "DaemonSet")
        cfg = conf(one("configmap.yaml", "ConfigMap")["data"]["mempolicyd.conf"])
        profiles = one("profiles.yaml", "ConfigMap")
        c = container(ds)
        cmd = c["command"]
        self.assertEqual(option(cmd, "--log-format"), "json")
        self.assertEqual(option(cmd, "--node-labels-file"), NFD_FILE)
        # The profiles ConfigMap is mounted whole (no subPath: its updates reach the daemon) at the
        # config's profiles-dir, and the active profile is one of its files.
        vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
        mount = next(m for m in c["volumeMounts"] if vols[m["name"]].get("configMap", {}).get("name")
                     == profiles["metadata"]["name"])
        self.assertNotIn("subPath", mount)
        self.assertEqual(mount["mountPath"], cfg["profiles-dir"])
        self.assertIn(cfg["profile"] + ".conf", profiles["data"])
        # NFD's directory is the host's, where nfd-worker reads it.
        nfd = next(m for m in c["volumeMounts"] if m["mountPath"] == os.path.dirname(NFD_FILE))
        self.assertEqual(vols[nfd["name"]]["hostPath"]["path"], os.path.dirname(NFD_FILE))

        # This daemon takes that config and that command line, and every profile in the ConfigMap
        # is valid for it. The paths are the test's: the host's are the pod's.
        pdir = os.path.join(self.tmp, "profiles.d")
        os.mkdir(pdir)
        for name, text in profiles["data"].items():
            with open(os.path.join(pdir, name), "w") as f:
                f.write(text)
        with open(os.path.join(self.tmp, "mempolicyd.conf"), "w") as f:
            f.write(one("configmap.yaml", "ConfigMap")["data"]["mempolicyd.conf"])
        labels = os.path.join(self.tmp, "features.d", "mempolicyd")
        os.mkdir(os.path.dirname(labels))
        args = cmd[1:]
        args[args.index("--config") + 1] = os.path.join(self.tmp, "mempolicyd.conf")
        args[args.index("--node-labels-file") + 1] = labels
        # The config's log level (lib's daemons log at debug otherwise). A generated tree, not the
        # host's /sys: the config names a profile, which the daemon applies at start (db.conf
        # writes thp.defrag and vm.compaction_proactiveness), and this test restores nothing.
        from faketree import FakeTree
        tree = FakeTree(os.path.join(self.tmp, "tree"), nodes=2)
        d = Daemon(tree, args + ["--profiles-dir", pdir, "--log-level", cfg["log-level"]])
        try:
            d.start()
            # The start-time apply's last line is the drift watcher's marking, written by its own
            # thread once the apply ended: waited for, so that it is not counted as a read's.
            deadline = time.monotonic() + 60
            def logged():
                with open(d.log) as f:
                    return f.read()
            # the start-time apply's lines as the file holds them (what `before` reads below)
            while not all(w in logged() for w in ("drift watcher: ", "start-time apply of ", "operation 1 ")):
                self.assertLess(time.monotonic(), deadline, "the start-time apply never ended:\n" + logged())
                time.sleep(0.05)
            body = d.get("/v1/profiles").json
            self.assertEqual(body["active"], cfg["profile"])
            states = {p["name"]: (p["state"], p.get("error")) for p in body["profiles"]}
            self.assertEqual(set(states), {n[:-5] for n in profiles["data"]})
            for name, (state, err) in states.items():
                self.assertEqual(state, "ok", "%s.conf: %s" % (name, err))
            # Reads write no log line at the DaemonSet's level: a fleet scrapes every node every
            # 30 s and NPD checks it every 60 s (libmicrohttpd's socket-option warnings on the
            # Unix socket were three lines per request).
            with open(d.log) as f:
                before = f.read().splitlines()
            for _ in range(10):
                self.assertEqual(d.get("/metrics").status, 200)
                self.assertEqual(d.get("/v1/profiles").status, 200)
            with open(d.log) as f:
                after = f.read().splitlines()
            self.assertEqual(after[len(before):], [])
            # --log-format json: every line the daemon wrote is one JSON object.
            for line in d.log_text().splitlines():
                if line.strip():
                    json.loads(line)
        finally:
            self.assertEqual(d.cleanup(), 0, d.last_log)

    def test_per_node_pool_example_is_the_daemonset_but_for_pool_and_profile(self):
        base = one("daemonset.yaml", "DaemonSet")
        profiles = one("profiles.yaml", "ConfigMap")["data"]
        pools = [d for d in docs("examples/per-node-pool.yaml") if d["kind"] == "DaemonSet"]
        self.assertEqual(len(pools), 2)
        terms = []
        for ds in pools:
            spec = ds["spec"]
            inst = spec["selector"]["matchLabels"].pop("app.kubernetes.io/instance")
            self.assertEqual(inst, ds["metadata"]["name"])
            self.assertEqual(spec["template"]["metadata"]["labels"].pop("app.kubernetes.io/instance"), inst)
            self.assertEqual(ds["metadata"]["labels"].pop("app.kubernetes.io/instance"), inst)
            aff = spec["template"]["spec"].pop("affinity")
            term = aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            self.assertEqual(len(term), 1)
            terms.append(term[0]["matchExpressions"])
            cmd = container(ds)["command"]
            i = cmd.index("--profile")
            self.assertIn(cmd[i + 1] + ".conf", profiles)
            del cmd[i:i + 2]
            ds["metadata"]["name"] = base["metadata"]["name"]
            self.assertEqual(ds, base, "%s differs from daemonset.yaml beyond pool and profile" % inst)
        # Complements: every node runs exactly one of the two.
        (a,), (b,) = terms
        self.assertEqual((a["key"], a["values"]), (b["key"], b["values"]))
        self.assertEqual({a["operator"], b["operator"]}, {"In", "NotIn"})


class NpdPluginTest(unittest.TestCase):
    """mempolicyd-verify.sh, as NPD runs it (its exit code, one line of stdout), for each answer of
    `mempolicyctl profile verify --exit-code` (0 in sync, 1 drift or degraded, 3 unreachable),
    given by a stand-in mempolicyctl that records how it was called; and the monitor config."""
    SCRIPT = os.path.join(NPD, "mempolicyd-verify.sh")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mpd-npd-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_with(self, rc, out="x"):
        ctl = os.path.join(self.tmp, "mempolicyctl")
        with open(ctl, "w") as f:
            f.write('#!/bin/sh\nprintf "%%s\\n" "$*" > "%s/argv"\nprintf "%s"\nexit %d\n' % (self.tmp, out, rc))
        os.chmod(ctl, stat.S_IRWXU)
        p = subprocess.run([self.SCRIPT], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, MEMPOLICYCTL=ctl, MEMPOLICYD_SOCKET="/run/x.sock"))
        with open(os.path.join(self.tmp, "argv")) as f:
            return p, f.read().strip()

    def test_exit_codes_map_to_npd_statuses(self):
        for rc, npd, word in ((0, 0, "in sync"), (1, 1, "drift"), (3, 2, "unreachable"), (2, 2, "exited 2"),
                              (4, 2, "exited 4"), (139, 2, "exited 139")):
            p, argv = self.run_with(rc, "line one\nline two\n")
            self.assertEqual(argv, "--socket /run/x.sock profile verify --exit-code")
            self.assertEqual(p.returncode, npd, "mempolicyctl %d: %s" % (rc, p.stdout))
            self.assertIn(word, p.stdout)
            self.assertEqual(len(p.stdout.strip().splitlines()), 1, p.stdout)   # one line: the message

    def test_unreachable_daemon_is_unknown_with_the_real_cli(self):
        """The real mempolicyctl against a socket nobody serves: never OK, never NonOK."""
        p = subprocess.run([self.SCRIPT], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, MEMPOLICYCTL=CTL,
                                    MEMPOLICYD_SOCKET=os.path.join(self.tmp, "none.sock")))
        self.assertEqual(p.returncode, 2, p.stdout)

    def test_monitor_config_runs_the_script_the_image_installs(self):
        with open(os.path.join(NPD, "mempolicyd-drift.json")) as f:
            m = json.load(f)
        self.assertEqual(m["plugin"], "custom")
        self.assertEqual([c["type"] for c in m["conditions"]], ["MemoryPolicyDrift"])
        (rule,) = m["rules"]
        self.assertEqual((rule["type"], rule["condition"]), ("permanent", "MemoryPolicyDrift"))
        with open(os.path.join(NPD, "Containerfile")) as f:
            image = f.read()
        self.assertRegex(image, r"COPY mempolicyd-verify.sh %s\n" % re.escape(rule["path"]))
        self.assertIn("--config.custom-plugin-monitor=/config/mempolicyd-drift.json",
                      " ".join(container(one("npd/npd.yaml", "DaemonSet"), "node-problem-detector")["command"]))
        # NPD kills a plugin at its timeout (Unknown); it must come before the next invocation.
        secs = lambda s: int(s.rstrip("s"))
        self.assertLess(secs(rule["timeout"]), secs(m["pluginConfig"]["invoke_interval"]))


@unittest.skipUnless(re.search(r"^\s*profile verify\b", subprocess.run([CTL, "--help"], capture_output=True, text=True).stdout,
                               re.M),
                     "mempolicyctl has no `profile verify` yet (issue 18, branch h-apply): the plugin is tested "
                     "against stand-ins of its exit codes only")
class NpdPluginLiveTest(unittest.TestCase):
    """The plugin against a live daemon on a generated tree: OK once the profile is applied, NonOK
    after a foreign write to a key it manages (on-drift = report: the daemon leaves it)."""

    def test_in_sync_then_drift(self):
        from faketree import FakeTree
        tmp = tempfile.mkdtemp(prefix="mpd-npd-live-")
        os.chmod(tmp, 0o755)
        try:
            tree = FakeTree(os.path.join(tmp, "t"), nodes=2)
            pdir = os.path.join(tmp, "profiles.d")
            os.mkdir(pdir)
            with open(os.path.join(pdir, "t.conf"), "w") as f:
                f.write("[profile]\non-drift = report\n[knobs]\nthp.enabled = never\n")
            d = Daemon(tree, ["--profiles-dir", pdir, "--profile", "t"])
            d.start()
            try:
                p = d.ctl("profile", "apply", "t")
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                env = dict(os.environ, MEMPOLICYCTL=CTL, MEMPOLICYD_SOCKET=d.socket)
                deadline = time.monotonic() + 30
                while True:
                    ok = subprocess.run([NpdPluginTest.SCRIPT], capture_output=True, text=True, env=env, timeout=30)
                    if ok.returncode == 0 or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                self.assertEqual(ok.returncode, 0, ok.stdout)
                tree.write("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never")
                drift = subprocess.run([NpdPluginTest.SCRIPT], capture_output=True, text=True, env=env, timeout=30)
                self.assertEqual(drift.returncode, 1, drift.stdout)
            finally:
                self.assertEqual(d.cleanup(), 0, d.last_log)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
