#!/bin/sh
# mempolicyctl's embedded libcurl: HTTP over a Unix socket or loopback, no TLS, no other protocol.
#
#   tools/build-curl.sh fetch CACHE [COPY]   download and verify the sources into CACHE/VERSION/dl
#                                            (and copy them to COPY/VERSION/dl: the package's tree)
#   tools/build-curl.sh MODE CACHE OUTDIR    MODE auto|embedded|system: build (once, in
#                                            CACHE/VERSION) and write OUTDIR/cflags and OUTDIR/libs,
#                                            which the Makefile compiles and links the client with
#
# Why: Debian's libcurl-gnutls drags 33 shared objects (GnuTLS, Kerberos, LDAP, SASL, SSH, RTMP,
# HTTP/2, IDN, PSL, brotli, zstd) into every `mempolicyctl status`, and loading them is most of its
# start-up time (bench/README.md, section 3). The client links this HTTP-only copy statically for
# the local daemon and dlopens the system's libcurl-gnutls only for https (client/curlapi.h), so
# the network-facing TLS path keeps Debian's security updates.
#
# The source is Debian bookworm's own: the upstream tarball and Debian's patch series of the
# version below, both pinned by sha256 (the sums of the .dsc). The series is applied in order but
# for its last two patches, which only rename the library for Debian's GnuTLS and NSS flavours
# (debian/rules pops them to build the OpenSSL one); nothing is autoreconf'd: the patches that
# touch configure.ac or Makefile.am change only GSSAPI, LDAP, zsh and the test suite, none of
# which is built here, and AM_MAINTAINER_MODE keeps make from trying to regenerate them.
#
# auto: when the sources cannot be downloaded (no network), say so loudly and fall back to the
# system's libcurl for both transports; a bad checksum or a failed build is an error, never a
# fallback. embedded: the fallback is an error too (the Debian package). system: no embedding.
set -eu

