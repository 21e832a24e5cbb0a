"""Support for bench/run: the processes under test (mempolicyd, nginx, wrk), HTTP over the Unix
socket, /proc sampling, medians, and the result rows every benchmark returns.

A result row is a dict:
  id, title, unit, better ("lower"/"higher"), daemon, reference, reference_name, ratio (daemon /
  reference), goal (text or None), goal_met (bool or None), samples {daemon: [...], reference: [...]},
  method (how it was measured) -- or, when the thing cannot be measured, id, title and
  not_available (why). Benchmarks never invent a number: a missing endpoint is a not_available row."""
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import statistics
import subprocess
import threading
import time


class BenchError(Exception):
    """A benchmark cannot run; the message becomes the not_available reason."""


def median(xs):
    return statistics.median(xs) if xs else None


def proc_status(pid, key):
    """The first field of the line `key:` of /proc/PID/status, or None."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split()[1]
    return None


def alternating(warm, n, measure_a, measure_b):
    """warm + n pairs, the two measured back to back and which goes first alternating (the second
    of a pair finds caches warm); the last n of each, as two lists."""
    a, b = [], []
    for i in range(warm + n):
        if i % 2:
            y, x = measure_b(), measure_a()
        else:
            x, y = measure_a(), measure_b()
        if i >= warm:
            a.append(x)
            b.append(y)
    return a, b


def p99_nearest_rank(xs):
    """The nearest-rank 99th percentile (the sample at rank ceil(0.99 n))."""
    s = sorted(xs)
    return s[max(0, -(-len(s) * 99 // 100) - 1)]


def row(id, title, unit, daemon_samples, ref_samples=None, ref_name=None, better="lower", goal=None,
        goal_check=None, method="", extra=None):
    """A comparison row from raw samples: medians, ratio daemon/reference, goal verdict.
    goal_check(daemon_median, ratio) -> bool decides goal_met."""
    d = median(daemon_samples)
    r = median(ref_samples) if ref_samples else None
    ratio = d / r if d is not None and r else None
    met = goal_check(d, ratio) if goal_check and d is not None else None
    out = {"id": id, "title": title, "unit": unit, "better": better, "daemon": d, "reference": r,
           "reference_name": ref_name, "ratio": ratio, "goal": goal, "goal_met": met,
           "samples": {"daemon": list(daemon_samples), "reference": list(ref_samples or [])},
           "method": method}
    if ref_samples and len(ref_samples) == len(daemon_samples) and all(ref_samples):
        # Rounds are paired (measured back to back): the median of per-round ratios is less
        # sensitive to slow drifts in machine load than the ratio of the medians.
        out["ratio_paired"] = median([x / y for x, y in zip(daemon_samples, ref_samples)])
    if extra:
        out.update(extra)
    return out


def unavailable(id, title, why):
    return {"id": id, "title": title, "not_available": why}


def describe(status, raw):
    """'404 request.not_found' from a problem+json answer: the reason a row is not available."""
    try:
        code = json.loads(raw).get("code")
    except (ValueError, AttributeError):
        code = None
    text = "%d %s" % (status, code or raw[:80].decode("utf-8", "replace"))
    return text + (" (endpoint not built yet)" if code == "request.not_found" else "")


def free_port():
    """A loopback port nobody listens on right now (small race with other processes, accepted)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_tcp(port, proc, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError("%s exited with %d at start" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BenchError("%s did not listen on 127.0.0.1:%d within %ds" % (what, port, timeout))


def stop_proc(proc, sig=signal.SIGTERM, timeout=15):
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    proc.send_signal(sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


# ---- /proc ------------------------------------------------------------------------------------
def proc_status_kb(pid, fields=("VmRSS", "VmHWM")):
    """{field: kB} from /proc/PID/status; {} if the process is gone."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in fields:
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def children(pid):
    """Direct children of pid (nginx workers of the master)."""
    kids = []
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                kids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return kids


class RssSampler:
    """Samples VmRSS (summed over pids()) every interval seconds in a thread while active;
    peak_kb is the largest sum seen."""

    def __init__(self, pids, interval=0.02):
        self.pids = pids
        self.interval = interval
        self.peak_kb = 0
        self.samples = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            total = sum(proc_status_kb(p).get("VmRSS", 0) for p in self.pids())
            self.peak_kb = max(self.peak_kb, total)
            self.samples += 1
            self._stop.wait(self.interval)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


# ---- HTTP over the daemon's Unix socket --------------------------------------------------------
class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def unix_request(path, raw):
    """raw (a whole HTTP request that asks for Connection: close) sent on a new Unix-socket
    connection; (wall ms from connect to the daemon's close, the answer's bytes). Raw, because
    http.client's own parsing is a good part of a sub-millisecond figure."""
    t0 = time.perf_counter_ns()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(30)
        s.connect(path)
        s.sendall(raw)
        got = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    finally:
        s.close()
    return (time.perf_counter_ns() - t0) / 1e6, got


def http_call(conn, method, path, body=None):
    """(status, headers dict, raw bytes, parsed JSON or None) on an open connection."""
    headers = {}
    raw = None
    if body is not None:
        raw = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=raw, headers=headers)
    r = conn.getresponse()
    data = r.read()
    try:
        parsed = json.loads(data) if data else None
    except ValueError:
        parsed = None
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data, parsed


class Daemon:
    """mempolicyd on a private socket, database and loopback TCP port, against the real kernel."""

    def __init__(self, bin_dir, workdir, db=None, tcp=True, args=()):
        self.exe = os.path.join(bin_dir, "mempolicyd")
        self.args = list(args)   # more command-line arguments (--sysfs-root ... for a generated tree)
        self.dir = workdir
        self.socket = os.path.join(workdir, "mpd.sock")
        self.db = db or os.path.join(workdir, "mpd.db")
        self.log = os.path.join(workdir, "mpd.log")
        self.port = free_port() if tcp else None
        self.proc = None

    def _give_to_user(self):
        """Started as root without --user, the daemon serves as mempolicyd (privilege separation):
        the database's directory and a database the harness generated as root must be that
        user's (server/statedir.h), as the package's postinst makes /var/lib/mempolicyd."""
        if os.geteuid() != 0 or "--user" in self.args:
            return
        try:
            pw = pwd.getpwnam("mempolicyd")
        except KeyError:
            return   # the daemon says which useradd to run
        for p in (os.path.dirname(self.db), self.db, self.db + "-wal", self.db + "-shm"):
            if os.path.exists(p):
                os.chown(p, pw.pw_uid, pw.pw_gid)

    def start(self, timeout=15):
        self._give_to_user()
        cmd = [self.exe, "--socket", self.socket, "--db", self.db, "--log-level", "warn"]
        if self.port:
            cmd += ["--listen-tcp", "127.0.0.1:%d" % self.port]
        cmd += self.args
        with open(self.log, "a") as logf:
            self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError("mempolicyd exited with %d at start: %s" % (self.proc.returncode, self.log_tail()))
            try:
                if self.request("GET", "/v1/health")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise BenchError("mempolicyd did not answer within %ds" % timeout)

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        rc = stop_proc(self.proc)
        self.proc = None
        return rc

    def request(self, method, path, body=None, timeout=30):
        c = UnixHTTPConnection(self.socket, timeout)
        try:
            return http_call(c, method, path, body)
        finally:
            c.close()

    def connection(self, timeout=30):
        """A keep-alive connection over the Unix socket, for timing loops."""
        return UnixHTTPConnection(self.socket, timeout)

    def log_tail(self):
        try:
            with open(self.log) as f:
                return f.read()[-2000:]
        except OSError:
            return ""


NGINX_CONF = """daemon off;
master_process on;
worker_processes {workers};
user root;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {dir}/t_body;
    proxy_temp_path {dir}/t_proxy;
    fastcgi_temp_path {dir}/t_fastcgi;
    uwsgi_temp_path {dir}/t_uwsgi;
    scgi_temp_path {dir}/t_scgi;
    keepalive_requests 100000000;
    keepalive_timeout 60s;
    server {{
        listen 127.0.0.1:{port};
        root {dir}/www;
        location / {{ default_type {ctype}; }}
    }}
}}
"""


class Nginx:
    """nginx as root with a private configuration in a temporary directory, serving one static file."""

    def __init__(self, workdir, body, ctype="application/json", workers=2):
        self.dir = os.path.join(workdir, "nginx")
        self.body = body
        self.ctype = ctype.split(";")[0].strip() or "application/octet-stream"
        self.workers = workers
        self.port = free_port()
        self.proc = None
        self.path = "/body.json"

    def start(self):
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(exe):
            raise BenchError("nginx is not installed (packaging/deps.sh bench installs nginx-light)")
        os.makedirs(os.path.join(self.dir, "www"), exist_ok=True)
        with open(os.path.join(self.dir, "www", "body.json"), "wb") as f:
            f.write(self.body)
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(dir=self.dir, port=self.port, ctype=self.ctype, workers=self.workers))
        log = open(os.path.join(self.dir, "stderr.log"), "a")
        self.proc = subprocess.Popen([exe, "-p", self.dir, "-e", os.path.join(self.dir, "error.log"), "-c", conf],
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_tcp(self.port, self.proc, "nginx")
        return self

    def pids(self):
        if not self.proc or self.proc.poll() is not None:
            return []
        return [self.proc.pid] + children(self.proc.pid)

    def stop(self):
        # SIGQUIT: graceful stop of master and workers.
        rc = stop_proc(self.proc, signal.SIGQUIT)
        self.proc = None
        return rc


WRK_LUA = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKJSON {\"requests\":%d,\"duration_us\":%d,\"bytes\":%d,\"p50_us\":%.1f,\"p90_us\":%.1f," ..
    "\"p99_us\":%.1f,\"max_us\":%.1f,\"mean_us\":%.1f,\"err_connect\":%d,\"err_read\":%d," ..
    "\"err_write\":%d,\"err_status\":%d,\"err_timeout\":%d}\n",
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean, e.connect, e.read, e.write, e.status, e.timeout))
end
"""


def wrk(url, workdir, threads=2, connections=64, duration=3.0):
    """One wrk run; returns its summary (requests, duration, percentiles in us, error counts) plus rps.
    Latency percentiles come from wrk's own histogram (per request, measured by wrk)."""
    exe = shutil.which("wrk")
    if not exe:
        raise BenchError("wrk is not installed (packaging/deps.sh bench installs it)")
    script = os.path.join(workdir, "summary.lua")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(WRK_LUA)
    p = subprocess.run([exe, "-t%d" % threads, "-c%d" % connections, "-d%ds" % duration, "--timeout", "5s",
                        "-s", script, url], capture_output=True, text=True, timeout=duration + 60)
    for line in p.stdout.splitlines():
        if line.startswith("WRKJSON "):
            s = json.loads(line[8:])
            s["rps"] = s["requests"] / (s["duration_us"] / 1e6)
            s["errors"] = sum(s[k] for k in s if k.startswith("err_"))
            return s
    raise BenchError("wrk printed no summary (exit %d): %s" % (p.returncode, (p.stderr or p.stdout)[-500:]))
