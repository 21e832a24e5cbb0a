/* The daemon's side of privilege separation: start the helper, drop privileges, ask. */
#include "server/kernel/priv.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/kernel/priv_caps.h"
#include "server/log.h"

/* The daemon's ends of the socketpairs, one request in flight on each; a request takes a free one
 * and waits when none is. Several, so that a request that takes long in the kernel (compaction, a
 * large migrate_pages, a resize step of a 1 GiB page) holds up only its own caller. */
static int chans[PRIV_CHANNELS];   /* owned */
static int nchans;                 /* 0 without a helper */
static int free_chans[PRIV_CHANNELS], nfree;
static int nalive;                 /* channels whose helper thread still answers */
static pid_t helper_pid = -1;
static pthread_mutex_t chan_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t chan_freed = PTHREAD_COND_INITIALIZER;

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

bool priv_active(void)
{
	return nchans > 0;
}

int priv_start(const struct knob_catalogue *knobs, const char *sysfs_root, const char *procfs_root, mp_err *e)
{
	int sv[PRIV_CHANNELS][2], n, err;
	pid_t parent = getpid(), pid;

	for (n = 0; n < PRIV_CHANNELS; n++)
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv[n]) < 0)
			goto fail;
	if ((pid = fork()) < 0)
		goto fail;
	if (pid == 0) {
		int fds[PRIV_CHANNELS];
		/* The helper dies with the daemon, and keeps nothing of it but its channels (fds 3 ..
		 * 3 + PRIV_CHANNELS - 1) and stdio (the log). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (int i = 0; i < PRIV_CHANNELS; i++)
			close(sv[i][0]);
		for (int i = 0; i < PRIV_CHANNELS; i++) {
			/* Above every fd in use, then down to 3 + i: no dup2 overwrites a channel not yet moved. */
			int hi = fcntl(sv[i][1], F_DUPFD, 64 + i);
			if (hi < 0)
				_exit(1);
			sv[i][1] = hi;
		}
		for (int i = 0; i < PRIV_CHANNELS; i++)
			if ((fds[i] = dup2(sv[i][1], 3 + i)) < 0)
				_exit(1);
		syscall(SYS_close_range, 3U + PRIV_CHANNELS, ~0U, 0U);
		if (priv_helper_caps() < 0)
			_exit(1);
		priv_helper_run(fds, PRIV_CHANNELS, knobs, sysfs_root, procfs_root);
		_exit(0);
	}
	for (int i = 0; i < PRIV_CHANNELS; i++) {
		close(sv[i][1]);
		chans[i] = free_chans[i] = sv[i][0];
	}
	nchans = nfree = nalive = PRIV_CHANNELS;
	helper_pid = pid;
	return 0;
fail:
	err = errno;
	while (n-- > 0) {
		close(sv[n][0]);
		close(sv[n][1]);
	}
	return mp_fail(e, MPE_PRIV_START, err, "starting the privileged helper: %s", strerror(err));
}

