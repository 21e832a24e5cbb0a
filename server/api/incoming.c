/* The hand-off receiver (see incoming.h). */
#include "server/api/incoming.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "server/log.h"
#include "server/priv/handoff.h"

struct incoming {
	int chan;                  /* borrowed */
	int standby;               /* borrowed: the Unix listener, accepted on once chan has ended */
	int wake;                  /* owned: an eventfd incoming_stop writes (wakes a standby accept) */
	struct MHD_Daemon *d;      /* borrowed */
	unsigned max;
	pthread_t th;
	pthread_mutex_t mu;        /* guards open and stop */
	pthread_cond_t freed;
	unsigned open;             /* added to libmicrohttpd and not closed since */
	bool stop;
	bool started;              /* th runs (incoming_start succeeded) */
};

/* Waits, under in->mu, until a connection may be added; false when stopping. libmicrohttpd
 * closes a connection it cannot set up (out of memory) without a notification, which would keep
 * its slot taken for ever: while at the limit, its own count corrects ours once a second. */
static bool wait_for_room(struct incoming *in)
{
	while (!in->stop && in->open >= in->max) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec++;
		if (pthread_cond_timedwait(&in->freed, &in->mu, &ts) == ETIMEDOUT) {
			const union MHD_DaemonInfo *di = MHD_get_daemon_info(in->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
			if (di && di->num_connections < in->open)
				in->open = di->num_connections;
		}
	}
	return !in->stop;
}

/* The next connection on the standby listener: its fd, or -1 when stopping (or the listener
 * fails). Waits in poll on the listener and the wake eventfd, so incoming_stop ends it. */
static int standby_accept(struct incoming *in)
{
	struct pollfd p[2] = { { .fd = in->standby, .events = POLLIN }, { .fd = in->wake, .events = POLLIN } };

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (p[1].revents)
			return -1;
		if (p[0].revents & (POLLERR | POLLNVAL))
			return -1;
		int fd = accept4(in->standby, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			return -1;
	}
}

static void *incoming_main(void *arg)
{
	struct incoming *in = arg;
	/* What libmicrohttpd's own accept says of a Unix client, which http.c reads to tell the
	 * Unix socket from TCP. */
	const struct sockaddr_un sa = { .sun_family = AF_UNIX };

	bool standby = false;   /* the helper is lost: accepting on the standby listener */

	for (;;) {
		uint64_t id = 0;
		int fd, rc;

		pthread_mutex_lock(&in->mu);
		if (!wait_for_room(in)) {
			pthread_mutex_unlock(&in->mu);
			break;
		}
		pthread_mutex_unlock(&in->mu);
		if (standby) {
			if ((fd = standby_accept(in)) < 0)
				break;
			goto add;
		}
		if ((rc = priv_handoff_recv(in->chan, &fd, &id)) == -EPROTO) {
			log_warn("the privileged helper sent something other than a connection: dropped");
			continue;
		}
		if (rc < 0) {
			if (rc != -EPIPE)
				log_error("the hand-off channel: %s; no more connections from the helper", strerror(-rc));
			pthread_mutex_lock(&in->mu);
			standby = !in->stop && in->standby >= 0;
			pthread_mutex_unlock(&in->mu);
			if (!standby)
				break;
			log_warn("the privileged helper accepts no more: this process accepts on the Unix socket until it "
				 "exits (degraded: no privileged act is possible)");
			continue;
		}
add:
		/* Counted before it is added: its close may be notified before MHD_add_connection returns. */
		pthread_mutex_lock(&in->mu);
		in->open++;
		pthread_mutex_unlock(&in->mu);
		/* Refused (out of memory, every worker at its share): libmicrohttpd has closed it without
		 * a notification, so its end is told from here. */
		if (MHD_add_connection(in->d, fd, (const struct sockaddr *)&sa, sizeof sa.sun_family) != MHD_YES)
			incoming_closed(in, id);
	}
	return NULL;
}

struct incoming *incoming_new(int chan, int standby, unsigned max, mp_err *e)
{
	struct incoming *in = calloc(1, sizeof *in);

	if (!in) {
		mp_nomem(e);
		return NULL;
	}
	in->chan = chan;
	in->standby = standby;
	in->max = max;
	if ((in->wake = eventfd(0, EFD_CLOEXEC)) < 0) {
		free(in);
		mp_fail(e, MPE_HTTP_START, errno, "eventfd: %s", strerror(errno));
		return NULL;
	}
	pthread_mutex_init(&in->mu, NULL);
	pthread_cond_init(&in->freed, NULL);
	return in;
}

int incoming_start(struct incoming *in, struct MHD_Daemon *d, mp_err *e)
{
	int rc;

	in->d = d;
	if ((rc = pthread_create(&in->th, NULL, incoming_main, in)) != 0)
		return mp_fail(e, MPE_HTTP_START, rc, "cannot start the thread that takes connections from the helper");
	in->started = true;
	return 0;
}

void incoming_closed(struct incoming *in, uint64_t id)
{
	if (!in)
		return;
	pthread_mutex_lock(&in->mu);
	if (in->open)
		in->open--;
	pthread_cond_signal(&in->freed);
	pthread_mutex_unlock(&in->mu);
	priv_handoff_closed(in->chan, id);
}

void incoming_stop(struct incoming *in)
{
	if (!in || !in->started)
		return;
	pthread_mutex_lock(&in->mu);
	in->stop = true;
	pthread_cond_signal(&in->freed);
	pthread_mutex_unlock(&in->mu);
	priv_handoff_shutdown(in->chan);
	if (eventfd_write(in->wake, 1) < 0)
		log_warn("waking the standby accept: %s", strerror(errno));
	pthread_join(in->th, NULL);
	in->started = false;
}

void incoming_free(struct incoming *in)
{
	if (!in)
		return;
	close(in->wake);
	pthread_cond_destroy(&in->freed);
	pthread_mutex_destroy(&in->mu);
	free(in);
}
