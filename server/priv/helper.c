/* The privileged helper: one request at a time from the daemon's end of the socketpair, each
 * checked again in full here, since the sender may be a compromised daemon. Dispatch is by the
 * table priv_requests[] below: the loop checks what every message shares (header, exact size,
 * descriptors), then the type's check, and only then its act. The helper parses no
 * text from the daemon but two (a knob value, compared with the kernel's own list or parsed as a
 * bounded number; the labels file, checked line by line against its grammar), builds every path
 * from its own tables or what it was given before the fork, and answers a refusal without acting
 * on it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
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
#include "server/fleet/nfd.h"
#include "server/kernel/cgroup.h"
#include "server/kernel/fanwatch.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/kernel/madv.h"
#include "server/kernel/mpol.h"
#include "server/kernel/proc.h"
#include "server/kernel/sysfs.h"
#include "server/log.h"
#include "server/priv/helper.h"
#include "server/priv/priv.h"

/* ---- knob.write ---- */

/* The knobs' files held open for writing, by catalogue index, shared by the helper's threads (a
 * kernel file's writes through one fd are serialised by the kernel): a write then costs the
 * kernel's store, not a path lookup, a statfs for a choice and a close — whose FAN_CLOSE_WRITE
 * the drift watcher would read too. Only a file on sysfs or procfs is held (a generated tree's
 * may be replaced under a held fd): the others are written by path, as are all when the table
 * could not be made. What is written, and every check before it, is unchanged: the index is the
 * catalogue's, the path its own. Each slot is KFS_HELD_UNTRIED, KFS_HELD_NO or the fd, kept until
 * the helper exits. */
static _Atomic int *knob_wfd;   /* owned, nknob_wfd of them */
static size_t nknob_wfd;

static void knob_wfd_init(const struct knob_catalogue *c)
{
	size_t n = knobs_count(c);

	if (!n || !(knob_wfd = malloc(n * sizeof *knob_wfd)))
		return;
	for (size_t i = 0; i < n; i++)
		atomic_init(&knob_wfd[i], KFS_HELD_UNTRIED);
	nknob_wfd = n;
}

/* Index's held fd, opened on its first write; < 0 (KFS_HELD_*): write it by path. */
static int knob_wfd_of(const struct knob_catalogue *c, uint32_t index)
{
	char path[PATH_MAX];
	int fd;
	bool took;

	if (index >= nknob_wfd)
		return KFS_HELD_NO;
	if ((fd = atomic_load_explicit(&knob_wfd[index], memory_order_acquire)) != KFS_HELD_UNTRIED)
		return fd;
	knob_path(c, knobs_at(c, index), path, sizeof path);
	/* The read side's slot (kernel/sysfs.h), for writing: a failed open is the write's to report
	 * (by path, with its own errno), and is tried again next time. */
	return kfs_held_fd_as(&knob_wfd[index], path, O_WRONLY, &took);
}

/* A checked value written to the knob at index: one pwrite(2) at offset 0 of the held file (the
 * text with the newline echo sends, as knob_write writes it), else knob_write by path. */
static int knob_write_held(const struct helper *h, uint32_t index, const char *value)
{
	const struct knob *k = knobs_at(h->knobs, index);
	int fd = knob_wfd_of(h->knobs, index);
	char line[80];
	size_t n;
	ssize_t w;

	if (fd < 0 || (n = (size_t)snprintf(line, sizeof line, "%s\n", value)) >= sizeof line)
		return knob_write(h->knobs, k, value);
	do
		w = pwrite(fd, line, n, 0);
	while (w < 0 && errno == EINTR);
	return w < 0 ? -errno : (size_t)w != n ? -EIO : 0;
}

