/* The hand-off receiver (see incoming.h): n loops, each the only thread of its own libmicrohttpd
 * daemon, all polling the hand-off channel. */
#include "server/api/incoming.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/log.h"
#include "server/priv/handoff.h"


enum { EV_WAKE, EV_MHD, EV_SOURCE };   /* what a loop's epoll event is about (its data.u32) */

struct loop {
	struct incoming *in;       /* borrowed */
	struct MHD_Daemon *d;      /* owned: run by this loop's thread only */
	int wake;                  /* owned: an eventfd; a resume or incoming_quiesce/stop writes it */
	int ep;                    /* owned: the loop's epoll (the wake, the daemon's epoll, the source) */
	int src;                   /* the source registered in ep now, -1 for none */
	uint64_t reports[PRIV_HANDOFF_BATCH];   /* closes not told the helper yet */
	unsigned nreports;
	pthread_t th;
	bool started;
};

struct incoming {
	int chan;                  /* borrowed */
	int standby;               /* borrowed: the Unix listener, accepted on once chan has ended */
	unsigned max;
	unsigned n;
	unsigned batch;            /* closes a loop tells the helper at once (see incoming_start) */
	struct loop *loops;        /* owned, n of them */
	pthread_mutex_t mu;        /* guards the fields below */
	unsigned open;             /* started and not closed, plus the ones a loop is adding now */
	bool quiesced;             /* taking no more connections */
	bool ended;                /* the channel has ended (the helper is lost) */
	bool on_standby;           /* ... and the loops accept on the standby listener instead */
	bool stopping;             /* the loops end */
};

/* The process's receiver, for incoming_resume, which libmicrohttpd's resume callers reach with
 * the connection alone. Set before its loops start and cleared after they and every resumer have
 * stopped (http_stop's order), so no lock: the thread starts order the reads after the write. */
static struct incoming *receiver;
/* The loop the calling thread runs, NULL on any other thread: a close notified on a loop is
 * reported after its pass, when libmicrohttpd has closed the socket and the client has its EOF,
 * and with the next closes of that loop up to in->batch. */
static __thread struct loop *this_loop;

/* Where a loop takes connections from now: the channel, the standby listener or nowhere (-1:
 * at the limit, quiesced, or the channel ended with no standby); *stop when the loops end. */
static int source(struct incoming *in, bool *stop)
{
	int fd;

	pthread_mutex_lock(&in->mu);
	*stop = in->stopping;
	if (in->quiesced || in->open >= in->max)
		fd = -1;
	else if (in->on_standby)
		fd = in->standby;
	else
		fd = in->ended ? -1 : in->chan;
	pthread_mutex_unlock(&in->mu);
	return fd;
}

/* The channel has ended (rc: why): the loops go on the standby listener, if there is one. */
static void channel_ended(struct incoming *in, int rc)
{
	pthread_mutex_lock(&in->mu);
	if (!in->ended && !in->quiesced) {
		if (rc != -EPIPE)
			log_error("the hand-off channel: %s; no more connections from the helper", strerror(-rc));
		if (in->standby >= 0) {
			log_warn("the privileged helper accepts no more: this process accepts on the Unix socket until it "
				 "exits (degraded: no privileged act is possible)");
			in->on_standby = true;
		}
	}
	in->ended = true;
	pthread_mutex_unlock(&in->mu);
}

/* The next connection from src: its fd, or -1 when there is none for this loop (another loop
 * took it, or the channel ended). */
static int next_conn(struct incoming *in, int src, uint64_t *id)
{
	int fd, rc;

	*id = 0;
	if (src == in->standby) {
		if ((fd = accept4(src, NULL, NULL, SOCK_CLOEXEC)) >= 0)
			return fd;
		/* Out of descriptors or memory: the listener stays readable, so wait a little rather
		 * than spin. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			log_warn("accept on the standby listener: %s", strerror(errno));
			poll(NULL, 0, 100);
		}
		return -1;
	}
	if ((rc = priv_handoff_take(src, &fd, id)) == 0)
		return fd;
	if (rc == -EPROTO)
		log_warn("the privileged helper sent something other than a connection: dropped");
	else if (rc != -EAGAIN)
		channel_ended(in, rc);
	return -1;
}

/* Takes the next connection from src, if it is still there, into this loop's daemon; true when
 * one came (the daemon has work). */
static bool take(struct loop *lp, int src)
{
	struct incoming *in = lp->in;
	/* What libmicrohttpd's own accept says of a Unix client, which http.c reads to tell the
	 * Unix socket from TCP. */
	const struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t id;
	int fd;

	/* A slot is reserved first: another loop may have taken the last one since source(). */
	pthread_mutex_lock(&in->mu);
	if (in->open >= in->max) {
		pthread_mutex_unlock(&in->mu);
		return false;
	}
	in->open++;
	pthread_mutex_unlock(&in->mu);
	if ((fd = next_conn(in, src, &id)) >= 0 &&
	    MHD_add_connection(lp->d, fd, (const struct sockaddr *)&sa, sizeof sa.sun_family) != MHD_YES) {
		/* Refused (out of memory): libmicrohttpd has closed it. If it had notified the start it
		 * notified the close too (and the report below is a second one, which the helper
		 * ignores); if not, this is the only report of its end. */
		priv_handoff_closed(in->chan, id);
	}
	/* The connection, if it started, is counted by incoming_opened now. */
	pthread_mutex_lock(&in->mu);
	in->open--;
	pthread_mutex_unlock(&in->mu);
	return fd >= 0;
}

/* Registers src (-1: none) as the loop's source of connections in place of the last one. */
static int set_source(struct loop *lp, int src)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.u32 = EV_SOURCE };

	if (src == lp->src)
		return 0;
	if (lp->src >= 0 && epoll_ctl(lp->ep, EPOLL_CTL_DEL, lp->src, NULL) < 0)
		return -errno;
	lp->src = -1;
	if (src >= 0 && epoll_ctl(lp->ep, EPOLL_CTL_ADD, src, &ev) < 0)
		return -errno;
	lp->src = src;
	return 0;
}

