/* Start and drop: the user looked up, the helper forked with its channels, the serving side
 * dropped to that user with no capabilities. */
#include "server/priv/priv.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/log.h"
#include "server/priv/caps.h"
#include "server/priv/chans.h"
#include "server/priv/helper.h"
#include "server/priv/identity.h"

int priv_lookup_user(const char *name, struct priv_user *u, mp_err *e)
{
	struct passwd *pw;

	errno = 0;
	if (!(pw = getpwnam(name)))
		return mp_fail(e, MPE_CONFIG_USER, errno, "no such user '%s' to run as (create it: useradd --system "
			       "--no-create-home --shell /usr/sbin/nologin --user-group %s; or --user root for one "
			       "process without privilege separation)", name, name);
	if (pw->pw_uid == 0)
		return mp_fail(e, MPE_CONFIG_USER, 0, "user '%s' has uid 0: the daemon would keep every privilege "
			       "(--user root: one process, no privilege separation)", name);
	if ((size_t)snprintf(u->name, sizeof u->name, "%s", name) >= sizeof u->name)
		return mp_fail(e, MPE_CONFIG_USER, 0, "user name '%s' is too long", name);
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	return 0;
}

/* The helper's descriptors after the fork: its channels, then its copy of the API's listening
 * socket when it has one. */
#define HELPER_FDS (PRIV_CHANNELS + 1)

void priv_set_labels_file(const char *path)
{
	priv_labels_path = path;
}

/* PR_SET_PDEATHSIG's signal in the helper: the serving side died. */
static void helper_orphaned(int sig)
{
	(void)sig;
	priv_kill_probes();
	_exit(0);
}

int priv_start(const struct knob_catalogue *knobs, const char *sysfs_root, const char *procfs_root, unsigned probe_mem_pct,
	       const struct priv_api *api, mp_err *e)
{
	/* In the child, keep[HELPER_FDS - 1] is the listener's copy (-1 without one). */
	int sv[PRIV_CHANNELS][2], ours[PRIV_CHANNELS], n, err;
	pid_t parent = getpid(), pid;

	for (n = 0; n < PRIV_CHANNELS; n++)
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv[n]) < 0)
			goto fail;
	if ((pid = fork()) < 0)
		goto fail;
	if (pid == 0) {
		int keep[HELPER_FDS], fds[HELPER_FDS];
		/* The helper dies with the daemon, and keeps nothing of it but its channels (fds 3 ..
		 * 3 + PRIV_CHANNELS - 1), its copy of the listener (the next one), and stdio (the log). Its parent's death is SIGUSR1, whose
		 * handler kills the probe children first (nothing else sends the helper SIGUSR1; the
		 * SIGTERM of a unit's stop stays blocked, as main set it: the helper ends on EOF then,
		 * after the serving side's orderly stop). */
		struct sigaction sa = { .sa_handler = helper_orphaned };
		sigset_t usr1;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigaction(SIGUSR1, &sa, NULL);
		pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
		prctl(PR_SET_PDEATHSIG, SIGUSR1);
		if (getppid() != parent)
			_exit(0);
		for (int i = 0; i < PRIV_CHANNELS; i++) {
			close(sv[i][0]);
			keep[i] = sv[i][1];
		}
		keep[HELPER_FDS - 1] = api ? api->listen_fd : -1;
		/* Above every fd in use, then down to 3 + i: no dup2 overwrites one not yet moved. */
		for (int i = 0; i < HELPER_FDS; i++)
			if (keep[i] >= 0 && (keep[i] = fcntl(keep[i], F_DUPFD, 64 + i)) < 0)
				_exit(1);
		for (int i = 0; i < HELPER_FDS; i++) {
			fds[i] = -1;
			if (keep[i] >= 0 && (fds[i] = dup2(keep[i], 3 + i)) < 0)
				_exit(1);
		}
		syscall(SYS_close_range, 3U + HELPER_FDS, ~0U, 0U);
		log_reopen();   /* the journal's socket was one of the fds closed or overwritten */
		if (priv_helper_caps() < 0)
			_exit(1);
		/* Without a listener no connection has an identity, and every launch is refused (the
		 * unit tests of the other requests start it so). The listener's file is asked of the
		 * kernel here, before the first request; if it cannot be, each launch asks again. */
		if (api && (err = priv_identity_init(fds[PRIV_CHANNELS], api->serving_uid)) < 0)
			log_warn("privileged helper: the API socket's file (unix_diag, NETLINK_SOCK_DIAG): %s; launches "
				 "are refused until the kernel can say (modprobe unix_diag)", strerror(-err));
		priv_helper_run(fds, PRIV_CHANNELS, knobs, sysfs_root, procfs_root, probe_mem_pct);
		_exit(0);
	}
	for (int i = 0; i < PRIV_CHANNELS; i++) {
		close(sv[i][1]);
		ours[i] = sv[i][0];
	}
	priv_chans_adopt(ours, PRIV_CHANNELS, pid);
	return 0;
fail:
	err = errno;
	while (n-- > 0) {
		close(sv[n][0]);
		close(sv[n][1]);
	}
	return mp_fail(e, MPE_PRIV_START, err, "starting the privileged helper: %s", strerror(err));
}

int priv_drop(const struct priv_user *u, mp_err *e)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	int last = priv_cap_last();

	/* The bounding set first: emptying it needs CAP_SETPCAP, which setresuid takes away. */
	for (int c = 0; c <= last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return mp_fail(e, MPE_PRIV_START, errno, "dropping capability %d from the bounding set: %s", c,
				       strerror(errno));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return mp_fail(e, MPE_PRIV_START, errno, "clearing the ambient capabilities: %s", strerror(errno));
	if (setgroups(0, NULL) < 0 || setresgid(u->gid, u->gid, u->gid) < 0 || setresuid(u->uid, u->uid, u->uid) < 0)
		return mp_fail(e, MPE_PRIV_START, errno, "becoming user %s (uid %d): %s", u->name, (int)u->uid,
			       strerror(errno));
	/* setresuid away from 0 empties permitted and effective (no SECBIT_KEEP_CAPS); inheritable
	 * is emptied here, and every set is then checked as the kernel sees it. */
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return mp_fail(e, MPE_PRIV_START, errno, "clearing the capability sets: %s", strerror(errno));
	if (syscall(SYS_capget, &hdr, data) < 0 || data[0].effective || data[0].permitted || data[0].inheritable ||
	    data[1].effective || data[1].permitted || data[1].inheritable)
		return mp_fail(e, MPE_PRIV_START, 0, "capabilities remain after dropping to %s", u->name);
	if (setuid(0) == 0 || geteuid() == 0)
		return mp_fail(e, MPE_PRIV_START, 0, "the process could become root again after dropping to %s", u->name);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return mp_fail(e, MPE_PRIV_START, errno, "no_new_privs: %s", strerror(errno));
	return 0;
}
