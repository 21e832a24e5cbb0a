"""mempolicyctl's two transports (client/curlapi.h): the Unix socket and http:// to a loopback
address go through the HTTP-only libcurl linked into the binary, so such a command loads no TLS
stack and none of libcurl-gnutls's protocol libraries (the start-up cost of issue 12, item 8);
https and http:// to any other host dlopen the system's libcurl-gnutls, and without it the command
says which package is missing and exits 3. What was loaded is read from the dynamic loader itself
(LD_DEBUG=libs); the "missing" library is hidden in a private mount namespace, not faked.
test_tls.py's CLI tests exercise the dlopen'ed libcurl over real TLS."""
import os
import re
import subprocess
import unittest

from lib import CTL, Daemon, free_port

# libcurl-gnutls's own dependencies that a command on the socket must not load.
NETWORK_LIBS = re.compile(r"libcurl|libgnutls|libnettle|libhogweed|libtasn1|libp11-kit|libgssapi|libkrb5|"
                          r"libk5crypto|libldap|liblber|libsasl|libssh|librtmp|libnghttp2|libidn2|libpsl|"
                          r"libbrotli|libzstd")
SYSTEM_LIBCURL = "libcurl-gnutls.so.4"


def loaded(cmd, env=None):
    """Runs cmd with LD_DEBUG=libs: (the process, the sonames ld.so loaded, at start or by dlopen)."""
    e = dict(os.environ, LD_DEBUG="libs")
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=60)
    names = set(re.findall(r"\bfind library=(\S+) \[\d+\]", p.stderr))
    names |= set(os.path.basename(f) for f in re.findall(r"\bcalling init: (\S+)", p.stderr))
    return p, names


# Runs "$@" with the file $0 covered by /dev/null, in the mount namespace unshare made. unshare's
# default, making every mount private (MS_REC|MS_PRIVATE on "/"), fails where "/" is not a mount
# point (a chroot into a directory: "cannot change root filesystem propagation"), and without it a
# mount made on a shared mount (systemd makes "/" shared) would propagate to the parent namespace,
# hiding the library from the whole machine and outliving this namespace. So it builds a tree of
# its own: /proc, a mount point in any root the tests run in, is made private here and covered by
# a tmpfs; "/" is bound recursively under it, made private, and only then is the library covered;
# "$@" runs chrooted there with a /proc of its own, in the directory it was started from.
HIDE = """set -e
mount --make-rprivate /proc
mount -t tmpfs -o mode=0700 mpd-hide /proc
mkdir /proc/root
mount --rbind / /proc/root
mount --make-rprivate /proc/root
mount -t proc proc /proc/root/proc
mount --bind /dev/null "/proc/root$0"
exec chroot /proc/root sh -c 'cd "$0" && exec "$@"' "$PWD" "$@"
"""


def mount_points():
    """This namespace's mount points as it sees them (/proc/self/mountinfo's fifth field)."""
    with open("/proc/self/mountinfo") as f:
        return sorted(l.split()[4] for l in f)


def system_libcurl_path():
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^\s*%s \(.*x86-64.*\) => (\S+)" % re.escape(SYSTEM_LIBCURL), out, re.M) or \
        re.search(r"^\s*%s \(.*\) => (\S+)" % re.escape(SYSTEM_LIBCURL), out, re.M)
    return os.path.realpath(m.group(1)) if m else None


