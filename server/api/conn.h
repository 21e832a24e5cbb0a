/* Connections: who holds them, how many each may hold, and how long a request may take to arrive.
 *
 * libmicrohttpd accepts; this module decides, in its NOTIFY_CONNECTION callback, whether a new
 * connection may stay (per-uid and total limits with a reserve for root and the admin group),
 * and a reaper thread closes connections that do not deliver a whole request in time (slowloris).
 * libmicrohttpd's own MHD_OPTION_CONNECTION_LIMIT is max_connections per listener: it is the
 * hard bound on the fds connections take, which conn_raise_nofile() budgets for. */
#ifndef MPD_API_CONN_H
#define MPD_API_CONN_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"

struct caller;

struct conn_limits {
	unsigned max_connections;   /* per listener; libmicrohttpd refuses above it */
	unsigned max_per_uid;       /* Unix socket: what one uid outside root/admin group may hold */
	unsigned max_per_address;   /* TCP: what one peer address may hold */
	unsigned admin_reserve;     /* Unix socket: the last ones of max_connections, root/admin only */
	unsigned idle_timeout_s;    /* nothing sent either way for this long: closed (libmicrohttpd) */
	unsigned request_timeout_s; /* a whole request (headers and body) must arrive within this,
				     * counted from the accept or from the end of the previous answer */
	unsigned auth_fails;        /* TLS: failed authentications a peer may make per minute (api/auth.h) */
};

/* libmicrohttpd worker threads per listener. A connection stays with the worker that accepted
 * it and a handler runs on that worker, so a change arriving while every worker serves a long
 * listing waits behind one: 8 leave idle workers while a few readers list the largest
 * collections (bench/b_limits.py: root's change p99 47 -> 30 ms with four such readers). */
#define CONN_WORKERS 8

/* libmicrohttpd's memory per connection: the request line and headers (a request whose headers
 * do not fit gets libmicrohttpd's 431) and the answer's headers; bodies are read into our own
 * buffer. libmicrohttpd 0.9.75 zeroes the pool's free half after every request on a keep-alive
 * connection: at 64 KiB that memset was 11 % of the CPU of a knob GET under wrk (bench/README.md,
 * http.knob.rps). 16 KiB still takes a header line twice nginx's default 8 KiB. */
#define CONN_POOL_BYTES (16 * 1024)

#define CONN_DEFAULT_MAX             512
#define CONN_DEFAULT_PER_UID         64
#define CONN_DEFAULT_PER_ADDRESS     64
#define CONN_DEFAULT_RESERVE         32
#define CONN_DEFAULT_IDLE_TIMEOUT    30
#define CONN_DEFAULT_REQUEST_TIMEOUT 10
/* Open files the daemon needs besides connections: database (file, WAL, shm, journal), the lock
 * file, sysfs and procfs files of jobs and requests, libmicrohttpd's epoll and eventfds, stdio
 * (about 60 of the 128 on a 2-CPU host), and the knob files held open (32: KNOBS_HELD_MAX in
 * kernel/knobs.h, which api/ may not include; main.c, which sees both, asserts they agree). */
#define CONN_FDS_SELF (128 + 32)

/* Fills l with the defaults. */
void conn_limits_default(struct conn_limits *l);
/* Checks the limits make sense together; 0 or -1 (MPE_CONFIG_LIMITS). */
int conn_limits_check(const struct conn_limits *l, mp_err *e);
/* Raises the soft RLIMIT_NOFILE to what nlisteners × max_connections + CONN_FDS_SELF needs, and
 * logs it. -1 (MPE_CONFIG_LIMITS) when the hard limit is lower: the daemon must not start with
 * limits it cannot keep, because an fd-starved daemon fails its own jobs and database writes. */
int conn_raise_nofile(const struct conn_limits *l, int nlisteners, mp_err *e);

struct conn;        /* one accepted connection: libmicrohttpd's socket context */
struct conn_table;  /* every connection of every listener, and the reaper thread */

/* The table starts its reaper thread; NULL and e set on failure. */
struct conn_table *conn_table_new(const struct conn_limits *l, bool have_admin_gid, gid_t admin_gid, mp_err *e);
/* Stops the reaper. Call after every libmicrohttpd daemon using the table has stopped. */
void conn_table_free(struct conn_table *t);

/* A connection accepted on fd (on the Unix socket SO_PEERCRED names the caller, and the per-uid
 * limit applies; over TCP no caller is known at accept — on the TLS listener each request names
 * its own by its bearer token, api/auth.c — so the peer's address is what is counted). Returns
 * its context, owned by the table until conn_closed(); NULL when out of memory (the connection is
 * then shut down). A connection over the limits gets a 503 problem written on it and is shut down
 * — only shut down when tcp_tls (the TCP listener speaks TLS, and plain text on it would be noise
 * to the client's TLS stack); its context says so (conn_refused). */
struct conn *conn_opened(struct conn_table *t, int fd, bool tcp_tls);
void conn_closed(struct conn_table *t, struct conn *c);
bool conn_refused(const struct conn *c);
/* The caller, as SO_PEERCRED named it at accept; borrowed, valid until conn_closed. */
const struct caller *conn_caller(const struct conn *c);
/* The request is all in (headers and body): its clock stops while it is answered. */
void conn_request_in(struct conn_table *t, struct conn *c);
/* The answer is done: the clock restarts for the next request on this connection. */
void conn_request_done(struct conn_table *t, struct conn *c);
/* A slot the request layer keeps a block in between a connection's requests (api/http.c's
 * per-request state, reused rather than allocated for each request: bench/README.md §1b). *slot is
 * NULL or a block from malloc that the connection owns, freed by conn_closed; only the
 * connection's worker thread touches it. NULL when c is NULL. */
void **conn_spare(struct conn *c);

#endif
