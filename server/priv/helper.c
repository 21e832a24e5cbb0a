/* The privileged helper: one request at a time from the daemon's end of the socketpair, each
 * checked again in full here, since the sender may be a compromised daemon. The helper parses no
 * text from the daemon (the one string, a knob value, is compared with the kernel's own list or
 * parsed as a bounded number), builds every path from its own tables, and answers a refusal
 * without acting on it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "common/parse.h"
#include "server/kernel/cgroup.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/kernel/madv.h"
#include "server/kernel/mpol.h"
#include "server/kernel/priv.h"
#include "server/kernel/priv_spawn.h"
#include "server/kernel/proc.h"
#include "server/kernel/sysfs.h"
#include "server/log.h"

struct helper {
	int fd;                                   /* borrowed: the helper's end */
	const struct knob_catalogue *knobs;       /* borrowed */
	const char *sysfs_root, *procfs_root;     /* borrowed */
	/* The pool file of the last run, kept open: a resize is runs of steps on one file, and the
	 * measurement should cover the kernel's work, not a path lookup per step. */
	struct kfs_file nr;
	uint64_t nr_size_kb;
	int nr_node;
	int in_fd;                                /* the fd that came with this request, or -1 */
};

static int do_knob_write(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_knob_write *m = msg;
	const struct knob *k = knobs_at(h->knobs, m->index);
	struct knob_state st;

	(void)rep;
	(void)fd_out;
	if (!k || !memchr(m->value, '\0', sizeof m->value))
		return -EINVAL;
	/* The value again against the kernel's list or the knob's range, read now. */
	knob_read(h->knobs, k, &st);
	if (st.read_err)
		return st.read_err;
	if (knob_check_value(k, &st, m->value) != KNOB_OK)
		return -EINVAL;
	return knob_write(h->knobs, k, m->value);
}

/* A pool the kernel has: a size with a directory, the global pool or a node with one. */
static int pool_ok(const struct helper *h, const struct priv_pool *m)
{
	if (m->pad || m->count > INT64_MAX || !htlb_size_exists(h->sysfs_root, m->size_kb))
		return -EINVAL;
	if (m->node < -1 || m->node >= TOPO_MAX_NODES)
		return -EINVAL;
	if (m->node >= 0 && !htlb_node_exists(h->sysfs_root, m->size_kb, (unsigned)m->node))
		return -EINVAL;
	return 0;
}

static int do_pool_write(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_pool *m = msg;
	int rc = pool_ok(h, m);

	(void)rep;
	(void)fd_out;
	return rc < 0 ? rc : htlb_write_nr(h->sysfs_root, m->size_kb, m->node, m->count);
}

static int do_pool_run(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_pool_run *m = msg;
	struct priv_pool p = { .size_kb = m->size_kb, .node = m->node };
	unsigned n = 0;
	int rc = pool_ok(h, &p);

	(void)fd_out;
	if (rc < 0)
		return rc;
	if (m->max_steps < 1 || m->max_steps > HTLB_RUN_MAX || m->from == m->goal || m->from > INT64_MAX ||
	    m->goal > INT64_MAX || m->batch < 1 || m->batch > INT64_MAX || m->budget_ns < 0 ||
	    m->budget_ns > PRIV_RUN_BUDGET_MAX)
		return -EINVAL;
	if (h->nr.fd < 0 || h->nr_size_kb != m->size_kb || h->nr_node != m->node) {
		kfs_close(&h->nr);
		if ((rc = htlb_open_nr(h->sysfs_root, m->size_kb, m->node, &h->nr)) < 0)
			return rc;
		h->nr_size_kb = m->size_kb;
		h->nr_node = m->node;
	}
	rc = htlb_run_steps(&h->nr, m->from, m->goal, m->batch, m->max_steps, m->budget_ns, rep->steps, &n);
	rep->nsteps = n;
	return rc;
}

static int do_compact(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	(void)msg;
	(void)rep;
	(void)fd_out;
	return htlb_compact(h->procfs_root);
}

