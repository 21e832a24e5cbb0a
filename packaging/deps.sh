#!/bin/sh
# Install the Debian packages a stage needs, only those missing, only as root.
# Usage: packaging/deps.sh build|test|vm|bench|fuzz|deb
set -eu
# curl, patch and xz-utils fetch, patch and unpack the source of mempolicyctl's embedded libcurl
# (tools/build-curl.sh); libcurl4-gnutls-dev stays for its headers' fallback and the https path.
build="gcc make pkg-config libmicrohttpd-dev libjansson-dev libnuma-dev libsqlite3-dev libcurl4-gnutls-dev libsystemd-dev libgnutls28-dev curl patch xz-utils libseccomp-dev"
test="$build check python3 python3-scipy python3-yaml curl sqlite3 passwd prometheus systemd man-db openssl jq"
vm="$build qemu-system-x86 busybox-static cpio python3 curl numactl"
bench="$build wrk nginx-light numactl curl python3 linux-source-6.1"
fuzz="$build clang libclang-rt-14-dev"
# The package stage also needs lintian, debootstrap (the fresh Debian 12 root) and Node.js with npm
# (the Kubernetes manifests' schema check, the generated API clients): Debian's nodejs does not
# bring npm, a package of its own. dpkg-buildpackage checks for build-essential besides the
# Build-Depends (dpkg-checkbuilddeps: "Unmet build dependencies: build-essential:native").
deb="$build build-essential debhelper dpkg-dev fakeroot"

case "${1:-build}" in
build) want=$build ;;
test)  want="$test $vm $deb lintian debootstrap nodejs npm" ;;
vm)    want=$vm ;;
bench) want=$bench ;;
fuzz)  want=$fuzz ;;
deb)   want=$deb ;;
*) echo "usage: $0 build|test|vm|bench|fuzz|deb" >&2; exit 2 ;;
esac

# A name an installed package provides counts as installed: NodeSource's nodejs provides npm and
# conflicts with Debian's, which apt would then refuse to install.
provided=$(dpkg-query -W -f='${db:Status-Abbrev}|${Provides}\n' 2>/dev/null | sed -n 's/^ii *|//p' |
	tr ',' '\n' | sed 's/^ *//; s/[ :].*//')
missing=""
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		printf '%s\n' "$provided" | grep -qx -- "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 ||
	{ apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $missing >/dev/null; }
