"""The TLS listener and bearer tokens (--tls-cert, --tls-key, --tls-client-ca; /v1/tokens), against
real certificates made by openssl for each run: every refusal the issue lists (wrong CA, expired
certificate, wrong token, read token on a write route, revoked token, expired token, a client
certificate not trusted, plain HTTP to the TLS port) answers as documented, is recorded in
auth_failures and changes nothing else; a change made with a token records token:NAME as its
actor; the secret is stored only as a hash; a peer that keeps failing is rate-limited (429).
The knob a test changes is put back in addCleanup."""
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

from lib import CTL, E2E_USER, Daemon, bracketed, free_port, real_file, real_write, wait_accepted
from test_openapi import Validator, load_spec

SPEC = load_spec()

DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


class Certs:
    """A CA, a server certificate for 127.0.0.1 signed by it, an expired one, a second unrelated
    CA, and client certificates from a client CA and from the unrelated one."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mpd-tls-")
        for ca in ("ca", "other", "clientca"):
            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", ca + ".key", "-out", ca + ".pem", "-subj", "/CN=mpd test " + ca, "-days", "2",
                    cwd=self.dir)
        with open(self.path("server.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        with open(self.path("client.ext"), "w") as f:
            f.write("extendedKeyUsage=clientAuth\n")
        self.sign("server", "ca", "server.ext", days="2")
        self.sign("expired", "ca", "server.ext", days="-1")   # notAfter before now
        self.sign("client", "clientca", "client.ext", days="2")
        self.sign("rogue", "other", "client.ext", days="2")

    def sign(self, name, ca, ext, days):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", name + ".key",
                "-out", name + ".csr", "-subj", "/CN=localhost", cwd=self.dir)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key", "-CAcreateserial",
                "-out", name + ".pem", "-days", days, "-extfile", ext, cwd=self.dir)

    def path(self, name):
        return os.path.join(self.dir, name)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class TLSBase(unittest.TestCase):
    """A daemon with a TLS listener on a free loopback port, certificates made for the class."""
    extra_args = ()
    user = E2E_USER   # the daemon's --user (lib.Daemon's default unless a class names one)

    @classmethod
    def setUpClass(cls):
        cls.certs = Certs()
        cls.port = free_port()
        cls.d = Daemon(None, ["--listen-tcp", "127.0.0.1:%d" % cls.port, "--tls-cert", cls.certs.path("server.pem"),
                              "--tls-key", cls.certs.path("server.key")] + list(cls.extra_args(cls.certs)
                                                                                  if callable(cls.extra_args)
                                                                                  else cls.extra_args),
                       clock_ns=time.time_ns(), user=cls.user)
        try:
            cls.d.start()
        except Exception:
            cls.certs.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.d.cleanup()
        finally:
            cls.certs.cleanup()
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, cls.d.last_log))

    def context(self, ca="ca.pem", cert=None):
        ctx = ssl.create_default_context(cafile=self.certs.path(ca))
        if cert:
            ctx.load_cert_chain(self.certs.path(cert + ".pem"), self.certs.path(cert + ".key"))
        return ctx

    def tls(self, method, path, token=None, body=None, ctx=None, headers=None):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        raw = None
        if body is not None:
            raw = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx or self.context(), timeout=30)
        try:
            c.request(method, path, body=raw, headers=h)
            r = c.getresponse()
            data = r.read().decode()
            return r.status, dict(r.getheaders()), json.loads(data) if data else None
        finally:
            c.close()

    def make_token(self, name, scope, expires=None):
        body = {"name": name, "scope": scope}
        if expires is not None:
            body["expires_in_s"] = expires
        r = self.d.request("POST", "/v1/tokens", body=body)
        self.assertEqual(r.status, 201, r.raw)
        return r.json["token"]

    def failures(self):
        return self.d.sql("SELECT peer, reason, token_name FROM auth_failures ORDER BY id")

    def assertRefused(self, answer, status, code, op=None):
        st, headers, body = answer
        self.assertEqual(st, status, body)
        self.assertEqual(headers.get("Content-Type"), "application/problem+json")
        self.assertEqual(body["code"], code, body)
        if status == 401:
            self.assertTrue(headers.get("WWW-Authenticate", "").startswith("Bearer "), headers)
        if op:
            # what schema/openapi.yaml declares for the operation (METHOD, path template) and this
            # status: the problem's schema, the code in its description, and its headers
            v = Validator(SPEC)
            resp = v.resolve(SPEC["paths"][op[1]][op[0].lower()]["responses"][str(status)])
            v.check(body, resp["content"]["application/problem+json"]["schema"])
            self.assertIn(code, resp["description"])
            for h in resp.get("headers", {}):
                self.assertIn(h.lower(), {k.lower() for k in headers}, "%s %s %d" % (op + (status,)))


class TLSTokens(TLSBase):
    extra_args = ("--auth-failures-per-minute", "1000")

    def test_a_token_reads_and_the_secret_is_stored_only_as_a_hash(self):
        tok = self.make_token("reader", "read")
        self.assertRegex(tok, r"^mpt_[0-9a-f]{16}_[0-9a-f]{64}$")
        st, _, body = self.tls("GET", "/v1/health", tok)
        self.assertEqual((st, body["status"]), (200, "ok"))
        # The secret appears nowhere in the database file; its SHA-256 is what is kept.
        with open(self.d.db, "rb") as f:
            self.assertNotIn(tok.split("_")[2].encode(), f.read())
        import hashlib
        (h,), = self.d.sql("SELECT hash FROM tokens WHERE name = 'reader'")
        self.assertEqual(h, hashlib.sha256(tok.split("_")[2].encode()).digest())
        listed = {t["name"]: t for t in self.d.get("/v1/tokens").json["items"]}
        self.assertIsNotNone(listed["reader"]["last_used_ns"])
        self.assertNotIn("token", listed["reader"])
        self.assertNotIn("hash", listed["reader"])

    def test_an_admin_token_changes_and_history_names_it(self):
        was = bracketed(real_file(DEFRAG))
        self.addCleanup(real_write, DEFRAG, was)
        other = "never" if was != "never" else "madvise"
        tok = self.make_token("orchestrator", "admin")
        st, _, body = self.tls("PUT", "/v1/knobs/thp.defrag", tok, {"value": other})
        self.assertEqual(st, 200, body)
        self.assertEqual(bracketed(real_file(DEFRAG)), other)
        op = self.d.get("/v1/history/%d" % body["operation_id"]).json
        self.assertEqual(op["actor"], {"uid": None, "name": "token:orchestrator"})

    def test_refusals_change_nothing_and_are_recorded(self):
        reader = self.make_token("ro", "read")
        revoked = self.make_token("gone", "admin")
        self.assertEqual(self.d.request("DELETE", "/v1/tokens/gone").status, 200)
        before_knob, before_ops = real_file(DEFRAG), self.d.sql("SELECT count(*) FROM operations")
        nfail = len(self.failures())
        wrong = reader[:-4] + ("0000" if not reader.endswith("0000") else "1111")
        cases = [
            (None, 401, "auth.unauthenticated", None),                              # no token
            ("mpt_zz", 401, "auth.unauthenticated", None),                          # malformed
            ("mpt_%s_%s" % ("0" * 16, "0" * 64), 401, "auth.unauthenticated", None),  # unknown id
            (wrong, 401, "auth.unauthenticated", "ro"),                             # wrong secret
            (revoked, 401, "auth.unauthenticated", "gone"),                         # revoked
        ]
        for tok, status, code, name in cases:
            with self.subTest(token=tok):
                self.assertRefused(self.tls("PUT", "/v1/knobs/thp.defrag", tok, {"value": "never"}), status, code,
                                   ("PUT", "/v1/knobs/{name}"))
        # A read token on a change: 403 by scope, not a failed authentication.
        self.assertRefused(self.tls("PUT", "/v1/knobs/thp.defrag", reader, {"value": "never"}), 403, "auth.scope")
        # Launching needs a uid, which a token does not have.
        admin = self.make_token("launcher", "admin")
        self.assertRefused(self.tls("POST", "/v1/processes", admin, {"argv": ["/bin/true"]}), 403, "auth.forbidden")
        # Tokens never mint tokens.
        self.assertRefused(self.tls("POST", "/v1/tokens", admin, {"name": "child", "scope": "admin"}), 403,
                           "token.root_only")
        self.assertEqual(real_file(DEFRAG), before_knob)
        self.assertEqual(self.d.sql("SELECT count(*) FROM operations"), before_ops)
        rec = self.failures()[nfail:]
        self.assertEqual([(r[1], r[2]) for r in rec], [("auth.unauthenticated", n) for _, _, _, n in cases])
        self.assertTrue(all(r[0] == "127.0.0.1" for r in rec), rec)

    def test_an_expired_token_is_refused(self):
        tok = self.make_token("short", "read", expires=60)
        self.assertEqual(self.tls("GET", "/v1/health", tok)[0], 200)
        self.d.set_clock(self.d.sql("SELECT expires_ns FROM tokens WHERE name = 'short'")[0][0])
        st, _, body = self.tls("GET", "/v1/health", tok)
        self.assertEqual((st, body["code"]), (401, "auth.unauthenticated"))
        self.assertIn("expired", body["detail"])

    def test_the_server_certificate_of_another_ca_is_refused_by_the_client(self):
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.tls("GET", "/v1/health", ctx=self.context(ca="other.pem"))
        p = subprocess.run([CTL, "--url", "https://127.0.0.1:%d" % self.port, "--cacert", self.certs.path("other.pem"),
                            "status"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, MEMPOLICYD_TOKEN=self.make_token("cli-other", "read")))
        self.assertEqual((p.returncode, p.stdout), (3, ""), p.stderr)

    def test_plain_http_to_the_tls_port_gets_no_answer(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        finally:
            s.close()
        self.assertFalse(data.startswith(b"HTTP/"), data)
        self.assertNotIn(b"kernel_release", data)
        self.assertEqual(self.d.get("/v1/health").status, 200)   # still serving

    def test_the_cli_over_tls(self):
        tok = self.make_token("cli", "read")
        url = "https://127.0.0.1:%d" % self.port
        env = dict(os.environ, MEMPOLICYD_TOKEN=tok)
        p = subprocess.run([CTL, "--url", url, "--cacert", self.certs.path("ca.pem"), "--json", "status"],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kernel_release", json.loads(p.stdout)["health"] if "health" in json.loads(p.stdout) else json.loads(p.stdout))
        tf = os.path.join(self.certs.dir, "tokfile")
        with open(tf, "w") as f:
            f.write(tok + "\n")
        p = subprocess.run([CTL, "--url", url, "--cacert", self.certs.path("ca.pem"), "--token-file", tf,
                            "knob", "set", "thp.defrag=never"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("(auth.scope)", p.stderr)
        # Never over plain http, and never from argv.
        p = subprocess.run([CTL, "--url", "http://127.0.0.1:%d" % self.port, "status"], capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        p = subprocess.run([CTL, "--token", tok, "--url", url, "status"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        p = subprocess.run([CTL, "--url", "https://127.0.0.1:%d/v1" % self.port, "status"], capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_token_routes_are_roots_on_the_unix_socket(self):
        before = self.d.sql("SELECT * FROM tokens")
        for body, code in [({"name": "x", "scope": "write"}, "token.bad_request"),
                           ({"name": "", "scope": "read"}, "token.bad_request"),
                           ({"name": "x", "scope": "read", "expires_in_s": 0}, "token.bad_request"),
                           ({"name": "x", "scope": "read", "bogus": 1}, "request.unknown_field"),
                           ({"name": "x"}, "request.missing_field"),
                           ({"name": 5, "scope": "read"}, "request.wrong_type")]:
            with self.subTest(body=body):
                r = self.d.request("POST", "/v1/tokens", body=body)
                self.assertEqual(r.json["code"], code, r.raw)
        self.assertEqual(self.d.sql("SELECT * FROM tokens"), before)
        self.make_token("dup", "read")
        r = self.d.request("POST", "/v1/tokens", body={"name": "dup", "scope": "admin"})
        self.assertEqual((r.status, r.json["code"]), (409, "token.exists"))
        r = self.d.request("DELETE", "/v1/tokens/nope")
        self.assertEqual((r.status, r.json["code"]), (404, "token.not_found"))


class TLSRateLimit(TLSBase):
    extra_args = ("--auth-failures-per-minute", "3")

    def test_a_peer_that_keeps_failing_is_refused_for_the_rest_of_the_minute(self):
        good = self.make_token("good", "read")
        bad = "mpt_%s_%s" % ("1" * 16, "2" * 64)
        for _ in range(3):
            self.assertRefused(self.tls("GET", "/v1/health", bad), 401, "auth.unauthenticated", ("GET", "/v1/health"))
        st, headers, body = self.tls("GET", "/v1/health", good)   # even a good token, from that peer
        self.assertRefused((st, headers, body), 429, "auth.rate_limited", ("GET", "/v1/health"))
        self.assertTrue(1 <= int(headers["Retry-After"]) <= 60, headers)
        reasons = [r[1] for r in self.failures()]
        self.assertEqual(reasons, ["auth.unauthenticated"] * 3 + ["auth.rate_limited"])
        self.assertEqual(self.d.get("/v1/health").status, 200)   # the Unix socket is not limited


class TLSPerAddress(TLSBase):
    extra_args = ("--max-connections-per-address", "1")

    def test_a_second_connection_from_one_address_is_cut_without_plain_text(self):
        """Over TLS a refusal cannot be written as plain HTTP (the client's TLS stack would read
        noise): the connection over the per-address limit is closed, and the next one after the
        first let go is served."""
        tok = self.make_token("peraddr", "read")
        held = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            wait_accepted(self.port)   # accepted and counted: it no longer waits in the listen backlog
            raw = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            try:
                self.assertEqual(raw.recv(4096), b"", "the refused connection must be closed with nothing written")
            finally:
                raw.close()
            with self.assertRaises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected, OSError)):
                self.tls("GET", "/v1/health", tok)
        finally:
            held.close()
        deadline = time.monotonic() + 10
        while True:
            try:
                st, _, _ = self.tls("GET", "/v1/health", tok)
                break
            except (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected, OSError):
                self.assertLess(time.monotonic(), deadline, "never let in again")
                time.sleep(0.1)
        self.assertEqual(st, 200)
        self.assertIn("address 127.0.0.1 already holds 1 connections", self.d.log_text())


class MutualTLS(TLSBase):
    extra_args = staticmethod(lambda certs: ("--tls-client-ca", certs.path("clientca.pem")))

    def test_client_certificates(self):
        tok = self.make_token("mtls", "read")
        st, _, _ = self.tls("GET", "/v1/health", tok, ctx=self.context(cert="client"))
        self.assertEqual(st, 200)
        self.assertRefused(self.tls("GET", "/v1/health", tok), 403, "auth.client_certificate", ("GET", "/v1/health"))
        try:
            answer = self.tls("GET", "/v1/health", tok, ctx=self.context(cert="rogue"))
        except (ssl.SSLError, ConnectionResetError):
            answer = None   # refused at the handshake is as good
        if answer:
            self.assertRefused(answer, 403, "auth.client_certificate")
        self.assertEqual([r[1] for r in self.failures()], ["auth.client_certificate"] * (2 if answer else 1))


class ExpiredServerCertificate(unittest.TestCase):
    def test_the_client_refuses_an_expired_server_certificate(self):
        certs = Certs()
        self.addCleanup(certs.cleanup)
        port = free_port()
        d = Daemon(None, ["--listen-tcp", "127.0.0.1:%d" % port, "--tls-cert", certs.path("expired.pem"),
                          "--tls-key", certs.path("expired.key")])
        self.addCleanup(d.cleanup)
        d.start()
        ctx = ssl.create_default_context(cafile=certs.path("ca.pem"))
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
        with self.assertRaises(ssl.SSLCertVerificationError) as cm:
            c.request("GET", "/v1/health")
        c.close()
        self.assertIn("expired", str(cm.exception))


class StartupRefusals(unittest.TestCase):
    def test_bad_tls_configurations_do_not_start(self):
        certs = Certs()
        self.addCleanup(certs.cleanup)
        port = "127.0.0.1:%d" % free_port()
        cases = [
            (["--tls-cert", certs.path("server.pem"), "--tls-key", certs.path("server.key")], "together"),  # no TCP
            (["--listen-tcp", port, "--tls-cert", certs.path("server.pem")], "together"),                  # no key
            (["--listen-tcp", port, "--tls-cert", certs.path("server.pem"), "--tls-key", certs.path("client.key")],
             "cannot be used together"),                                                                  # mismatch
            (["--listen-tcp", port, "--tls-cert", certs.path("server.pem"), "--tls-key", "/nonexistent"],
             "cannot open the TLS key"),
            (["--listen-tcp", "0.0.0.0:%d" % free_port()], "not a loopback address"),   # plain, not loopback
        ]
        for args, why in cases:
            with self.subTest(args=args):
                d = Daemon(None, args)
                try:
                    with self.assertRaises(RuntimeError) as cm:
                        d.start(timeout=20)
                    self.assertIn("exited", str(cm.exception))
                    self.assertIn(why, str(cm.exception))
                finally:
                    d.cleanup()


if __name__ == "__main__":
    unittest.main()
