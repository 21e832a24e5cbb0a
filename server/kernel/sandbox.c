#include "server/kernel/sandbox.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <sys/socket.h>

/* Refused with EPERM, by name (resolved for the native architecture; a name this architecture
 * lacks, iopl on arm64, is skipped). Grouped by what an attacker would want them for. */
static const char *const denied[] = {
	/* running anything: launches and probes are the helper's */
	"execve", "execveat",
	/* reading or changing another process (the helper opens procfs files of other uids) */
#if !SANDBOX_KEEPS_PTRACE
	"ptrace",
#endif
	"process_vm_readv", "process_vm_writev", "pidfd_getfd",
	/* memory policy and placement: set in launched children and by the helper, never here */
	"mbind", "set_mempolicy", "migrate_pages", "move_pages", "process_madvise",
	/* watching files: the drift watcher's fanotify group is the helper's, marked by it on the
	 * managed files only (PRIV_WATCH); the serving side reads it and may add no mark of its own */
	"fanotify_init", "fanotify_mark",
	/* the file system view, namespaces, handles that bypass path permission checks */
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_by_handle_at", "name_to_handle_at",
	"fsopen", "fsmount", "fsconfig", "move_mount", "open_tree", "mount_setattr",
	/* the kernel itself: attack surface no part of the daemon uses */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf", "perf_event_open",
	"userfaultfd", "keyctl", "add_key", "request_key", "personality", "iopl", "ioperm", "swapon", "swapoff",
	"reboot", "syslog", "acct", "quotactl", "quotactl_fd", "settimeofday", "clock_settime", "adjtimex",
	"clock_adjtime", "lookup_dcookie", "vhangup", "uselib",
	/* identity: after the drop nothing may change it (setuid(0) already fails; this also keeps
	 * the unprivileged side from moving between its own ids) */
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
	"capset",
};

/* socket(2) families the serving side may open: AF_UNIX (the API socket's peers, sd_notify,
 * nscd and systemd-userdb behind getpwuid_r), AF_INET and AF_INET6 (NSS modules that ask a
 * directory over the network). Measured with strace on a serving daemon (TLS listener, tokens,
 * a launch, a probe): after the drop it opens AF_UNIX datagram sockets only; the TCP listener
 * and the name lookup of --listen-tcp happen before the drop. Everything else — AF_NETLINK,
 * AF_PACKET, AF_ALG, AF_VSOCK, ... — is refused. */
static int deny_other_families(scmp_filter_ctx ctx)
{
	int rc, sys = seccomp_syscall_resolve_name("socket");

	/* Rules on one syscall are OR'ed: family 0, each family between AF_UNIX and AF_INET6 other
	 * than AF_INET, and anything above AF_INET6. Compared as 64 bits: a family with high bits
	 * set (which the kernel would truncate to an int) is above AF_INET6 and refused. */
	_Static_assert(AF_UNIX == 1 && AF_INET == 2 && AF_INET6 == 10, "the ranges below assume Linux's numbers");
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sys, 1, SCMP_A0(SCMP_CMP_EQ, AF_UNSPEC))) < 0)
		return rc;
	for (int f = AF_INET + 1; f < AF_INET6; f++)
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sys, 1, SCMP_A0(SCMP_CMP_EQ, f))) < 0)
			return rc;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sys, 1, SCMP_A0(SCMP_CMP_GT, AF_INET6));
}

/* unshare and setns are denied by name; clone can make namespaces too (CLONE_NEWUSER needs no
 * privilege where unprivileged user namespaces are on, and gives the kernel's root-only paths to
 * whoever holds it). clone's flags are an argument the filter can read; clone3's are in a struct
 * it cannot, so clone3 answers ENOSYS, on which glibc (2.34 and later) falls back to clone for
 * threads, as it does under systemd's and Docker's filters. */
static int deny_namespaces(scmp_filter_ctx ctx)
{
	static const unsigned long ns_flags[] = { CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
						  CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, 0x80 /* CLONE_NEWTIME */ };
	int rc, sys = seccomp_syscall_resolve_name("clone");

#if defined(__s390__) || defined(__s390x__) || defined(__CRIS__)
#error "clone's flags are its second argument on this architecture: the rules below read the first"
#endif
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++)
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sys, 1,
					   SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]))) < 0)
			return rc;
	sys = seccomp_syscall_resolve_name("clone3");
	return sys == __NR_SCMP_ERROR ? 0 : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), sys, 0);
}

/* Threads of this process, from /proc/self/status; -1 when unreadable. */
static int threads(void)
{
	char line[128];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

int sandbox_serving(mp_err *e)
{
	scmp_filter_ctx ctx;   /* owned */
	const char *what = "creating the filter";
	int rc;

	/* No CONFIG_SECCOMP at all: prctl says EINVAL before anything is built. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL)
		return SANDBOX_UNSUPPORTED;
	if (!(ctx = seccomp_init(SCMP_ACT_ALLOW)))
		return mp_fail(e, MPE_PRIV_START, ENOMEM, "seccomp: creating the filter: out of memory");
	/* Raw errnos from the kernel (libseccomp would say ECANCELED), and a syscall made through
	 * another ABI (int 0x80's i386 table, x32's numbers) kills the process: the rules below are
	 * written for the native table only, and nothing of ours uses another. libseccomp offers
	 * KILL_PROCESS only when it can ask the kernel through seccomp(2) (below); otherwise its
	 * default stays, which kills the thread. */
	what = "setting its attributes";
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0)
		goto fail;
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 &&
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL)) < 0)
		goto fail;
	/* TSYNC needs seccomp(2) itself, which systemd's SystemCallFilter=@system-service (the
	 * packaged unit's) does not allow: libseccomp then says EOPNOTSUPP and loads through
	 * prctl(PR_SET_SECCOMP), which filters the calling thread only. That is every thread while
	 * the process has one (the daemon loads before starting any); with more it is a refusal. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) == -EOPNOTSUPP) {
		int n = threads();
		if (n != 1) {
			seccomp_release(ctx);
			return mp_fail(e, MPE_PRIV_START, EOPNOTSUPP, "seccomp: seccomp(2) is not available (filtered "
				       "by the service manager?) and this process has %d threads: prctl would filter "
				       "only the calling one", n);
		}
	} else if (rc < 0) {
		goto fail;
	}
	what = "adding a rule";
	for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
		int sys = seccomp_syscall_resolve_name(denied[i]);
		if (sys == __NR_SCMP_ERROR)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sys, 0)) < 0) {
			what = denied[i];
			goto fail;
		}
	}
	if ((rc = deny_other_families(ctx)) < 0 || (rc = deny_namespaces(ctx)) < 0)
		goto fail;
	what = "loading it";
	if ((rc = seccomp_load(ctx)) < 0) {
		seccomp_release(ctx);
		/* CONFIG_SECCOMP without CONFIG_SECCOMP_FILTER */
		return rc == -EINVAL ? SANDBOX_UNSUPPORTED
				     : mp_fail(e, MPE_PRIV_START, -rc, "seccomp: loading the filter: %s", strerror(-rc));
	}
	seccomp_release(ctx);
	return SANDBOX_ON;
fail:
	seccomp_release(ctx);
	return mp_fail(e, MPE_PRIV_START, -rc, "seccomp: %s: %s", what, strerror(-rc));
}
