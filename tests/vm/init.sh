#!/bin/busybox sh
# PID 1 of a test guest (copied into the initramfs by tests/vm/run, with /vm.conf next to it).
# Results go to the second serial port (/dev/ttyS1), which the host reads as a file; the console
# (ttyS0) keeps kernel messages. The last line on ttyS1 is always "VMSUITE_EXIT <rc>": a guest that
# dies before it is reported by the host as "never reported".
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
. /vm.conf
out=/dev/ttyS1

die() { echo "VMERROR $*" >$out; echo "VMSUITE_EXIT 99" >$out; poweroff -f; }

for m in $(cat /modules.order); do
	insmod /modules/$m.ko || die "insmod $m failed"
done
# The host root, read-only: the build tree, python3 and the daemon's shared libraries as they are.
# cache=loose keeps what was read in the guest's page cache: every run of the daemon (gnutls and
# friends) and of the CLI maps its libraries again, and without it each costs 9p round trips. Safe
# here: nothing on the host that the guest reads changes during a run.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose host /host || die "mounting the host root over 9p failed"
mount -t proc proc /host/proc || die "mount /host/proc"
mount -t sysfs sys /host/sys || die "mount /host/sys"
mount -t cgroup2 cgroup2 /host/sys/fs/cgroup || die "mount cgroup2"
mount -t devtmpfs dev /host/dev || die "mount /host/dev"
# The only writable place: the daemon's socket and database, the suite's temporary files. Not
# /tmp: the checkout itself may live under the host's /tmp (CI clones anywhere), and a tmpfs
# there would hide it. /dev is the guest's own devtmpfs, so nothing of the host is covered.
mkdir -p /host/dev/shm
mount -t tmpfs -o mode=1777 tmp /host/dev/shm || die "mount /host/dev/shm"

echo "VMINFO init at $(cut -d' ' -f1 /proc/uptime)s, kernel $(uname -r)" >$out
# tests/vm/run --fault: the harness's own test, a guest that goes wrong on purpose.
case "$FAULT" in
panic)	echo 1 >/proc/sys/kernel/sysrq; echo c >/proc/sysrq-trigger ;;
silent)	poweroff -f ;;
hang)	while :; do sleep 3600; done ;;
esac
chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/dev/shm TMPDIR=/dev/shm LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 MPD_BIN="$BIN" \
	MPD_VM_NODES="$NODES" MPD_VM_PATTERN="$PATTERN" MPD_VM_FAULT="$FAULT" \
	/usr/bin/python3 "$REPO/tests/vm/guest_checks.py" >$out 2>&1
rc=$?
echo "VMINFO done at $(cut -d' ' -f1 /proc/uptime)s" >$out
echo "VMSUITE_EXIT $rc" >$out
poweroff -f