class EmbeddedBuild(unittest.TestCase):
    """The binary as built: what it links, exports and says about itself."""

    def test_version_names_the_embedded_http_only_libcurl(self):
        p = subprocess.run([CTL, "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], r"^mempolicyctl \d+\.\d+\.\d+$")
        self.assertRegex(lines[1], r"^unix socket: libcurl/7\.88\.1 embedded \(Debian's curl 7\.88\.1-\S+, HTTP only\), "
                                   r"TLS none, protocols: http$",
                         "this build serves the Unix socket with the system's libcurl (see --version)")
        self.assertEqual(lines[2], "https: the system's %s, loaded by a command that uses it" % SYSTEM_LIBCURL)

    def test_links_no_libcurl_and_no_tls(self):
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                            subprocess.run(["readelf", "-d", CTL], capture_output=True, text=True, check=True).stdout)
        self.assertIn("libjansson.so.4", needed)   # the parse works: a library it does need is there
        self.assertEqual([n for n in needed if NETWORK_LIBS.search(n)], [], needed)
        ldd = subprocess.run(["ldd", CTL], capture_output=True, text=True, check=True).stdout
        self.assertIn("libjansson.so.4", ldd)
        self.assertEqual([l.strip() for l in ldd.splitlines() if NETWORK_LIBS.search(l)], [], ldd)

    def test_links_no_libm(self):
        """The client links common/ as an archive, so the daemon's statistics (common/stats*.c) and
        with them libm stay out: loading libm was about 0.09 ms of `mempolicyctl run`'s 1.7 ms
        (bench/README.md section 8)."""
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                            subprocess.run(["readelf", "-d", CTL], capture_output=True, text=True, check=True).stdout)
        self.assertIn("libc.so.6", needed)
        self.assertNotIn("libm.so.6", needed)

    def test_exports_no_curl_symbol(self):
        """The dlopen'ed libcurl-gnutls would bind its own internal curl_* calls to any the executable
        exported, that is to the embedded HTTP-only copy."""
        dyn = subprocess.run(["nm", "-D", "--defined-only", CTL], capture_output=True, text=True, check=True).stdout
        self.assertEqual([l for l in dyn.splitlines() if re.search(r"\b[Cc]url_", l)], [])
        # ...while the static copy is in the binary (a build that is not stripped shows it).
        full = subprocess.run(["nm", "--defined-only", CTL], capture_output=True, text=True).stdout
        if "no symbols" not in full and full:
            self.assertTrue(re.search(r"\bT curl_easy_perform\b", full), "no curl_easy_perform in the symbol table")


class SocketTransport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.d = Daemon(None, ["--listen-tcp", "127.0.0.1:%d" % cls.port]).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.cleanup()
        if rc not in (0, None):
            raise AssertionError("mempolicyd exited with %s:\n%s" % (rc, cls.d.last_log))

    def assertLocal(self, p, libs):
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertIn("daemon", p.stdout)
        self.assertIn("libjansson.so.4", libs)   # LD_DEBUG's lines were read
        self.assertEqual(sorted(l for l in libs if NETWORK_LIBS.search(l)), [])

    def test_status_on_the_socket_loads_no_tls(self):
        self.assertLocal(*loaded([CTL, "--socket", self.d.socket, "status"]))

    def test_http_to_loopback_loads_no_tls(self):
        for host in ("127.0.0.1", "localhost"):
            with self.subTest(host=host):
                self.assertLocal(*loaded([CTL, "--url", "http://%s:%d" % (host, self.port), "status"]))

    def test_http_to_another_address_uses_the_system_libcurl(self):
        """0.0.0.0 is not loopback to the client's rule, but Linux connects it to the local
        listener: the request arrives through the dlopen'ed libcurl, and the daemon refuses its
        Host (it names no address of the listener), which proves it was the daemon that answered."""
        p, libs = loaded([CTL, "--url", "http://0.0.0.0:%d" % self.port, "status"])
        self.assertEqual(p.returncode, 1, p.stderr[-3000:])
        self.assertIn("(request.misdirected)", p.stderr)
        self.assertIn(SYSTEM_LIBCURL, libs)
        self.assertIn("libgnutls.so.30", libs)

    @unittest.skipUnless(os.geteuid() == 0, "a private mount namespace needs root")
    def test_without_the_system_libcurl(self):
        """libcurl-gnutls hidden (/dev/null bound over it in a private mount namespace): https exits
        3 naming the package and sends nothing; the Unix socket works as before."""
        lib = system_libcurl_path()
        self.assertIsNotNone(lib, "ldconfig -p lists no " + SYSTEM_LIBCURL)
        hide = ["unshare", "--mount", "--propagation", "unchanged", "--", "sh", "-c", HIDE, lib]
        before, mounts = self.d.db_snapshot(), mount_points()
        p = subprocess.run(hide + [CTL, "--url", "https://127.0.0.1:%d" % self.port, "status"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (3, ""), p.stderr)
        self.assertIn("--url https://127.0.0.1:%d needs the system's libcurl: " % self.port, p.stderr)
        self.assertIn("install the package libcurl3-gnutls", p.stderr)
        p = subprocess.run(hide + [CTL, "--socket", self.d.socket, "knob", "get", "thp.enabled"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("thp.enabled", p.stdout)
        self.assertEqual(self.d.db_snapshot(), before)
        # Outside the namespace the library is there again (the failure above was the hiding's),
        # and no mount the hiding made came out of it.
        self.assertTrue(os.path.getsize(lib) > 0)
        self.assertEqual(mount_points(), mounts)


if __name__ == "__main__":
    unittest.main()
