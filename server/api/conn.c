/* Connection limits and request deadlines (see conn.h for the why). */
#include "server/api/conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "common/jtext.h"
#include "server/api/api.h"
#include "server/api/auth.h"
#include "server/api/peer.h"
#include "server/clock.h"
#include "server/log.h"

struct conn {
	struct caller who;
	int fd;                     /* borrowed from libmicrohttpd; open while the conn is listed */
	bool unix_listener;
	unsigned char addr[16];     /* TCP: the peer's address, IPv4 as ::ffff:a.b.c.d; zeros if unknown */
	bool refused;               /* answered 503 at accept; closing */
	bool lingers;               /* refused, and counted in conn_table.lingering */
	/* CLOCK_MONOTONIC deadline for the request now arriving; 0: none. Atomic rather than under
	 * the table's lock: the connection's worker sets it twice per request, and one lock for
	 * every worker was two contended lock/unlock pairs per request (bench/README.md §1b). The
	 * reaper takes a deadline with a compare-and-swap, so a request that arrives whole at that
	 * moment either stops its clock first or is the one cut. */
	_Atomic int64_t due_ns;
	void *spare;                /* owned: conn_spare's block, or NULL */
	struct conn *prev, *next;   /* in conn_table.head */
};

struct conn_table {
	struct conn_limits lim;
	bool have_admin_gid;
	gid_t admin_gid;
	pthread_mutex_t mu;         /* guards everything below (a listed conn stays allocated while held) */
	pthread_cond_t wake;
	struct conn *head;          /* listed: every conn between conn_opened and conn_closed */
	unsigned unix_counted;      /* Unix connections that count against the limits */
	unsigned lingering;         /* refused ones still waiting for libmicrohttpd to close them */
	int64_t last_warn_ns;       /* refusals are logged once per 10 s, not once per attempt */
	unsigned refused_since_warn;
	bool stop;
	pthread_t reaper;
};

void conn_limits_default(struct conn_limits *l)
{
	l->max_connections = CONN_DEFAULT_MAX;
	l->max_per_uid = CONN_DEFAULT_PER_UID;
	l->max_per_address = CONN_DEFAULT_PER_ADDRESS;
	l->admin_reserve = CONN_DEFAULT_RESERVE;
	l->idle_timeout_s = CONN_DEFAULT_IDLE_TIMEOUT;
	l->request_timeout_s = CONN_DEFAULT_REQUEST_TIMEOUT;
	l->auth_fails = AUTH_DEFAULT_FAILS;
}

int conn_limits_check(const struct conn_limits *l, mp_err *e)
{
	/* libmicrohttpd splits max_connections over its worker threads: fewer leaves a worker that
	 * accepts nothing. */
	if (l->max_connections < CONN_WORKERS || l->max_connections > 1000000)
		return mp_fail(e, MPE_CONFIG_LIMITS, 0, "max-connections must be %d to 1000000, not %u", CONN_WORKERS,
			       l->max_connections);
	if (l->admin_reserve >= l->max_connections)
		return mp_fail(e, MPE_CONFIG_LIMITS, 0, "admin-reserve (%u) must be less than max-connections (%u)",
			       l->admin_reserve, l->max_connections);
	if (l->max_per_uid < 1)
		return mp_fail(e, MPE_CONFIG_LIMITS, 0, "max-connections-per-uid must be at least 1");
	if (l->max_per_address < 1)
		return mp_fail(e, MPE_CONFIG_LIMITS, 0, "max-connections-per-address must be at least 1");
	if (l->idle_timeout_s < 1 || l->idle_timeout_s > 86400 || l->request_timeout_s < 1 ||
	    l->request_timeout_s > 86400)
		return mp_fail(e, MPE_CONFIG_LIMITS, 0, "idle-timeout and request-timeout must be 1 to 86400 seconds");
	if (l->auth_fails < 1 || l->auth_fails > 1000000)
		return mp_fail(e, MPE_CONFIG_LIMITS, 0, "auth-failures-per-minute must be 1 to 1000000");
	return 0;
}

