/* The serving side's channels to the helper and its requests: each packs its typed message, takes
 * a free channel, and believes of the answer only what it checks. */
#include "server/priv/priv.h"

#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/priv/chans.h"
#include "server/priv/helper.h"
#include "server/log.h"

/* The daemon's ends of the socketpairs, one request in flight on each; a request takes a free one
 * and waits when none is. Several, so that a request that takes long in the kernel (compaction, a
 * large migrate_pages, a resize step of a 1 GiB page) holds up only its own caller.
 *
 * A channel is lost for good on EOF, on a socket error once the request was sent, and on any reply
 * that is not exactly the answer to the request just sent (size, magic, type, sequence number):
 * after a reply that does not match, nothing tells which request a later one answers, so the
 * channel is shut down and never handed out again (fail closed). */
struct chan {
	int fd;                    /* owned; shut down, not closed, once dead (priv_stop closes it) */
	uint32_t seq;              /* of the last request sent on it; 0 is never sent */
};
static struct chan chans[PRIV_CHANNELS];
static int nchans;                 /* 0 without a helper */
static int free_chans[PRIV_CHANNELS], nfree;   /* indices into chans */
static int nalive;                 /* channels not lost */
static pid_t helper_pid = -1;
static pthread_mutex_t chan_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t chan_freed = PTHREAD_COND_INITIALIZER;
/* Fail closed: set at the first EOF or EPIPE on any channel (or the helper's exit), never
 * cleared; from then on every request fails with -EPIPE at once, without a send. */
static atomic_bool lost;
static void (*on_lost)(void);      /* main's wake-up, set before any request */
/* Requests sent, by type: what the helper was asked for (the tests count its opens with it). */
static atomic_uint_fast64_t sent[PRIV_TYPE_END];

bool priv_active(void)
{
	return nchans > 0;
}

bool priv_lost(void)
{
	return atomic_load(&lost);
}

pid_t priv_helper_pid(void)
{
	return helper_pid;
}

void priv_on_lost(void (*fn)(void))
{
	on_lost = fn;
}

/* The first caller to see the helper gone says so and wakes main; later ones change nothing. */
static void mark_lost(const char *why)
{
	if (atomic_exchange(&lost, true))
		return;
	log_error("the privileged helper is lost (%s): changes are refused with 503 from now on, and the daemon "
		  "exits once what is in flight is answered", why);
	if (on_lost)
		on_lost();
}

bool priv_check_helper(void)
{
	siginfo_t si = { 0 };

	/* WNOWAIT: priv_stop() still reaps it. si_pid stays 0 while it runs. */
	if (nchans && waitid(P_PID, (id_t)helper_pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == helper_pid)
		mark_lost(si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED ? "it was killed by a signal" : "it exited");
	return priv_lost();
}

uint64_t priv_requests_sent(unsigned type, const char **name)
{
	if (type == 0 || type >= PRIV_TYPE_END)
		return 0;
	*name = priv_requests[type].name;
	return atomic_load(&sent[type]);
}

void priv_chans_adopt(const int *fds, int n, pid_t helper)
{
	for (int i = 0; i < n && i < PRIV_CHANNELS; i++) {
		chans[i] = (struct chan){ .fd = fds[i] };
		free_chans[i] = i;
	}
	nchans = nfree = nalive = n < PRIV_CHANNELS ? n : PRIV_CHANNELS;
	lost = false;
	helper_pid = helper;
}

void priv_stop(void)
{
	int st;

	if (!nchans)
		return;
	for (int i = 0; i < nchans; i++)
		close(chans[i].fd);
	nchans = nfree = nalive = 0;
	/* EOF ends the helper's loops; it answers nothing in between. */
	while (waitpid(helper_pid, &st, 0) < 0 && errno == EINTR)
		;
	helper_pid = -1;
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

/* One request and its answer on c. The request's header, when it has one, gets the channel's next
 * sequence number, and the answer must carry it and the request's type (a message too short for a
 * header is answered with both 0). 0, or -errno; *dead when the channel cannot be used again. */
static int exchange_on(struct chan *c, void *msg, size_t len, int send_fd, struct priv_reply *rep, int *fd,
		       bool *dead)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof *rep };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf };
	uint32_t want_type = 0, want_seq = 0;
	struct cmsghdr *cm;
	int got = -1;
	ssize_t n;

	*dead = false;
	if (len >= sizeof(struct priv_hdr)) {
		struct priv_hdr *h = msg;
		if (++c->seq == 0)
			c->seq = 1;
		h->seq = want_seq = c->seq;
		want_type = h->type;
	}
	n = priv_send(c->fd, msg, len, send_fd);
	if (n < 0) {
		/* Nothing was sent unless the peer is gone: only then is the channel lost. */
		*dead = errno == EPIPE || errno == ECONNRESET;
		return *dead ? -EPIPE : -errno;
	}
	*dead = true;   /* from here on, anything but the matching answer ends the channel */
	do
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int))) {
			if (got >= 0)
				close(got);
			memcpy(&got, CMSG_DATA(cm), sizeof got);
		}
	if (n == 0) {
		if (got >= 0)
			close(got);
		return -EPIPE;
	}
	if ((size_t)n != sizeof *rep || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || rep->h.magic != PRIV_MAGIC ||
	    rep->h.len != sizeof *rep || rep->h.type != want_type || rep->h.seq != want_seq) {
		if (got >= 0)
			close(got);
		log_error("privileged helper: an answer that is not the request's (%zd bytes, type %u seq %u for "
			  "type %u seq %u): the channel is closed", n, (size_t)n >= sizeof rep->h ? rep->h.type : 0,
			  (size_t)n >= sizeof rep->h ? rep->h.seq : 0, want_type, want_seq);
		return -EPROTO;
	}
	*dead = false;
	if (fd)
		*fd = got;
	else if (got >= 0)
		close(got);
	return 0;
}

