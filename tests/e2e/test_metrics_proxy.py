"""The metrics path under systemd: mempolicyd.service has no network, so mempolicyd-metrics.socket
listens on loopback TCP and mempolicyd-metrics.service's systemd-socket-proxyd carries each
connection to the API socket. Run here as the unit would (its ExecStart, socket-activated by
systemd-socket-activate, as an unprivileged user standing in for DynamicUser=): Prometheus' GET
/metrics is answered, and a change sent through the proxy is refused and changes nothing, because
the daemon sees the proxy's user, which is neither root nor in the admin group."""
import http.client
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import unittest

from faketree import FakeTree
from lib import DaemonTest, free_port

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ACTIVATE = shutil.which("systemd-socket-activate")


def unit_setting(name, key):
    with open(os.path.join(REPO, "packaging", name)) as f:
        m = re.search(r"^%s=(.*)$" % key, f.read(), re.M)
    if not m:
        raise AssertionError("packaging/%s has no %s=" % (name, key))
    return m.group(1).strip()


@unittest.skipUnless(ACTIVATE, "systemd-socket-activate (package systemd) is not installed")
class MetricsProxy(DaemonTest):
    tree_factory = staticmethod(lambda root: FakeTree(os.path.join(root, "tree"), nodes=2))

    def setUp(self):
        exec_start = shlex.split(unit_setting("mempolicyd-metrics.service", "ExecStart"))
        # The proxy's target is the API socket the socket unit owns; here, the test daemon's.
        self.assertEqual(exec_start[-1], unit_setting("mempolicyd.socket", "ListenStream"))
        self.assertTrue(os.access(exec_start[0], os.X_OK), exec_start[0])
        self.assertEqual(unit_setting("mempolicyd-metrics.socket", "ListenStream"), "127.0.0.1:8700")
        self.port = free_port()
        self.proxy = subprocess.Popen(
            [ACTIVATE, "-l", "127.0.0.1:%d" % self.port, "setpriv", "--reuid", "nobody", "--regid", "nogroup",
             "--clear-groups", "--"] + exec_start[:-1] + [self.d.socket],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(self.stop_proxy)

    def stop_proxy(self):
        self.proxy.terminate()
        try:
            self.proxy.wait(10)
        except subprocess.TimeoutExpired:
            self.proxy.kill()
            self.proxy.wait()

    def request(self, method, path, body=None):
        deadline = time.monotonic() + 10
        while True:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                c.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
                r = c.getresponse()
                return r.status, r.getheader("Content-Type") or "", r.read().decode()
            except ConnectionRefusedError:
                if time.monotonic() > deadline or self.proxy.poll() is not None:
                    raise
                time.sleep(0.05)
            finally:
                c.close()

    def test_metrics_through_the_proxy(self):
        status, ctype, text = self.request("GET", "/metrics")
        self.assertEqual(status, 200, text[:500])
        self.assertTrue(ctype.startswith("text/plain"), ctype)
        self.assertRegex(text, r"(?m)^mempolicyd_\w+")

    def test_a_change_through_the_proxy_is_refused_and_changes_nothing(self):
        knob = os.path.join(self.tree.sys, "kernel", "mm", "transparent_hugepage", "enabled")
        with open(knob) as f:
            before = f.read()
        db_before = self.d.db_snapshot()
        status, ctype, text = self.request("PUT", "/v1/knobs/thp.enabled", body='{"value": "never"}')
        self.assertEqual(status, 403, text)
        self.assertTrue(ctype.startswith("application/problem+json"), ctype)
        self.assertEqual(json.loads(text)["code"], "auth.forbidden")
        with open(knob) as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(self.d.db_snapshot(), db_before)


if __name__ == "__main__":
    unittest.main()