static void flush_reports(struct loop *lp, unsigned least)
{
	if (lp->nreports && lp->nreports >= least) {
		priv_handoff_closed_many(lp->in->chan, lp->reports, lp->nreports);
		lp->nreports = 0;
	}
}

static void *loop_main(void *arg)
{
	struct loop *lp = arg;

	this_loop = lp;
	for (;;) {
		struct epoll_event ev[3];
		MHD_UNSIGNED_LONG_LONG to;
		bool stop, run;
		int src = source(lp->in, &stop), ms = -1, n, rc;

		if (stop)
			break;
		if ((rc = set_source(lp, src)) < 0) {
			log_error("the Unix socket's loop: epoll_ctl: %s", strerror(-rc));
			break;
		}
		if (MHD_get_timeout(lp->d, &to) == MHD_YES)
			ms = to > INT_MAX ? INT_MAX : (int)to;
		if ((n = epoll_wait(lp->ep, ev, 3, ms)) < 0) {
			if (errno == EINTR)
				continue;
			log_error("the Unix socket's loop: epoll_wait: %s", strerror(errno));
			break;
		}
		/* The daemon runs when it has something to do: a loop that only lost the race for a
		 * connection goes back to waiting at once. */
		run = n == 0;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u32 == EV_WAKE) {
				eventfd_t v;
				if (eventfd_read(lp->wake, &v) < 0 && errno != EAGAIN)
					log_warn("the Unix socket's loop: reading its wake: %s", strerror(errno));
				run = true;
			} else if (ev[i].data.u32 == EV_MHD) {
				run = true;
			} else if (take(lp, src)) {
				run = true;
			}
		}
		if (run)
			MHD_run(lp->d);
		flush_reports(lp, lp->in->batch);
	}
	flush_reports(lp, 0);
	this_loop = NULL;
	return NULL;
}

struct incoming *incoming_new(int chan, int standby, unsigned max, mp_err *e)
{
	struct incoming *in = calloc(1, sizeof *in);

	if (!in) {
		mp_nomem(e);
		return NULL;
	}
	/* Several loops race for each client on the standby listener: the losers must not block in
	 * accept (the helper made the shared listener non-blocking already while it lived). */
	if (standby >= 0 && fcntl(standby, F_SETFL, fcntl(standby, F_GETFL) | O_NONBLOCK) < 0) {
		free(in);
		mp_fail(e, MPE_HTTP_START, errno, "the standby listener: fcntl: %s", strerror(errno));
		return NULL;
	}
	in->chan = chan;
	in->standby = standby;
	in->max = max;
	pthread_mutex_init(&in->mu, NULL);
	return in;
}