int priv_exchange(void *msg, size_t len, int send_fd, struct priv_reply *rep, int *fd)
{
	struct chan *c;
	bool dead;
	int rc, i;

	if (fd)
		*fd = -1;
	if (!nchans)
		return -ENOTCONN;
	pthread_mutex_lock(&chan_lock);
	while (!nfree && nalive && !priv_lost())
		pthread_cond_wait(&chan_freed, &chan_lock);
	if (!nfree || priv_lost()) {
		pthread_mutex_unlock(&chan_lock);
		return -EPIPE;
	}
	i = free_chans[--nfree];
	pthread_mutex_unlock(&chan_lock);
	c = &chans[i];
	if (len >= sizeof(struct priv_hdr)) {
		const struct priv_hdr *h = msg;
		if (h->type > 0 && h->type < PRIV_TYPE_END)
			atomic_fetch_add(&sent[h->type], 1);
	}
	rc = exchange_on(c, msg, len, send_fd, rep, fd, &dead);
	pthread_mutex_lock(&chan_lock);
	if (dead) {
		/* Never handed out again, so that no caller waits on it or takes a late answer for its
		 * own; shut down, so that the helper's thread for it ends (and with it the helper). And
		 * fail closed: one channel lost is the helper lost, every request from now on fails at
		 * once (the waiters too), and the daemon exits (main.c). */
		shutdown(c->fd, SHUT_RDWR);
		nalive--;
		pthread_mutex_unlock(&chan_lock);
		mark_lost(rc == -EPROTO ? "an answer that was not the request's" : "a channel to it reached EOF");
		pthread_mutex_lock(&chan_lock);
		pthread_cond_broadcast(&chan_freed);
	} else {
		free_chans[nfree++] = i;
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

/* k and value as both knob requests carry them: k's index in the catalogue (the helper's is the
 * same, built before the fork) and value in a zeroed field of PRIV_KNOB_VALUE. -EINVAL for a knob
 * not of c or a value that does not fit. */
static int knob_entry(const struct knob_catalogue *c, const struct knob *k, const char *value, uint32_t *index,
		      char field[PRIV_KNOB_VALUE])
{
	size_t i, n = knobs_count(c), len = strlen(value);

	for (i = 0; i < n && knobs_at(c, i) != k; i++)
		;
	if (i == n || len >= PRIV_KNOB_VALUE)
		return -EINVAL;
	*index = (uint32_t)i;
	memcpy(field, value, len);
	return 0;
}

int priv_knob_write(const struct knob_catalogue *c, const struct knob *k, const char *value)
{
	struct priv_knob_write m = { 0 };
	struct priv_reply rep;

	if (knob_entry(c, k, value, &m.index, m.value) < 0)
		return -EINVAL;
	return (int)ask(&m, sizeof m, PRIV_KNOB_WRITE, &rep, NULL);
}

long priv_knob_writes(const struct knob_catalogue *c, const struct knob *const *ks, const char *const *values,
		      size_t n, int *rc)
{
	size_t done = 0;

	/* PRIV_KNOB_BATCH at a time, stopping where a batch stopped short. */
	while (done < n) {
		struct priv_knob_writes m = { 0 };
		struct priv_reply rep;
		uint32_t k = (uint32_t)(n - done < PRIV_KNOB_BATCH ? n - done : PRIV_KNOB_BATCH);
		long r;

		for (uint32_t i = 0; i < k; i++)
			if (knob_entry(c, ks[done + i], values[done + i], &m.e[i].index, m.e[i].value) < 0)
				return done ? (long)done : -EINVAL;
		m.n = k;
		if ((r = ask(&m, sizeof m, PRIV_KNOB_WRITES, &rep, NULL)) < 0)
			return done ? (long)done : r;
		/* The helper's count and results are checked like any field it sends: never more than
		 * asked, every one before the last a success, a short batch ending on a failure. */
		if (rep.value < 1 || rep.value > k)
			return -EPROTO;
		for (uint32_t i = 0; i < rep.value; i++) {
			bool last = i + 1 == rep.value;
			if ((!last && rep.knob_rc[i] != 0) || (last && rep.value < k && rep.knob_rc[i] == 0) ||
			    rep.knob_rc[i] > 1)
				return -EPROTO;
			rc[done + i] = rep.knob_rc[i];
		}
		done += rep.value;
		if (rep.value < k || rc[done - 1] != 0)
			break;
	}
	return (long)done;
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

int priv_labels_write(const char *text, size_t len)
{
	struct priv_labels_write *m;   /* owned: 32 kB, not on a thread's stack */
	struct priv_reply rep;
	long rc;

	if (len < 1 || len > sizeof m->text)
		return -EINVAL;
	if (!(m = calloc(1, sizeof *m)))
		return -ENOMEM;
	m->len = (uint32_t)len;
	memcpy(m->text, text, len);
	rc = ask(m, sizeof *m, PRIV_LABELS_WRITE, &rep, NULL);
	free(m);
	return (int)rc;
}

int priv_proc_open(pid_t pid, enum proc_file f)
{
	struct priv_proc_open m = { .pid = pid, .file = (uint32_t)f };
	struct priv_reply rep;
	int fd = -1;   /* priv_exchange sets it, also when no channel is left */
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
	long rc;

	m.maxnode = from->maxnode > to->maxnode ? from->maxnode : to->maxnode;
	_Static_assert(sizeof m.from == sizeof from->bits, "the masks travel word for word");
	memcpy(m.from, from->bits, sizeof m.from);
	memcpy(m.to, to->bits, sizeof m.to);
	rc = ask(&m, sizeof m, PRIV_MIGRATE, &rep, NULL);
	/* The count is in value (proto.h): what migrate_pages(2) returned in the helper. */
	if (rc < 0)
		return rc;
	return rep.value > LONG_MAX ? -EPROTO : (long)rep.value;
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

int priv_watch(const struct fw_target *t, unsigned n, uint64_t *marked)
{
	struct priv_watch m = { .n = n };
	struct priv_reply rep;
	int fd = -1;   /* priv_exchange sets it, also when no channel is left */
	long rc;

	*marked = 0;
	if (n < 1 || n > FW_MAX)
		return -EINVAL;
	memcpy(m.t, t, n * sizeof *t);
	rc = ask(&m, sizeof m, PRIV_WATCH, &rep, &fd);
	if (rc < 0 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return rc < 0 ? (int)rc : -EPROTO;
	}
	/* Never a mark on a target this side did not name. */
	if (n < 64 && rep.value >> n) {
		close(fd);
		return -EPROTO;
	}
	*marked = rep.value;
	return fd;
}