int conn_raise_nofile(const struct conn_limits *l, int nlisteners, mp_err *e)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)nlisteners * l->max_connections + CONN_FDS_SELF, was;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return mp_fail(e, MPE_CONFIG_LIMITS, errno, "getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= need) {
		log_info("open files: the limit %llu covers the %llu needed (%d listener(s) x %u connections + %d)",
			 (unsigned long long)rl.rlim_cur, (unsigned long long)need, nlisteners, l->max_connections,
			 CONN_FDS_SELF);
		return 0;
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		return mp_fail(e, MPE_CONFIG_LIMITS, 0,
			       "%d listener(s) x max-connections %u need %llu open files (with %d for the daemon's own "
			       "work) but the hard limit is %llu: lower max-connections or raise the limit "
			       "(LimitNOFILE= in the systemd unit, ulimit -Hn)", nlisteners, l->max_connections,
			       (unsigned long long)need, CONN_FDS_SELF, (unsigned long long)rl.rlim_max);
	was = rl.rlim_cur;
	rl.rlim_cur = need;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return mp_fail(e, MPE_CONFIG_LIMITS, errno, "setrlimit(RLIMIT_NOFILE, %llu): %s",
			       (unsigned long long)need, strerror(errno));
	log_info("open files: limit raised from %llu to %llu (%d listener(s) x %u connections + %d)",
		 (unsigned long long)was, (unsigned long long)need, nlisteners, l->max_connections, CONN_FDS_SELF);
	return 0;
}

/* ---- the reaper ----------------------------------------------------------------------------- */

/* Shutting the socket down makes libmicrohttpd's next read see EOF, and it closes the connection
 * itself (NOTIFY_CLOSED comes before its close(), so the fd is still this connection's here). */
static void *reaper_main(void *arg)
{
	struct conn_table *t = arg;

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		struct timespec ts;
		int64_t now = clk_mono_ns();
		for (struct conn *c = t->head; c; c = c->next) {
			int64_t due = atomic_load(&c->due_ns);
			if (!due || now < due || !atomic_compare_exchange_strong(&c->due_ns, &due, 0))
				continue;
			shutdown(c->fd, SHUT_RDWR);
			log_debug("closing a connection%s (uid %d): no whole request within %u s",
				  c->refused ? " already refused" : "", c->who.known ? (int)c->who.uid : -1,
				  t->lim.request_timeout_s);
		}
		/* A real quarter second even under the test clock (server/clock.h): this is a tick
		 * for the monotonic deadlines above, not a time anything is due. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000000;   /* a deadline is kept to within a quarter second */
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->wake, &t->mu, &ts);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

struct conn_table *conn_table_new(const struct conn_limits *l, bool have_admin_gid, gid_t admin_gid, mp_err *e)
{
	struct conn_table *t = calloc(1, sizeof *t);

	if (!t) {
		mp_nomem(e);
		return NULL;
	}
	t->lim = *l;
	t->have_admin_gid = have_admin_gid;
	t->admin_gid = admin_gid;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->wake, NULL);
	if (pthread_create(&t->reaper, NULL, reaper_main, t) != 0) {
		mp_fail(e, MPE_HTTP_START, errno, "cannot start the connection reaper thread");
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->mu);
		free(t);
		return NULL;
	}
	return t;
}

void conn_table_free(struct conn_table *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->reaper, NULL);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* ---- admission ------------------------------------------------------------------------------ */

/* The TCP peer's address as 16 bytes, an IPv4 one mapped (::ffff:a.b.c.d) so that a peer counts
 * the same over either family; zeros when it cannot be read. */
static void peer_address(int fd, unsigned char out[16])
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;

	memset(out, 0, 16);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	} else if (ss.ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)&ss)->sin_addr, 4);
	}
}

/* Why c may not stay, or NULL when it may. Called with t->mu held; c is not listed yet. */
static const char *over_limit(struct conn_table *t, const struct conn *c, char *why, size_t len)
{
	unsigned same_uid = 0, same_addr = 0;

	if (!c->unix_listener) {
		/* TCP: one address may not take the listener's every slot (libmicrohttpd's limit is the
		 * total). Exact addresses: a peer with many (an IPv6 /64) is bounded by the total only. */
		static const unsigned char v4mapped[12] = { [10] = 0xff, [11] = 0xff };
		char text[INET6_ADDRSTRLEN] = "?";

		for (const struct conn *o = t->head; o; o = o->next)
			if (!o->unix_listener && !o->refused && !memcmp(o->addr, c->addr, sizeof c->addr))
				same_addr++;
		if (same_addr < t->lim.max_per_address)
			return NULL;
		if (!memcmp(c->addr, v4mapped, sizeof v4mapped))
			inet_ntop(AF_INET, c->addr + 12, text, sizeof text);
		else
			inet_ntop(AF_INET6, c->addr, text, sizeof text);
		snprintf(why, len, "address %s already holds %u connections, the most one address may", text, same_addr);
		return why;
	}
	if (c->who.admin)
		return NULL;   /* root/admin: up to libmicrohttpd's limit, reserve included */
	if (t->unix_counted + t->lim.admin_reserve >= t->lim.max_connections) {
		snprintf(why, len, "the daemon holds %u connections; the last %u are kept for root and the admin group",
			 t->unix_counted, t->lim.admin_reserve);
		return why;
	}
	for (const struct conn *o = t->head; o; o = o->next)
		if (o->unix_listener && !o->refused && o->who.known == c->who.known && o->who.uid == c->who.uid)
			same_uid++;
	if (same_uid >= t->lim.max_per_uid) {
		snprintf(why, len, "uid %d already holds %u connections, the most one user may",
			 c->who.known ? (int)c->who.uid : -1, same_uid);
		return why;
	}
	return NULL;
}