/* One knob and its value, as both knob requests have them. */
static int check_knob(const struct helper *h, uint32_t index, const char value[PRIV_KNOB_VALUE])
{
	static const struct knob_state none;   /* a number's check reads no state */
	const struct knob *k = knobs_at(h->knobs, index);
	struct knob_state st;

	if (!k || !memchr(value, '\0', PRIV_KNOB_VALUE))
		return -EINVAL;
	/* The value again against the knob's range, which is the catalogue's (nothing to read), or
	 * against the kernel's list, read now: its value only, since whether the file takes a write
	 * is the write's to say (it fails, and the daemon rolls back what came before it). */
	if (k->type != KNOB_CHOICE)
		return knob_check_value(k, &none, value) == KNOB_OK ? 0 : -EINVAL;
	knob_read_value(h->knobs, k, &st);
	if (st.read_err)
		return st.read_err;
	return knob_check_value(k, &st, value) == KNOB_OK ? 0 : -EINVAL;
}

static int check_knob_write(const struct helper *h, const void *msg)
{
	const struct priv_knob_write *m = msg;

	return check_knob(h, m->index, m->value);
}

static int do_knob_write(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_knob_write *m = msg;

	(void)rep;
	(void)fd_out;
	return knob_write_held(h, m->index, m->value);
}

/* ---- knob.writes ---- */

/* Every entry as a knob_write, the pads and the entries past n zero: checked whole before any write. */
static int check_knob_writes(const struct helper *h, const void *msg)
{
	static const struct priv_knob_entry zero;
	const struct priv_knob_writes *m = msg;
	int rc;

	if (m->n < 1 || m->n > PRIV_KNOB_BATCH || m->pad)
		return -EINVAL;
	for (uint32_t i = 0; i < PRIV_KNOB_BATCH; i++) {
		if (i >= m->n) {
			if (memcmp(&m->e[i], &zero, sizeof zero))
				return -EINVAL;
			continue;
		}
		if (m->e[i].pad)
			return -EINVAL;
		if ((rc = check_knob(h, m->e[i].index, m->e[i].value)) < 0)
			return rc;
	}
	return 0;
}

static int do_knob_writes(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_knob_writes *m = msg;
	uint32_t i;

	(void)fd_out;
	/* In order, each read back, stopping at the first refused or reading otherwise (as
	 * knob_write_each, through the held files). */
	for (i = 0; i < m->n; i++) {
		const struct knob *k = knobs_at(h->knobs, m->e[i].index);
		struct knob_state st;
		int rc = knob_write_held(h, m->e[i].index, m->e[i].value);
		if (rc == 0) {
			knob_read_value(h->knobs, k, &st);
			rc = !st.available ? st.read_err : strcmp(st.value, m->e[i].value) ? 1 : 0;
		}
		rep->knob_rc[i] = rc;
		if (rc != 0) {
			i++;
			break;
		}
	}
	rep->value = i;
	return 0;
}

/* ---- pool.write, pool.run ---- */

/* A pool the kernel has: a size with a directory, the global pool or a node with one. */
static int pool_ok(const struct helper *h, uint64_t size_kb, int32_t node)
{
	if (!htlb_size_exists(h->sysfs_root, size_kb))
		return -EINVAL;
	if (node < -1 || node >= TOPO_MAX_NODES)
		return -EINVAL;
	if (node >= 0 && !htlb_node_exists(h->sysfs_root, size_kb, (unsigned)node))
		return -EINVAL;
	return 0;
}

static int check_pool_write(const struct helper *h, const void *msg)
{
	const struct priv_pool *m = msg;

	if (m->pad || m->count > INT64_MAX)
		return -EINVAL;
	return pool_ok(h, m->size_kb, m->node);
}

static int do_pool_write(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_pool *m = msg;

	(void)rep;
	(void)fd_out;
	return htlb_write_nr(h->sysfs_root, m->size_kb, m->node, m->count);
}

static int check_pool_run(const struct helper *h, const void *msg)
{
	const struct priv_pool_run *m = msg;

	if (m->max_steps < 1 || m->max_steps > HTLB_RUN_MAX || m->from == m->goal || m->from > INT64_MAX ||
	    m->goal > INT64_MAX || m->batch < 1 || m->batch > INT64_MAX || m->budget_ns < 0 ||
	    m->budget_ns > PRIV_RUN_BUDGET_MAX)
		return -EINVAL;
	return pool_ok(h, m->size_kb, m->node);
}

