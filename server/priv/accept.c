/* The helper's acceptor: the only accept() on the API's Unix socket (see handoff.h for the
 * design). One thread polls the listening socket and the hand-off channel: it accepts, records
 * the client, passes the connection on and forgets its own copy; it reads the serving side's
 * close reports (as it accepts: see REPORTS_LAZY); and it stops taking connections while the
 * serving side has not taken the last one (the clients wait in the backlog, as they would for a
 * busy libmicrohttpd). The request threads read the records (priv_accept_identity) under the
 * same lock. */
#include "server/priv/accept.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <search.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/log.h"
#include "server/priv/handoff.h"

/* One accepted connection's client, as the kernel said at accept. */
struct record {
	uint64_t id;                  /* the socket's cookie */
	dev_t dev;                    /* the socket's inode, which the fd of a request must name too */
	ino_t ino;
	struct ucred cred;
	struct record *older, *newer; /* accept order: the oldest goes first when the table is full */
};

static struct {
	pthread_mutex_t mu;           /* guards everything below */
	void *by_id;                  /* tsearch tree of struct record * (owned), by id */
	struct record *oldest, *newest;
	size_t n, max;
	uid_t serving_uid;
	bool logged_full;             /* the drop of a record is logged once, not per connection */
} tab = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Records from which the acceptor reads the serving side's close reports as they come (and,
 * before it accepts a connection, those sent before it). Below it the reports wait in the
 * channel: a connection's close costs the helper no wake-up of its own, and the reports of many
 * closes are read in one go (bench/README.md, row 14). A report is no permission, only the end of
 * a record: an identity needs the very socket passed back and its client still connected
 * (priv_accept_identity), so a record that outlives its connection a while grants nothing. What
 * waits in the channel is fewer reports than this plus what the serving side's loops batch
 * (api/incoming.c), far below what the channel's socket buffer holds (278 reports with Linux's
 * default buffer); the serving side's send would wait there, not fail. */
#define REPORTS_LAZY 32

/* ... and at most a quarter of the bound, so that records waiting for their report never push
 * out the record of an open connection (the bound is twice the connections the serving side
 * keeps; api/incoming.c holds back at most another quarter). */
static size_t reports_lazy(void)
{
	size_t q = tab.max / 4;

	return q < 1 ? 1 : q < REPORTS_LAZY ? q : REPORTS_LAZY;
}

struct acceptor {
	int listen_fd, chan;          /* owned */
	int pending;                  /* accepted, recorded, not yet taken by the serving side; -1 */
	uint64_t pending_id;
};

static int by_id(const void *a, const void *b)
{
	uint64_t x = ((const struct record *)a)->id, y = ((const struct record *)b)->id;

	return x < y ? -1 : x > y;
}

static struct record *find(uint64_t id)
{
	struct record key = { .id = id };
	struct record **r = tfind(&key, &tab.by_id, by_id);

	return r ? *r : NULL;
}

/* Called with tab.mu held. */
static void drop(struct record *r)
{
	tdelete(r, &tab.by_id, by_id);
	if (r->older)
		r->older->newer = r->newer;
	else
		tab.oldest = r->newer;
	if (r->newer)
		r->newer->older = r->older;
	else
		tab.newest = r->older;
	tab.n--;
	free(r);
}

/* The client of the connection just accepted on fd, recorded under its cookie; 0 or -errno (the
 * connection is then closed unrecorded: nothing would be known of its client). Its group list is
 * not read here but when an act needs it (priv_accept_identity), from the same socket: the
 * kernel fixed both at connect. */