/* Answers 503 on the raw socket: the client has sent nothing libmicrohttpd has read, and
 * libmicrohttpd will never answer on this connection (on_request refuses it). */
static void refuse(int fd, const char *why)
{
	mp_err e = { 0 };
	json_t *p;
	char *body, head[256];
	int hl;

	mp_fail(&e, MPE_HTTP_TOO_MANY_CONNECTIONS, 0, "%s", why);
	p = problem_json(&e, NULL);
	body = p ? jtext_dump(p, JSON_COMPACT, NULL) : NULL;
	json_decref(p);
	if (!body)
		return;
	hl = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\n"
		      "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n",
		      api_status(&e), api_status_title(api_status(&e)), strlen(body));
	/* Non-blocking (libmicrohttpd's sockets are): a client that does not read loses the answer. */
	if (send(fd, head, (size_t)hl, MSG_NOSIGNAL | MSG_DONTWAIT) == hl)
		(void)!send(fd, body, strlen(body), MSG_NOSIGNAL | MSG_DONTWAIT);
	free(body);
}

struct conn *conn_opened(struct conn_table *t, int fd, bool tcp_tls)
{
	struct conn *c = calloc(1, sizeof *c);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char why[160];
	const char *no;

	if (!c) {
		shutdown(fd, SHUT_RDWR);
		return NULL;
	}
	c->fd = fd;
	c->unix_listener = getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_UNIX;
	if (!c->unix_listener)
		peer_address(fd, c->addr);
	/* Outside the lock: the user and group lookups may be slow (NSS). */
	peer_identify(fd, c->unix_listener, t->have_admin_gid, t->admin_gid, &c->who);
	pthread_mutex_lock(&t->mu);
	no = over_limit(t, c, why, sizeof why);
	if (no) {
		int64_t now = clk_mono_ns();
		c->refused = true;
		if (c->unix_listener || !tcp_tls)
			refuse(fd, no);
		/* Stop writing; keep reading so the client's request is read (and dropped) rather than
		 * reset before it reads the 503. Such lingering connections are few and short-lived:
		 * beyond half the reserve, or after a second, they are cut at once. */
		if (t->lingering * 2 >= t->lim.admin_reserve) {
			shutdown(fd, SHUT_RDWR);
		} else {
			shutdown(fd, SHUT_WR);
			t->lingering++;
			c->lingers = true;
			atomic_store(&c->due_ns, now + 1000000000);
		}
		t->refused_since_warn++;
		if (now - t->last_warn_ns >= 10LL * 1000000000) {
			log_warn("refused %u connection(s) over the limits in the last 10 s, this one because %s",
				 t->refused_since_warn, no);
			t->last_warn_ns = now;
			t->refused_since_warn = 0;
		}
	} else {
		atomic_store(&c->due_ns, clk_mono_ns() + (int64_t)t->lim.request_timeout_s * 1000000000);
		if (c->unix_listener)
			t->unix_counted++;
	}
	c->next = t->head;
	if (t->head)
		t->head->prev = c;
	t->head = c;
	pthread_mutex_unlock(&t->mu);
	return c;
}

void conn_closed(struct conn_table *t, struct conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		t->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->lingers)
		t->lingering--;
	else if (!c->refused && c->unix_listener)
		t->unix_counted--;
	pthread_mutex_unlock(&t->mu);
	free(c->spare);
	free(c);
}

bool conn_refused(const struct conn *c)
{
	return !c || c->refused;
}

const struct caller *conn_caller(const struct conn *c)
{
	return c ? &c->who : NULL;
}

void conn_request_in(struct conn_table *t, struct conn *c)
{
	(void)t;
	if (!c || c->refused)
		return;
	atomic_store(&c->due_ns, 0);
}

void **conn_spare(struct conn *c)
{
	return c ? &c->spare : NULL;
}

void conn_request_done(struct conn_table *t, struct conn *c)
{
	if (!c || c->refused)
		return;
	atomic_store(&c->due_ns, clk_mono_ns() + (int64_t)t->lim.request_timeout_s * 1000000000);
}