static int do_proc_open(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	static const char *const names[PRIV_PROC_END] = {
		[PRIV_PROC_MAPS] = "maps", [PRIV_PROC_SMAPS] = "smaps", [PRIV_PROC_SMAPS_ROLLUP] = "smaps_rollup",
		[PRIV_PROC_NUMA_MAPS] = "numa_maps",
	};
	const struct priv_proc_open *m = msg;
	char path[4096];
	int n;

	(void)rep;
	if (m->pid <= 0 || m->pid > PROC_PID_MAX || m->file >= PRIV_PROC_END)
		return -EINVAL;
	n = snprintf(path, sizeof path, "%s/%d/%s", h->procfs_root, (int)m->pid, names[m->file]);
	if (n < 0 || (size_t)n >= sizeof path)
		return -ENAMETOOLONG;
	/* The kernel checks ptrace access at open, against the helper: the daemon reads the fd. */
	if ((*fd_out = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	return 0;
}

static int do_migrate(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_migrate *m = msg;
	struct mpol_mask from = { .maxnode = m->maxnode }, to = { .maxnode = m->maxnode };
	long rc;

	(void)fd_out;
	if (m->pid <= 0 || m->pid > PROC_PID_MAX || m->pad || !m->start_time || m->maxnode < 1 ||
	    m->maxnode > IDSET_MAX + 1)
		return -EINVAL;
	/* No node at or past maxnode - 1: the kernel would not read it, so a set one is a malformed mask. */
	for (uint64_t b = m->maxnode - 1; b < IDSET_MAX; b++)
		if ((m->from[b / 64] | m->to[b / 64]) >> (b % 64) & 1)
			return -EINVAL;
	memcpy(from.bits, m->from, sizeof from.bits);
	memcpy(to.bits, m->to, sizeof to.bits);
	/* As late as possible: the pid still names the process the daemon checked. */
	if ((rc = proc_check_identity(h->procfs_root, m->pid, m->start_time)) < 0)
		return (int)rc;
	rc = mpol_migrate_pages(m->pid, &from, &to);
	rep->value = rc >= 0 ? (uint64_t)rc : 0;
	return rc < 0 ? (int)rc : 0;
}

/* The address space a user process can have (57-bit with 5-level paging). */
#define USER_ADDR_END (1ULL << 57)

static int do_collapse(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_collapse *m = msg;
	struct iovec iov = { .iov_base = (void *)(uintptr_t)m->start, .iov_len = (size_t)m->len };
	long rc;

	(void)fd_out;
	if (h->in_fd < 0 || !m->len || m->start % 4096 || m->len % 4096 || m->start >= USER_ADDR_END ||
	    m->len > USER_ADDR_END - m->start)
		return -EINVAL;
	/* A pidfd, and of a live process: signal 0 through it is refused with EPERM at most (the
	 * helper has no CAP_KILL); anything but a pidfd is EBADF or EINVAL. */
	if (syscall(SYS_pidfd_send_signal, h->in_fd, 0, NULL, 0) < 0 && errno != EPERM)
		return errno == ESRCH ? -ESRCH : -EINVAL;
	rc = syscall(SYS_process_madvise, h->in_fd, &iov, 1UL, MADV_COLLAPSE, 0U);
	if (rc < 0)
		return -errno;
	rep->value = (uint64_t)rc;
	return 0;
}

/* The directory is a cgroup's: on a cgroup file system, or, when the helper was given another
 * sysfs root (a generated tree), inside that root's fs/cgroup. */
static bool cgroup_dir(const struct helper *h, int dirfd)
{
	char link[64], real[4096], want[4096];
	struct statfs sf;
	struct stat sb;
	ssize_t n;
	int w;

	if (fstat(dirfd, &sb) < 0 || !S_ISDIR(sb.st_mode) || fstatfs(dirfd, &sf) < 0)
		return false;
	if (sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC)
		return true;
	if (!strcmp(h->sysfs_root, "/sys"))
		return false;
	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	w = snprintf(want, sizeof want, "%s/fs/cgroup", h->sysfs_root);
	if ((n = readlink(link, real, sizeof real - 1)) < 0 || w < 0 || (size_t)w >= sizeof want)
		return false;
	real[n] = '\0';
	return !strncmp(real, want, (size_t)w) && (real[w] == '/' || real[w] == '\0');
}

static int do_cg_mems(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_cg_mems *m = msg;
	idset nodes;
	char text[20480];   /* every other id of IDSET_MAX: "0,2,...,4094" */

	(void)rep;
	(void)fd_out;
	if (h->in_fd < 0 || !cgroup_dir(h, h->in_fd))
		return -EINVAL;
	memcpy(nodes.bits, m->nodes, sizeof nodes.bits);
	if (idset_format(&nodes, text, sizeof text) < 0)
		return -EINVAL;
	return cg_write_mems_direct(h->in_fd, text);
}

static int do_spawn(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	(void)fd_out;
	return priv_do_spawn(h->in_fd, msg, &rep->value);
}

static int do_reap(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	(void)h;
	(void)fd_out;
	return priv_do_reap(msg, &rep->value);
}

static int do_probe_start(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	(void)fd_out;
	return priv_do_probe_start(h->in_fd, msg, &rep->value);
}

static int do_kill(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	(void)h;
	(void)rep;
	(void)fd_out;
	return priv_do_kill(msg);
}

/* The closed set: type -> exact size and handler. */
static const struct {
	size_t size;
	int (*fn)(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out);
} requests[PRIV_TYPE_END] = {
	[PRIV_KNOB_WRITE] = { sizeof(struct priv_knob_write), do_knob_write },
	[PRIV_POOL_WRITE] = { sizeof(struct priv_pool), do_pool_write },
	[PRIV_POOL_RUN]   = { sizeof(struct priv_pool_run), do_pool_run },
	[PRIV_COMPACT]    = { sizeof(struct priv_compact), do_compact },
	[PRIV_PROC_OPEN]  = { sizeof(struct priv_proc_open), do_proc_open },
	[PRIV_MIGRATE]    = { sizeof(struct priv_migrate), do_migrate },
	[PRIV_COLLAPSE]   = { sizeof(struct priv_collapse), do_collapse },
	[PRIV_CG_MEMS]    = { sizeof(struct priv_cg_mems), do_cg_mems },
	[PRIV_SPAWN]      = { sizeof(struct priv_spawn), do_spawn },
	[PRIV_REAP]       = { sizeof(struct priv_reap), do_reap },
	[PRIV_PROBE_START] = { sizeof(struct priv_probe_start), do_probe_start },
	[PRIV_KILL]       = { sizeof(struct priv_kill), do_kill },
};

static void *serve(void *arg)
{
	struct helper *hp = arg, h = *hp;
	/* One byte more than any message: a datagram that fills the buffer was too long. */
	_Alignas(8) unsigned char buf[PRIV_MSG_MAX + 1];
	int fd = h.fd;

	for (;;) {
		struct priv_reply rep = { .h = { .magic = PRIV_MAGIC, .len = sizeof rep } };
		const struct priv_hdr *hd = (const void *)buf;
		int pass = -1, nfds = 0, fds[4];
		union {
			struct cmsghdr c;
			char b[CMSG_SPACE(sizeof fds)];
		} ctl;
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b };
		ssize_t n = recvmsg(fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;   /* EOF: the daemon stopped (or died) */
		/* Every fd that came along is ours to close, whatever the message. */
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && nfds < 4; i++)
					memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		h.in_fd = nfds == 1 ? fds[0] : -1;
		if ((size_t)n < sizeof *hd || (size_t)n > PRIV_MSG_MAX || hd->magic != PRIV_MAGIC || hd->pad ||
		    hd->len != (size_t)n) {
			log_warn("privileged helper: refused a malformed message (%zd bytes)", n);
			rep.rc = -EBADMSG;
		} else if (hd->type == 0 || hd->type >= PRIV_TYPE_END) {
			log_warn("privileged helper: refused a message of unknown type %u", hd->type);
			rep.rc = -EBADMSG;
		} else if ((mh.msg_flags & MSG_CTRUNC) || nfds > (hd->type == PRIV_COLLAPSE || hd->type == PRIV_CG_MEMS || hd->type == PRIV_SPAWN ||
								hd->type == PRIV_PROBE_START)) {
			log_warn("privileged helper: refused a type %u message carrying %d fds", hd->type, nfds);
			rep.h.type = hd->type;
			rep.rc = -EBADMSG;
		} else if (hd->len != requests[hd->type].size) {
			log_warn("privileged helper: refused a type %u message of %u bytes (it has %zu)", hd->type, hd->len,
				 requests[hd->type].size);
			rep.h.type = hd->type;
			rep.rc = -EBADMSG;
		} else {
			rep.h.type = hd->type;
			rep.rc = requests[hd->type].fn(&h, buf, &rep, &pass);
		}
		/* A spawn's rc is a pid: it passes no fd. */
		(void)priv_send(fd, &rep, sizeof rep, rep.rc == 0 ? pass : -1);
		if (pass >= 0)
			close(pass);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	}
	/* A zero-length datagram reads as EOF too: close, so that the daemon sees EPIPE on this
	 * channel rather than waiting for an answer that will not come. */
	close(fd);
	kfs_close(&h.nr);
	return NULL;
}

void priv_helper_run(const int *fds, int n, const struct knob_catalogue *knobs, const char *sysfs_root,
		     const char *procfs_root)
{
	struct helper hs[PRIV_CHANNELS];
	pthread_t th;

	/* The capability sets are per thread: the threads made here inherit the helper's. The
	 * catalogue and roots are read-only; each thread has its own pool file and buffer. */
	for (int i = 0; i < n && i < PRIV_CHANNELS; i++) {
		hs[i] = (struct helper){ .fd = fds[i], .knobs = knobs, .sysfs_root = sysfs_root,
					 .procfs_root = procfs_root, .nr = { .fd = -1 } };
		if (i == 0)
			continue;
		if (pthread_create(&th, NULL, serve, &hs[i]) != 0) {
			/* A channel nobody serves would hang its callers: end, and the daemon sees EPIPE. */
			log_error("privileged helper: cannot start a thread for channel %d", i);
			return;
		}
		pthread_detach(th);
	}
	/* The daemon closes every channel together: the first one's EOF ends the helper. */
	serve(&hs[0]);
}