static int record(int fd, uint64_t *id)
{
	struct record *r = calloc(1, sizeof *r);   /* owned until it is in the tree */
	socklen_t l = sizeof r->cred;
	struct stat st;

	if (!r)
		return -ENOMEM;
	if (!(r->id = priv_conn_id(fd)) || fstat(fd, &st) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &r->cred, &l) < 0 || l != sizeof r->cred) {
		free(r);
		return -ENOTCONN;
	}
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	pthread_mutex_lock(&tab.mu);
	/* A serving side that never reports closes must not make the table grow: past the bound
	 * the oldest record goes, and its connection can no longer be acted for (never the other
	 * way round: a dropped record refuses, it grants nothing). */
	if (tab.n >= tab.max) {
		if (!tab.logged_full)
			log_warn("privileged helper: %zu connections not reported closed; dropping the oldest "
				 "records (their clients can no longer launch)", tab.n);
		tab.logged_full = true;
		drop(tab.oldest);
	}
	if (!tsearch(r, &tab.by_id, by_id)) {
		pthread_mutex_unlock(&tab.mu);
		free(r);
		return -ENOMEM;
	}
	r->older = tab.newest;
	if (tab.newest)
		tab.newest->newer = r;
	else
		tab.oldest = r;
	tab.newest = r;
	tab.n++;
	pthread_mutex_unlock(&tab.mu);
	*id = r->id;
	return 0;
}

static void forget(uint64_t id)
{
	struct record *r;

	pthread_mutex_lock(&tab.mu);
	if ((r = find(id)))
		drop(r);
	if (tab.n < tab.max / 2)
		tab.logged_full = false;
	pthread_mutex_unlock(&tab.mu);
}

int priv_accept_identity(uint64_t id, int fd, struct priv_ident *who)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	struct ucred uc;
	socklen_t l = sizeof uc, gl = sizeof who->groups;
	struct record *r;
	struct stat st;
	int rc = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	/* The cookie alone names the socket (unique for the boot on 5.11 and later; per network
	 * namespace before). The inode and the peer's credentials are the kernel's too, and a socket
	 * that matched all three but was not the one accepted would have to share a pid with it. */
	if (!id || priv_conn_id(fd) != id)
		return -EPERM;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0 || l != sizeof uc)
		return -ENOTCONN;
	pthread_mutex_lock(&tab.mu);
	if (!(r = find(id))) {
		rc = -ENOTCONN;   /* never accepted here, reported closed, or dropped at the bound */
		goto out;
	}
	if (r->dev != st.st_dev || r->ino != st.st_ino || r->cred.pid != uc.pid || r->cred.uid != uc.uid ||
	    r->cred.gid != uc.gid) {
		rc = -EPERM;
		goto out;
	}
	/* The serving side connecting to its own socket would otherwise be a client like any. */
	if (r->cred.uid == tab.serving_uid) {
		rc = -EPERM;
		goto out;
	}
	/* The client hung up (or shut its sending side): its identity ends with the connection,
	 * whatever the serving side still holds. */
	if (poll(&p, 1, 0) < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
		drop(r);
		rc = -ENOTCONN;
		goto out;
	}
	who->pid = r->cred.pid;
	who->uid = r->cred.uid;
	who->gid = r->cred.gid;
	/* The very socket accepted (above), whose peer's groups the kernel fixed at connect. As the
	 * API reads them: unreadable (or more than a spawn carries) grants none. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, who->groups, &gl) < 0)
		gl = 0;
	who->ngroups = gl / sizeof *who->groups;
out:
	pthread_mutex_unlock(&tab.mu);
	return rc;
}

/* ---- the thread ------------------------------------------------------------------------------ */

/* Offers the pending connection; true when it is gone from here (the serving side has it, or
 * the channel has ended: then *gone), false while the channel is full. */
static bool hand_over(struct acceptor *a, bool *gone)
{
	struct priv_handoff m = { .magic = PRIV_HANDOFF_MAGIC, .type = PRIV_HANDOFF_CONN, .id = a->pending_id };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 };
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	ssize_t n;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &a->pending, sizeof a->pending);
	do
		n = sendmsg(a->chan, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
		return false;
	if (n < 0) {
		*gone = true;
		forget(a->pending_id);
	}
	/* Sent or not, the helper keeps no copy: the serving side's close is the connection's end. */
	close(a->pending);
	a->pending = -1;
	return true;
}