void priv_stop(void)
{
	int st;

	if (!nchans)
		return;
	for (int i = 0; i < nchans; i++)
		close(chans[i]);
	nchans = nfree = nalive = 0;
	/* EOF ends the helper's loops; it answers nothing in between. */
	while (waitpid(helper_pid, &st, 0) < 0 && errno == EINTR)
		;
	helper_pid = -1;
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

/* ---- requests -------------------------------------------------------------------------------- */

ssize_t priv_send(int sock, const void *buf, size_t len, int pass_fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (pass_fd >= 0) {
		struct cmsghdr *c;
		memset(&ctl, 0, sizeof ctl);
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof ctl.buf;
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

static int exchange_on(int chan, const void *msg, size_t len, int send_fd, struct priv_reply *rep, int *fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof *rep };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf };
	struct cmsghdr *c;
	ssize_t n;

	if (fd)
		*fd = -1;
	n = priv_send(chan, msg, len, send_fd);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	do
		n = recvmsg(chan, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
			int got;
			memcpy(&got, CMSG_DATA(c), sizeof got);
			if (fd)
				*fd = got;
			else
				close(got);
		}
	if (n == 0)
		return -EPIPE;
	if ((size_t)n != sizeof *rep || rep->h.magic != PRIV_MAGIC || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (fd && *fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		return -EPROTO;
	}
	return 0;
}

int priv_exchange(const void *msg, size_t len, int send_fd, struct priv_reply *rep, int *fd)
{
	int rc, chan;

	if (!nchans)
		return -ENOTCONN;
	pthread_mutex_lock(&chan_lock);
	while (!nfree && nalive)
		pthread_cond_wait(&chan_freed, &chan_lock);
	if (!nfree) {
		pthread_mutex_unlock(&chan_lock);
		return -EPIPE;
	}
	chan = free_chans[--nfree];
	pthread_mutex_unlock(&chan_lock);
	rc = exchange_on(chan, msg, len, send_fd, rep, fd);
	pthread_mutex_lock(&chan_lock);
	if (rc == -EPIPE) {
		/* The helper closed this channel (it died, or its thread ended): never hand it out
		 * again, so that no caller waits on it; priv_stop() closes it. When none is left, every
		 * privileged request fails with EPIPE at once. */
		if (--nalive == 0)
			log_error("the privileged helper is gone: kernel writes fail with EPIPE until a restart");
		pthread_cond_broadcast(&chan_freed);
	} else {
		free_chans[nfree++] = chan;
		pthread_cond_signal(&chan_freed);
	}
	pthread_mutex_unlock(&chan_lock);
	return rc;
}

/* Sends a typed request whose header is filled here; the answer's rc, or the socket's -errno. */
static long ask_fd(void *msg, size_t len, enum priv_type type, int send_fd, struct priv_reply *rep, int *fd);
static long ask(void *msg, size_t len, enum priv_type type, struct priv_reply *rep, int *fd)
{
	return ask_fd(msg, len, type, -1, rep, fd);
}

static long ask_fd(void *msg, size_t len, enum priv_type type, int send_fd, struct priv_reply *rep, int *fd)
{
	struct priv_hdr *h = msg;
	int rc;

	*h = (struct priv_hdr){ .magic = PRIV_MAGIC, .type = type, .len = (uint32_t)len };
	if ((rc = priv_exchange(msg, len, send_fd, rep, fd)) < 0)
		return rc;
	return (long)rep->rc;
}

int priv_knob_write(const struct knob_catalogue *c, const struct knob *k, const char *value)
{
	struct priv_knob_write m = { 0 };
	struct priv_reply rep;
	size_t i, n = knobs_count(c);

	for (i = 0; i < n && knobs_at(c, i) != k; i++)
		;
	if (i == n || strlen(value) >= sizeof m.value)
		return -EINVAL;
	m.index = (uint32_t)i;
	memcpy(m.value, value, strlen(value));
	return (int)ask(&m, sizeof m, PRIV_KNOB_WRITE, &rep, NULL);
}

static long pool(enum priv_type type, uint64_t size_kb, int node, uint64_t count, struct priv_reply *rep)
{
	struct priv_pool m = { .size_kb = size_kb, .node = node, .count = count };

	return ask(&m, sizeof m, type, rep, NULL);
}

int priv_pool_write(uint64_t size_kb, int node, uint64_t count)
{
	struct priv_reply rep;

	return (int)pool(PRIV_POOL_WRITE, size_kb, node, count, &rep);
}

int priv_pool_run(uint64_t size_kb, int node, uint64_t from, uint64_t goal, uint64_t batch, unsigned max,
		  int64_t budget_ns, struct htlb_step *steps, unsigned *n)
{
	struct priv_pool_run m = { .size_kb = size_kb, .node = node, .max_steps = max, .from = from, .goal = goal,
				   .batch = batch, .budget_ns = budget_ns };
	struct priv_reply rep;
	int rc;

	*n = 0;
	m.h = (struct priv_hdr){ .magic = PRIV_MAGIC, .type = PRIV_POOL_RUN, .len = sizeof m };
	if ((rc = priv_exchange(&m, sizeof m, -1, &rep, NULL)) < 0)
		return rc;   /* no answer: no steps to believe */
	/* The helper's count is checked like any field it sends: never more steps than asked for. */
	if (rep.nsteps > max || rep.nsteps > HTLB_RUN_MAX)
		return -EPROTO;
	*n = rep.nsteps;
	memcpy(steps, rep.steps, *n * sizeof *steps);
	return (int)rep.rc;
}

int priv_compact(void)
{
	struct priv_compact m;
	struct priv_reply rep;

	return (int)ask(&m, sizeof m, PRIV_COMPACT, &rep, NULL);
}

int priv_proc_open(pid_t pid, enum priv_proc_file f)
{
	struct priv_proc_open m = { .pid = pid, .file = (uint32_t)f };
	struct priv_reply rep;
	int fd;
	long rc = ask(&m, sizeof m, PRIV_PROC_OPEN, &rep, &fd);

	if (rc < 0 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return rc < 0 ? (int)rc : -EPROTO;
	}
	return fd;
}

long priv_migrate(pid_t pid, uint64_t start_time, const struct mpol_mask *from, const struct mpol_mask *to)
{
	struct priv_migrate m = { .pid = pid, .start_time = start_time };
	struct priv_reply rep;

	m.maxnode = from->maxnode > to->maxnode ? from->maxnode : to->maxnode;
	_Static_assert(sizeof m.from == sizeof from->bits, "the masks travel word for word");
	memcpy(m.from, from->bits, sizeof m.from);
	memcpy(m.to, to->bits, sizeof m.to);
	return ask(&m, sizeof m, PRIV_MIGRATE, &rep, NULL);
}

long priv_collapse(int pidfd, uint64_t start, uint64_t len)
{
	struct priv_collapse m = { .start = start, .len = len };
	struct priv_reply rep;

	long rc;

	if (pidfd < 0)
		return -EBADF;
	rc = ask_fd(&m, sizeof m, PRIV_COLLAPSE, pidfd, &rep, NULL);
	return rc < 0 ? rc : (long)rep.value;
}

int priv_cg_mems(int dirfd, const char *text)
{
	struct priv_cg_mems m = { 0 };
	struct priv_reply rep;
	idset nodes;

	if (dirfd < 0)
		return -EBADF;
	if (idset_parse(text, &nodes) < 0)
		return -EINVAL;
	_Static_assert(sizeof m.nodes == sizeof nodes.bits, "the mask travels word for word");
	memcpy(m.nodes, nodes.bits, sizeof m.nodes);
	return (int)ask_fd(&m, sizeof m, PRIV_CG_MEMS, dirfd, &rep, NULL);
}
