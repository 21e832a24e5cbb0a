"""Benchmark 12: request latency over the TLS listener (with a bearer token) against the plain
loopback TCP listener (issue 11), side by side: two daemons on private sockets and databases
against the real kernel, one with --tls-cert/--tls-key, one plain, their requests alternating so
the machine's load weighs on both alike. Certificates are made by openssl for the run."""
import http.client
import json
import os
import ssl
import subprocess
import time

import benchlib as bl

PATH = "/v1/knobs/thp.enabled"

METHOD = ("GET {path} from Python's http.client, alternating one request to the TLS daemon (TLS 1.3, "
          "ECDSA P-256 certificate, Authorization: Bearer with a read token) and one to the plain "
          "loopback daemon; wall time from the request to the last byte; {n} each after {warm} unmeasured; "
          "{how}")


def _certs(wd):
    def ossl(*a):
        subprocess.run(["openssl"] + list(a), cwd=wd, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
         "-out", "ca.pem", "-subj", "/CN=bench ca", "-days", "2")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
         "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(wd, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.pem", "-days", "2", "-extfile", "ext")


def _timed(conn, headers):
    t0 = time.perf_counter_ns()
    conn.request("GET", PATH, headers=headers)
    r = conn.getresponse()
    body = r.read()
    ms = (time.perf_counter_ns() - t0) / 1e6
    if r.status != 200:
        raise bl.BenchError("GET %s answers %s" % (PATH, bl.describe(r.status, body)))
    return ms


def _p99(xs):
    s = sorted(xs)
    return s[max(0, -(-len(s) * 99 // 100) - 1)]


def run(ctx):
    n = 300 if ctx.rounds <= 2 else 2000
    n_conn = 50 if ctx.rounds <= 2 else 300
    warm = 20
    rows = []
    tls = plain = None
    try:
        wd = ctx.workdir_for("tls")
        _certs(wd)
        port = bl.free_port()
        tls = bl.Daemon(ctx.bin_dir, ctx.workdir_for("tls-daemon"), tcp=False,
                        args=["--listen-tcp", "127.0.0.1:%d" % port, "--tls-cert", os.path.join(wd, "server.pem"),
                              "--tls-key", os.path.join(wd, "server.key")]).start()
        plain = bl.Daemon(ctx.bin_dir, ctx.workdir_for("plain-daemon")).start()
        st, _, raw, _ = tls.request("POST", "/v1/tokens", {"name": "bench", "scope": "read"})
        if st != 201:
            raise bl.BenchError("POST /v1/tokens answers %s" % bl.describe(st, raw))
        auth = {"Authorization": "Bearer " + json.loads(raw)["token"]}
        sslctx = ssl.create_default_context(cafile=os.path.join(wd, "ca.pem"))

        def tls_conn():
            return http.client.HTTPSConnection("127.0.0.1", port, context=sslctx, timeout=30)

        def plain_conn():
            return http.client.HTTPConnection("127.0.0.1", plain.port, timeout=30)

        # Keep-alive: one connection each, as an orchestrator keeps its connection.
        ct, cp = tls_conn(), plain_conn()
        kt, kp = [], []
        for i in range(warm + n):
            a, b = _timed(ct, auth), _timed(cp, {})
            if i >= warm:
                kt.append(a)
                kp.append(b)
        ct.close()
        cp.close()
        how = "one keep-alive connection per daemon"
        m = METHOD.format(path=PATH, n=n, warm=warm, how=how)
        rows.append(bl.row("tls.keepalive.p50", "GET %s over TLS + token vs plain TCP, keep-alive, median" % PATH,
                           "ms", kt, kp, ref_name="plain loopback TCP", method=m))
        rows.append(bl.row("tls.keepalive.p99", "... the same, p99 (nearest rank)", "ms", [_p99(kt)], [_p99(kp)],
                           ref_name="plain loopback TCP", method=m))
        # A new connection per request: the TLS handshake's cost, which a client that reconnects pays.
        nt, np_ = [], []
        for i in range(warm + n_conn):
            t0 = time.perf_counter_ns()
            c = tls_conn()
            _timed(c, auth)
            c.close()
            a = (time.perf_counter_ns() - t0) / 1e6
            t0 = time.perf_counter_ns()
            c = plain_conn()
            _timed(c, {})
            c.close()
            b = (time.perf_counter_ns() - t0) / 1e6
            if i >= warm:
                nt.append(a)
                np_.append(b)
        m = METHOD.format(path=PATH, n=n_conn, warm=warm, how="a new connection (and TLS handshake) per request, "
                          "connect to close")
        rows.append(bl.row("tls.connect.p50", "GET %s over TLS + token vs plain TCP, new connection each, median"
                           % PATH, "ms", nt, np_, ref_name="plain loopback TCP", method=m))
    except (bl.BenchError, OSError, subprocess.CalledProcessError) as e:
        rows.append(bl.unavailable("tls", "request latency over TLS vs plain TCP", str(e)))
    finally:
        for d in (tls, plain):
            if d:
                d.stop()
    return rows