/* The loop's wake, daemon and epoll; 0 or -errno (then it holds nothing). */
static int loop_init(struct loop *lp, struct MHD_Daemon *(*make)(void *cls), void *cls)
{
	struct epoll_event wake = { .events = EPOLLIN, .data.u32 = EV_WAKE };
	struct epoll_event mhd = { .events = EPOLLIN, .data.u32 = EV_MHD };
	const union MHD_DaemonInfo *di;
	int rc;

	if ((lp->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return -errno;
	if ((lp->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		rc = -errno;
		goto fail_wake;
	}
	if (!(lp->d = make(cls))) {
		rc = -EIO;   /* libmicrohttpd has logged why */
		goto fail_ep;
	}
	if (!(di = MHD_get_daemon_info(lp->d, MHD_DAEMON_INFO_EPOLL_FD))) {
		rc = -ENOTSUP;
		goto fail_d;
	}
	if (epoll_ctl(lp->ep, EPOLL_CTL_ADD, lp->wake, &wake) < 0 || epoll_ctl(lp->ep, EPOLL_CTL_ADD, di->epoll_fd, &mhd) < 0) {
		rc = -errno;
		goto fail_d;
	}
	return 0;
fail_d:
	MHD_stop_daemon(lp->d);
	lp->d = NULL;
fail_ep:
	close(lp->ep);
fail_wake:
	close(lp->wake);
	return rc;
}

int incoming_start(struct incoming *in, unsigned n, struct MHD_Daemon *(*make)(void *cls), void *cls, mp_err *e)
{
	int rc;

	if (!(in->loops = calloc(n, sizeof *in->loops)))
		return mp_nomem(e);
	/* The helper's records are bounded at twice max (main.c) and it lets up to a quarter of the
	 * bound wait for their reports (priv/accept.c): what the loops hold back stays within an
	 * eighth, so no record of an open connection is ever pushed out. */
	in->batch = in->max / (4 * n);
	in->batch = in->batch < 1 ? 1 : in->batch > PRIV_HANDOFF_BATCH ? PRIV_HANDOFF_BATCH : in->batch;
	for (unsigned i = 0; i < n; i++, in->n++) {
		struct loop *lp = &in->loops[i];
		lp->in = in;
		lp->src = -1;
		if ((rc = loop_init(lp, make, cls)) < 0)
			return mp_fail(e, MPE_HTTP_START, -rc, "the Unix socket's loop %u: %s", i, strerror(-rc));
	}
	receiver = in;
	for (unsigned i = 0; i < n; i++) {
		if ((rc = pthread_create(&in->loops[i].th, NULL, loop_main, &in->loops[i])) != 0)
			return mp_fail(e, MPE_HTTP_START, rc, "cannot start the Unix socket's loops");
		in->loops[i].started = true;
	}
	return 0;
}

void incoming_opened(struct incoming *in)
{
	if (!in)
		return;
	pthread_mutex_lock(&in->mu);
	in->open++;
	pthread_mutex_unlock(&in->mu);
}

void incoming_closed(struct incoming *in, uint64_t id)
{
	if (!in)
		return;
	pthread_mutex_lock(&in->mu);
	if (in->open)
		in->open--;
	pthread_mutex_unlock(&in->mu);
	/* A loop that found no room polls nothing for connections: the one closing this (itself a
	 * loop, or the main thread after the loops stopped) looks again before it next waits. */
	if (this_loop && this_loop->in == in && this_loop->nreports < PRIV_HANDOFF_BATCH)
		this_loop->reports[this_loop->nreports++] = id;
	else
		priv_handoff_closed(in->chan, id);
}

static void wake_all(struct incoming *in)
{
	for (unsigned i = 0; i < in->n; i++)
		if (eventfd_write(in->loops[i].wake, 1) < 0)
			log_warn("waking the Unix socket's loop: %s", strerror(errno));
}

void incoming_resume(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
	/* Copied before the resume: ci points into the connection, which a daemon with threads of its
	 * own (the TCP listener's) may finish and free as soon as it is resumed. */
	struct MHD_Daemon *d = ci ? ci->daemon : NULL;
	struct incoming *in = receiver;

	MHD_resume_connection(conn);
	if (!in || !d)
		return;
	for (unsigned i = 0; i < in->n; i++)
		if (in->loops[i].d == d) {
			if (eventfd_write(in->loops[i].wake, 1) < 0)
				log_warn("waking the Unix socket's loop: %s", strerror(errno));
			return;
		}
}

unsigned incoming_connections(struct incoming *in)
{
	unsigned n;

	if (!in)
		return 0;
	pthread_mutex_lock(&in->mu);
	n = in->open;
	pthread_mutex_unlock(&in->mu);
	return n;
}

void incoming_quiesce(struct incoming *in)
{
	if (!in)
		return;
	pthread_mutex_lock(&in->mu);
	in->quiesced = true;
	pthread_mutex_unlock(&in->mu);
	priv_handoff_shutdown(in->chan);
	wake_all(in);   /* a loop waiting on the standby listener stops accepting on it now */
}

void incoming_stop(struct incoming *in)
{
	if (!in)
		return;
	incoming_quiesce(in);
	pthread_mutex_lock(&in->mu);
	in->stopping = true;
	pthread_mutex_unlock(&in->mu);
	wake_all(in);
	for (unsigned i = 0; i < in->n; i++)
		if (in->loops[i].started) {
			pthread_join(in->loops[i].th, NULL);
			in->loops[i].started = false;
		}
	/* No loop runs them now: stopping closes what they hold, notified on this thread. */
	for (unsigned i = 0; i < in->n; i++)
		if (in->loops[i].d) {
			MHD_stop_daemon(in->loops[i].d);
			in->loops[i].d = NULL;
		}
}

void incoming_free(struct incoming *in)
{
	if (!in)
		return;
	if (receiver == in)
		receiver = NULL;
	for (unsigned i = 0; i < in->n; i++) {
		close(in->loops[i].ep);
		close(in->loops[i].wake);
	}
	free(in->loops);
	pthread_mutex_destroy(&in->mu);
	free(in);
}