CURL_VERSION=7.88.1
CURL_DEBVERSION=7.88.1-10+deb12u15
ORIG=curl_${CURL_VERSION}.orig.tar.gz
ORIG_SHA256=cdb38b72e36bc5d33d5b8810f8018ece1baa29a8f215b4495e495ded82bbf3c7
DEBIAN=curl_${CURL_DEBVERSION}.debian.tar.xz
DEBIAN_SHA256=961b78bc48492c5693e4decb352ddd176f343260a8956f48b2887874048ef23b
MIRROR=${CURL_MIRROR:-http://deb.debian.org/debian/pool/main/c/curl}
# Not the project's CFLAGS: one build serves every build directory (plain, sanitized, bench), so
# it is optimised and hardened like Debian's own libraries, and never sanitized.
CURL_CFLAGS=${CURL_CFLAGS:--O2 -g -fstack-protector-strong -fstack-clash-protection -fcf-protection -D_FORTIFY_SOURCE=2}
# What mempolicyctl needs: HTTP/1.1, Unix sockets, IPv6 literals, the threaded resolver for
# "localhost". Everything else off, and every optional library refused by name so that configure
# cannot pick one up from the build host.
CONFIGURE_ARGS="--disable-shared --enable-static --with-pic --disable-dependency-tracking --enable-symbol-hiding
 --enable-http --enable-unix-sockets --enable-ipv6 --enable-threaded-resolver
 --without-ssl --without-hyper --without-zlib --without-brotli --without-zstd --without-libidn2 --without-libpsl
 --without-nghttp2 --without-ngtcp2 --without-nghttp3 --without-quiche --without-msh3 --without-librtmp
 --without-libssh2 --without-libssh --without-wolfssh --without-libgsasl --without-gssapi
 --without-ca-bundle --without-ca-path --without-zsh-functions-dir --without-fish-functions-dir
 --disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet
 --disable-tftp --disable-pop3 --disable-imap --disable-smtp --disable-gopher --disable-mqtt --disable-smb
 --disable-manual --disable-libcurl-option --disable-netrc --disable-alt-svc --disable-hsts --disable-cookies
 --disable-ntlm --disable-ntlm-wb --disable-tls-srp --disable-crypto-auth --disable-http-auth --disable-proxy
 --disable-doh --disable-mime --disable-dateparse --disable-progress-meter --disable-get-easy-options
 --disable-headers-api --disable-websockets --disable-ares"

say() { echo "build-curl: $*" >&2; }

loud() {
	say "****************************************************************************"
	for l in "$@"; do say "** $l"; done
	say "****************************************************************************"
}

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# 0 when both files are in CACHE/dl and verified, 1 when they could not be downloaded; exits on a
# checksum mismatch (a wrong pin or a tampered mirror is never a reason to fall back quietly).
fetch() {
	mkdir -p "$CACHE/dl"
	for f in "$ORIG:$ORIG_SHA256" "$DEBIAN:$DEBIAN_SHA256"; do
		name=${f%%:*} sum=${f#*:}
		sha_ok "$CACHE/dl/$name" "$sum" && continue
		say "downloading $MIRROR/$name"
		rm -f "$CACHE/dl/$name.part"
		if command -v curl >/dev/null; then
			curl -fsSL --connect-timeout 15 --max-time 600 --retry 2 -o "$CACHE/dl/$name.part" "$MIRROR/$name" || return 1
		elif command -v wget >/dev/null; then
			wget -q --timeout=15 --tries=2 -O "$CACHE/dl/$name.part" "$MIRROR/$name" || return 1
		else
			say "neither curl nor wget is installed"
			return 1
		fi
		if ! sha_ok "$CACHE/dl/$name.part" "$sum"; then
			say "$name: sha256 $(sha256sum "$CACHE/dl/$name.part" | cut -d' ' -f1), expected $sum: refusing it"
			rm -f "$CACHE/dl/$name.part"
			exit 1
		fi
		mv "$CACHE/dl/$name.part" "$CACHE/dl/$name"
	done
}

build() {
	stamp="$CONFIGURE_ARGS $CURL_CFLAGS"
	if [ -f "$CACHE/inst/lib/libcurl.a" ] && [ "$(cat "$CACHE/inst/stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	say "building libcurl $CURL_DEBVERSION (HTTP only, static) in $CACHE (log: $CACHE/build.log)"
	rm -rf "$CACHE/src" "$CACHE/obj" "$CACHE/inst"
	mkdir -p "$CACHE/src" "$CACHE/obj" "$CACHE/inst/lib" "$CACHE/inst/include/curl"
	tar -C "$CACHE/src" --strip-components=1 -xzf "$CACHE/dl/$ORIG"
	tar -C "$CACHE/src" -xJf "$CACHE/dl/$DEBIAN"
	: >"$CACHE/build.log"
	for p in $(sed -e 's/#.*//' "$CACHE/src/debian/patches/series"); do
		case $p in 90_gnutls.patch | 99_nss.patch) continue ;; esac
		echo "patch $p" >>"$CACHE/build.log"
		patch -d "$CACHE/src" -p1 --batch --forward <"$CACHE/src/debian/patches/$p" >>"$CACHE/build.log" 2>&1 ||
			{ tail -20 "$CACHE/build.log" >&2; say "Debian's patch $p does not apply"; exit 1; }
	done
	# shellcheck disable=SC2086  # CONFIGURE_ARGS is a word list
	(cd "$CACHE/obj" && ../src/configure $CONFIGURE_ARGS CFLAGS="$CURL_CFLAGS" CPPFLAGS= LDFLAGS= LIBS= \
		>>"$CACHE/build.log" 2>&1 && make -C lib -j2 >>"$CACHE/build.log" 2>&1) ||
		{ tail -30 "$CACHE/build.log" >&2; say "the libcurl build failed"; exit 1; }
	cp "$CACHE/obj/lib/.libs/libcurl.a" "$CACHE/inst/lib/"
	cp "$CACHE"/src/include/curl/*.h "$CACHE/inst/include/curl/"
	sed -n 's/^Libs.private: *//p' "$CACHE/obj/libcurl.pc" >"$CACHE/inst/libs.private"
	echo "$stamp" >"$CACHE/inst/stamp"
}

# Rewrites FILE only when its content changes, so that make rebuilds what depends on it only then.
put() {
	printf '%s\n' "$2" >"$1.tmp"
	if cmp -s "$1.tmp" "$1"; then rm -f "$1.tmp"; else mv "$1.tmp" "$1"; fi
}

# MPD_CURL_SYSTEM: 1 chosen (CURL_MODE=system), 2 the fallback; --version says which.
system_flags() {
	put "$OUT/cflags" "$(pkg-config --cflags libcurl) -DMPD_CURL_SYSTEM=$1"
	put "$OUT/libs" "$(pkg-config --libs libcurl)"
}

usage() { echo "usage: $0 fetch CACHE [COPY] | auto|embedded|system CACHE OUTDIR" >&2; exit 2; }
MODE=${1:-}
[ -n "${2:-}" ] || usage
CACHE=$2/$CURL_DEBVERSION
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
# One build at a time per cache, whichever build directory asks for it.
exec 9>"$CACHE/.lock"
flock 9

case $MODE in
fetch)
	fetch || { say "cannot download the curl sources from $MIRROR"; exit 1; }
	if [ -n "${3:-}" ]; then
		mkdir -p "$3/$CURL_DEBVERSION/dl"
		cp -p "$CACHE/dl/$ORIG" "$CACHE/dl/$DEBIAN" "$3/$CURL_DEBVERSION/dl/"
	fi
	exit 0 ;;
auto | embedded | system) ;;
*) usage ;;
esac
OUT=${3:?no OUTDIR}
mkdir -p "$OUT"
if [ "$MODE" = system ]; then
	system_flags 1
	exit 0
fi
if ! fetch; then
	if [ "$MODE" = embedded ]; then
		say "cannot download the curl sources from $MIRROR, and CURL_MODE=embedded"
		exit 1
	fi
	loud "cannot download the curl sources ($ORIG, $DEBIAN) from $MIRROR." \
		"mempolicyctl is linked with the SYSTEM's libcurl for the Unix socket too: it works," \
		"but every command loads libcurl-gnutls's 33 libraries (start-up several ms slower)." \
		"With network, the next make embeds the HTTP-only libcurl (or put both files in $CACHE/dl)."
	system_flags 2
	exit 0
fi
build
# --exclude-libs: the executable must never export the static copy's curl_* symbols, else the
# libcurl-gnutls that https dlopens would bind its own internal calls to them.
# (The Makefile expands these files unquoted: no spaces inside a word, and the quotes below reach
# the compiler as they are, making the macro a string.)
put "$OUT/cflags" "-I$CACHE/inst/include -DMPD_CURL_EMBEDDED=\"$CURL_DEBVERSION\""
put "$OUT/libs" "$CACHE/inst/lib/libcurl.a -Wl,--exclude-libs,libcurl.a $(cat "$CACHE/inst/libs.private")"