/* Reads the serving side's reports until none is left; true when the channel has ended. Any fd
 * sent along is closed: the helper takes nothing from the serving side on this channel. */
static bool read_reports(struct acceptor *a)
{
	for (;;) {
		struct priv_handoff m;
		int nfds, rc = priv_handoff_read(a->chan, MSG_DONTWAIT, &m, NULL, &nfds);

		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			return false;
		if (rc == 0 || (rc < 0 && rc != -EBADMSG))
			return true;
		if (rc == 1 && m.magic == PRIV_HANDOFF_MAGIC && m.type == PRIV_HANDOFF_CLOSED && !nfds)
			forget(m.id);
		else
			log_warn("privileged helper: ignored a malformed report on the hand-off channel");
	}
}

static void accept_one(struct acceptor *a)
{
	/* Non-blocking as libmicrohttpd wants it (the flag belongs to the socket's open file, which
	 * the serving side shares): it need not set it. */
	int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), rc;

	if (fd < 0) {
		/* Out of descriptors or memory: the listening socket stays readable, so wait a little
		 * rather than spin; everything else (a client gone before accept) is the next one. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			log_warn("privileged helper: accept on the API socket: %s", strerror(errno));
			poll(NULL, 0, 100);
		}
		return;
	}
	if ((rc = record(fd, &a->pending_id)) < 0) {
		log_warn("privileged helper: a connection whose client cannot be read: %s", strerror(-rc));
		close(fd);
		return;
	}
	a->pending = fd;
}

/* Whether the acceptor reads the reports now (see REPORTS_LAZY). */
static bool reports_due(void)
{
	bool due;

	pthread_mutex_lock(&tab.mu);
	due = tab.n >= reports_lazy();
	pthread_mutex_unlock(&tab.mu);
	return due;
}

static void *acceptor_main(void *arg)
{
	struct acceptor *a = arg;
	bool gone = false;

	while (!gone) {
		/* The channel's end (POLLHUP) wakes it whatever it asks for. */
		bool due = reports_due();
		struct pollfd p[2] = {
			{ .fd = a->chan, .events = (due ? POLLIN : 0) | (a->pending >= 0 ? POLLOUT : 0) },
			{ .fd = a->pending >= 0 ? -1 : a->listen_fd, .events = POLLIN },
		};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		/* When due, before a connection is accepted the closes reported before it: its record
		 * never pushes out the record of a connection that is still open. */
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR) || (due && (p[1].revents & POLLIN))) && read_reports(a))
			break;
		if (a->pending >= 0 && !hand_over(a, &gone))
			continue;
		if (p[1].revents & POLLIN)
			accept_one(a);
		if (a->pending >= 0)
			hand_over(a, &gone);
	}
	/* The serving side has ended the channel (it stops, or died): no more clients. A listener
	 * systemd passed stays open in systemd for the next start. */
	if (a->pending >= 0)
		close(a->pending);
	close(a->listen_fd);
	close(a->chan);
	free(a);
	return NULL;
}

int priv_accept_start(int listen_fd, int chan, const struct priv_accept *cfg)
{
	struct acceptor *a = calloc(1, sizeof *a);   /* owned by the thread */
	pthread_t th;
	int rc;

	if (!a)
		return -ENOMEM;
	*a = (struct acceptor){ .listen_fd = listen_fd, .chan = chan, .pending = -1 };
	/* poll said readable, but the client may be gone by accept: never block there (the serving
	 * side's reports would wait). libmicrohttpd made the listener non-blocking the same way. */
	if (fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK) < 0) {
		free(a);
		return -errno;
	}
	tab.max = cfg->max_conns ? cfg->max_conns : 1;
	tab.serving_uid = cfg->serving_uid;
	if ((rc = pthread_create(&th, NULL, acceptor_main, a)) != 0) {
		free(a);
		return -rc;
	}
	pthread_detach(th);
	return 0;
}