static int do_pool_run(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_pool_run *m = msg;
	unsigned n = 0;
	int rc;

	(void)fd_out;
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

/* ---- compact ---- */

static int do_compact(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	(void)msg;
	(void)rep;
	(void)fd_out;
	return htlb_compact(h->procfs_root);
}

/* ---- proc.open ---- */

static int check_proc_open(const struct helper *h, const void *msg)
{
	const struct priv_proc_open *m = msg;

	(void)h;
	return m->pid <= 0 || m->pid > PROC_PID_MAX || m->file >= PROC_FILE_END ? -EINVAL : 0;
}

static int do_proc_open(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_proc_open *m = msg;
	int fd;

	(void)rep;
	/* The kernel checks ptrace access at open, against the helper: the daemon reads the fd. As
	 * ever ENOENT for a missing file (the serving side's reader makes it ESRCH). */
	if ((fd = proc_open_guarded(h->procfs_root, m->pid, (enum proc_file)m->file)) < 0)
		return fd == -ESRCH ? -ENOENT : fd;
	*fd_out = fd;
	return 0;
}

/* ---- migrate ---- */

static int check_migrate(const struct helper *h, const void *msg)
{
	const struct priv_migrate *m = msg;

	(void)h;
	if (m->pid <= 0 || m->pid > PROC_PID_MAX || m->pad || !m->start_time || m->maxnode < 1 ||
	    m->maxnode > IDSET_MAX + 1)
		return -EINVAL;
	/* No node at or past maxnode - 1: the kernel would not read it, so a set one is a malformed mask. */
	for (uint64_t b = m->maxnode - 1; b < IDSET_MAX; b++)
		if ((m->from[b / 64] | m->to[b / 64]) >> (b % 64) & 1)
			return -EINVAL;
	return 0;
}

static int do_migrate(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_migrate *m = msg;
	struct mpol_mask from = { .maxnode = m->maxnode }, to = { .maxnode = m->maxnode };
	long rc;

	(void)fd_out;
	memcpy(from.bits, m->from, sizeof from.bits);
	memcpy(to.bits, m->to, sizeof to.bits);
	/* The identity as late as possible: the pid still names the process the daemon checked. */
	rc = mpol_migrate_checked(h->procfs_root, m->pid, m->start_time, &from, &to);
	rep->value = rc >= 0 ? (uint64_t)rc : 0;
	return rc < 0 ? (int)rc : 0;
}

/* ---- collapse ---- */

/* The address space a user process can have (57-bit with 5-level paging). */
#define USER_ADDR_END (1ULL << 57)

static int check_collapse(const struct helper *h, const void *msg)
{
	const struct priv_collapse *m = msg;

	if (h->in_fd < 0 || !m->len || m->start % 4096 || m->len % 4096 || m->start >= USER_ADDR_END ||
	    m->len > USER_ADDR_END - m->start)
		return -EINVAL;
	/* A pidfd, and of a live process: signal 0 through it is refused with EPERM at most (the
	 * helper has no CAP_KILL); anything but a pidfd is EBADF or EINVAL. */
	if (syscall(SYS_pidfd_send_signal, h->in_fd, 0, NULL, 0) < 0 && errno != EPERM)
		return errno == ESRCH ? -ESRCH : -EINVAL;
	return 0;
}

static int do_collapse(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_collapse *m = msg;
	long rc;

	(void)fd_out;
	if ((rc = madv_collapse(h->in_fd, m->start, m->len)) < 0)
		return (int)rc;
	rep->value = (uint64_t)rc;
	return 0;
}

/* ---- cgroup.mems ---- */

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

static int check_cg_mems(const struct helper *h, const void *msg)
{
	(void)msg;
	return h->in_fd < 0 || !cgroup_dir(h, h->in_fd) ? -EINVAL : 0;
}

static int do_cg_mems(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_cg_mems *m = msg;
	idset nodes;
	char text[20480];   /* every other id of IDSET_MAX: "0,2,...,4094" */

	(void)rep;
	(void)fd_out;
	/* The list is the helper's own text, formatted from the mask. */
	memcpy(nodes.bits, m->nodes, sizeof nodes.bits);
	if (idset_format(&nodes, text, sizeof text) < 0)
		return -EINVAL;
	return cg_write_mems(h->in_fd, text);
}

/* ---- watch ---- */

/* Every target a knob of the catalogue or a pool the kernel has, the entries past n zero: the
 * group's marks go on those files only (fw_open builds the paths). */
static int check_watch(const struct helper *h, const void *msg)
{
	static const struct fw_target zero;
	const struct priv_watch *m = msg;

	if (m->n < 1 || m->n > FW_MAX || m->pad)
		return -EINVAL;
	for (uint32_t i = 0; i < FW_MAX; i++) {
		if (i >= m->n ? memcmp(&m->t[i], &zero, sizeof zero) != 0
			      : fw_target_check(h->knobs, h->sysfs_root, &m->t[i]) < 0)
			return -EINVAL;
	}
	return 0;
}

static int do_watch(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_watch *m = msg;
	int fd = fw_open(h->knobs, h->sysfs_root, h->procfs_root, m->t, m->n, &rep->value);

	if (fd < 0)
		return fd;
	*fd_out = fd;
	return 0;
}

/* ---- labels.write ---- */

const char *priv_labels_path;

static int check_labels_write(const struct helper *h, const void *msg)
{
	const struct priv_labels_write *m = msg;

	(void)h;
	if (!priv_labels_path)
		return -EPERM;   /* the daemon was started without --node-labels-file */
	if (m->pad || m->len < 1 || m->len > NFD_TEXT_MAX)
		return -EINVAL;
	return nfd_text_check(m->text, m->len);
}

static int do_labels_write(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_labels_write *m = msg;

	(void)h;
	(void)rep;
	(void)fd_out;
	return nfd_write_file(priv_labels_path, m->text, m->len);
}

/* ---- the closed set ---- */

static int check_nothing(const struct helper *h, const void *msg)
{
	(void)h;
	(void)msg;
	return 0;
}

const struct priv_request priv_requests[PRIV_TYPE_END] = {
	[PRIV_KNOB_WRITE]  = { "knob_write", sizeof(struct priv_knob_write), 0, check_knob_write, do_knob_write },
	[PRIV_POOL_WRITE]  = { "pool_write", sizeof(struct priv_pool), 0, check_pool_write, do_pool_write },
	[PRIV_POOL_RUN]    = { "pool_run", sizeof(struct priv_pool_run), 0, check_pool_run, do_pool_run },
	[PRIV_COMPACT]     = { "compact", sizeof(struct priv_compact), 0, check_nothing, do_compact },
	[PRIV_PROC_OPEN]   = { "proc_open", sizeof(struct priv_proc_open), 0, check_proc_open, do_proc_open },
	[PRIV_MIGRATE]     = { "migrate", sizeof(struct priv_migrate), 0, check_migrate, do_migrate },
	[PRIV_COLLAPSE]    = { "collapse", sizeof(struct priv_collapse), 1, check_collapse, do_collapse },
	[PRIV_CG_MEMS]     = { "cg_mems", sizeof(struct priv_cg_mems), 1, check_cg_mems, do_cg_mems },
	[PRIV_SPAWN]       = { "spawn", sizeof(struct priv_spawn), 1, priv_check_spawn, priv_do_spawn },
	[PRIV_REAP]        = { "reap", sizeof(struct priv_reap), 0, priv_check_child, priv_do_reap },
	[PRIV_PROBE_START] = { "probe_start", sizeof(struct priv_probe_start), 1, priv_check_probe_start,
			       priv_do_probe_start },
	[PRIV_KILL]        = { "kill", sizeof(struct priv_kill), 0, priv_check_child, priv_do_kill },
	[PRIV_WATCH]       = { "watch", sizeof(struct priv_watch), 0, check_watch, do_watch },
	[PRIV_LABELS_WRITE] = { "labels_write", sizeof(struct priv_labels_write), 0, check_labels_write,
				do_labels_write },
	[PRIV_KNOB_WRITES] = { "knob_writes", sizeof(struct priv_knob_writes), 0, check_knob_writes, do_knob_writes },
};

/* One message of n bytes (in buf, which holds PRIV_MSG_MAX + 1) with nfds descriptors: what every
 * message shares, then the type's check, then its act. The answer's rc; rep's type and seq are
 * the request's once it had a header. */
static long dispatch(struct helper *h, const unsigned char *buf, ssize_t n, int nfds, bool ctrunc,
		     struct priv_reply *rep, int *pass)
{
	const struct priv_hdr *hd = (const void *)buf;
	const struct priv_request *r;
	int rc;

	if ((size_t)n >= sizeof *hd) {
		rep->h.type = hd->type;
		rep->h.seq = hd->seq;
	}
	if ((size_t)n < sizeof *hd || (size_t)n > PRIV_MSG_MAX || hd->magic != PRIV_MAGIC || hd->len != (size_t)n) {
		log_warn("privileged helper: refused a malformed message (%zd bytes)", n);
		return -EBADMSG;
	}
	if (hd->type == 0 || hd->type >= PRIV_TYPE_END) {
		log_warn("privileged helper: refused a message of unknown type %u", hd->type);
		return -EBADMSG;
	}
	r = &priv_requests[hd->type];
	if (ctrunc || nfds > (int)r->fds) {
		log_warn("privileged helper: refused a %s message carrying %d fds", r->name, nfds);
		return -EBADMSG;
	}
	if (hd->len != r->size) {
		log_warn("privileged helper: refused a %s message of %u bytes (it has %zu)", r->name, hd->len, r->size);
		return -EBADMSG;
	}
	if ((rc = r->check(h, buf)) < 0)
		return rc;
	return r->act(h, buf, rep, pass);
}

static void *serve(void *arg)
{
	struct helper *hp = arg, h = *hp;
	/* One byte more than any message: a datagram that fills the buffer was too long. */
	_Alignas(8) unsigned char buf[PRIV_MSG_MAX + 1];
	int fd = h.fd;

	for (;;) {
		struct priv_reply rep = { .h = { .magic = PRIV_MAGIC, .len = sizeof rep } };
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
		rep.rc = dispatch(&h, buf, n, nfds, (mh.msg_flags & MSG_CTRUNC) != 0, &rep, &pass);
		/* A spawn's rc is a pid: it passes no fd. */
		(void)priv_send(fd, &rep, sizeof rep, rep.rc == 0 ? pass : -1);
		if (pass >= 0)
			close(pass);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	}
	/* Fail closed on this side too: EOF on any channel (a zero-length datagram reads as one) is
	 * the serving side stopped, dead or broken, so the whole helper ends now rather than serve
	 * the channels left, killing the probe children it started first (they run as root, holding
	 * knobs and pools changed); the serving side sees EPIPE on every channel. */
	log_info("privileged helper: a channel closed; exiting");
	priv_kill_probes();
	_exit(0);
}

void priv_helper_run(const int *fds, int n, const struct knob_catalogue *knobs, const char *sysfs_root,
		     const char *procfs_root, unsigned probe_mem_pct)
{
	struct helper hs[PRIV_CHANNELS];
	pthread_t th;

	/* The capability sets are per thread: the threads made here inherit the helper's. The
	 * catalogue and roots are read-only; each thread has its own pool file and buffer. */
	knob_wfd_init(knobs);
	for (int i = 0; i < n && i < PRIV_CHANNELS; i++) {
		hs[i] = (struct helper){ .fd = fds[i], .knobs = knobs, .sysfs_root = sysfs_root,
					 .procfs_root = procfs_root, .nr = { .fd = -1 }, .probe_mem_pct = probe_mem_pct };
		if (i == 0)
			continue;
		if (pthread_create(&th, NULL, serve, &hs[i]) != 0) {
			/* A channel nobody serves would hang its callers: end, and the daemon sees EPIPE. */
			log_error("privileged helper: cannot start a thread for channel %d", i);
			return;
		}
		pthread_detach(th);
	}
	/* The first EOF on any channel ends the helper (serve). */
	serve(&hs[0]);
}
