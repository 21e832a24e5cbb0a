/* The daemon's listeners and their lifecycle: bind (http_listen), start libmicrohttpd on them
 * with the request pipeline (http_serve; the pipeline is http.c), admit each connection
 * (conn.c), and stop in order (http_stop). */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/api/auth.h"
#include "server/api/edge.h"
#include "server/api/http.h"
#include "server/api/slow.h"
#include "server/api/waits.h"
#include "server/jobs/jobs.h"
#include "server/log.h"

/* Admission happens here, the moment libmicrohttpd has accepted (conn.c decides). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct http *h = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		/* The TCP listener speaks TLS when it has a certificate: a refusal cannot be written there. */
		*socket_ctx = ci ? conn_opened(h->conns, ci->connect_fd, h->tls.cert != NULL) : NULL;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		conn_closed(h->conns, *socket_ctx);
		*socket_ctx = NULL;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	(void)cls;
	vsnprintf(line, sizeof line, fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_warn("libmicrohttpd: %s", line);
}

/* tls: the TCP listener with TLS (the key material stays in h until the daemon stops). */
static struct MHD_Daemon *start_daemon(struct http *h, int fd, bool tls)
{
	/* With a trust list libmicrohttpd asks the client for a certificate but does not require
	 * one: api/auth.c verifies it on every request. */
	struct MHD_OptionItem tls_opts[] = {
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls.key },
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls.cert },
		{ h->tls.ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, h->tls.ca },
		{ MHD_OPTION_END, 0, NULL },
	};

	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | MHD_USE_ERROR_LOG |
				MHD_ALLOW_SUSPEND_RESUME | (tls ? MHD_USE_TLS : 0), 0,
				NULL, NULL, http_on_request, h,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_UNESCAPE_CALLBACK, edge_no_unescape, NULL,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_THREAD_POOL_SIZE, CONN_WORKERS,
				MHD_OPTION_CONNECTION_TIMEOUT, h->lim.idle_timeout_s,
				MHD_OPTION_CONNECTION_LIMIT, h->lim.max_connections,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_POOL_BYTES,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				MHD_OPTION_NOTIFY_COMPLETED, http_on_completed, h,
				MHD_OPTION_ARRAY, tls ? tls_opts : &tls_opts[3],
				MHD_OPTION_END);
}

struct http *http_listen(const char *unix_path, int unix_fd, const char *tcp_addr, struct tls_files *tls,
			 const struct conn_limits *lim, mp_err *e)
{
	struct http *h = calloc(1, sizeof *h);

	if (!h) {
		tls_files_free(tls);
		mp_nomem(e);
		return NULL;
	}
	if (tls) {
		h->tls = *tls;
		memset(tls, 0, sizeof *tls);
	}
	h->fd_unix = h->fd_tcp = -1;
	h->lim = *lim;
	if (unix_fd >= 0) {
		h->fd_unix = unix_fd;
		h->unix_inherited = true;
	} else if ((h->fd_unix = listen_unix_socket(unix_path, &h->unix_id, e)) < 0) {
		goto fail;
	}
	if (!(h->unix_path = strdup(unix_path))) {
		mp_nomem(e);
		goto fail;
	}
	if (tcp_addr) {
		if ((h->fd_tcp = listen_tcp(tcp_addr, h->tls.cert != NULL, e)) < 0)
			goto fail;
		/* The names a client on this host uses for the listener: the address as configured
		 * and, for the loopback addresses, "localhost" with the same port. */
		const char *port = strrchr(tcp_addr, ':');
		h->tcp_hosts[0] = strdup(tcp_addr);
		if (asprintf(&h->tcp_hosts[1], "localhost%s", port) < 0)
			h->tcp_hosts[1] = NULL;
		if (!h->tcp_hosts[0] || !h->tcp_hosts[1]) {
			mp_nomem(e);
			goto fail;
		}
	}
	return h;
fail:
	http_stop(h);
	return NULL;
}

int http_unix_listener(const struct http *h)
{
	return h->fd_unix;
}

/* The job runner's end-of-job hook (jobs_on_end), under its lock. */
static void job_ended(void *cls, int64_t job_id)
{
	waits_job_ended(cls, job_id);
}

int http_serve(struct http *h, const struct app *app, mp_err *e)
{
	h->app = app;
	if (!(h->conns = conn_table_new(&h->lim, app->have_admin_gid, app->admin_gid, e)) ||
	    !(h->slow = slow_start(MHD_resume_connection, 1, SLOW_IDLE, e)) ||
	    !(h->reads = slow_start(MHD_resume_connection, SLOW_READ_THREADS, SLOW_NICE, e)) ||
	    !(h->waits = waits_start(MHD_resume_connection, e)))
		return -1;
	if (app->jobs)
		jobs_on_end(app->jobs, job_ended, h->waits);
	if (!(h->auth = auth_new(h->lim.auth_fails)))
		return mp_nomem(e);
	if (!(h->d_unix = start_daemon(h, h->fd_unix, false)))
		return mp_fail(e, MPE_HTTP_START, 0, "libmicrohttpd failed to start on %s", h->unix_path);
	h->fd_unix = -1;   /* libmicrohttpd's now */
	if (h->fd_tcp >= 0) {
		if (!(h->d_tcp = start_daemon(h, h->fd_tcp, h->tls.cert != NULL)))
			return mp_fail(e, MPE_HTTP_START, 0, "libmicrohttpd failed to start on %s%s", h->tcp_hosts[0],
				       h->tls.cert ? " with TLS" : "");
		h->fd_tcp = -1;
	}
	return 0;
}

static unsigned connections(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *di = d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
	return di ? di->num_connections : 0;
}

/* Stops taking clients at once, lets the requests in flight finish (up to 5 s), then stops. */
void http_stop(struct http *h)
{
	struct MHD_Daemon *d[2];
	MHD_socket ls[2];
	struct timespec ts = { 0, 20 * 1000000 };

	if (!h)
		return;
	d[0] = h->d_unix;
	d[1] = h->d_tcp;
	if (h->unix_path && !h->unix_inherited)
		listen_unix_release(h->unix_path, &h->unix_id);   /* a new client finds no socket */
	for (int i = 0; i < 2; i++) {
		ls[i] = d[i] ? MHD_quiesce_daemon(d[i]) : MHD_INVALID_SOCKET;
		/* ... or is refused: MHD's threads may still hold the fd, so it is shut down now and
		 * closed only after MHD_stop_daemon (libmicrohttpd's rule). */
		if (ls[i] != MHD_INVALID_SOCKET && !(i == 0 && h->unix_inherited))
			shutdown(ls[i], SHUT_RDWR);
	}
	/* Held answers go out now, with the job as it is (still running): the drain below would
	 * otherwise wait for their deadlines. A request that asks to wait from here on is answered
	 * at once (waits_add refuses it). */
	if (h->app && h->app->jobs)
		jobs_on_end(h->app->jobs, NULL, NULL);
	waits_stop(h->waits);
	/* A scan in flight runs at SCHED_IDLE, which gets no CPU while the machine is busy: at stop
	 * it is what is left to answer, so it runs at normal priority. */
	slow_hurry(h->slow);
	for (int n = 0; n < 250 && connections(d[0]) + connections(d[1]) > 0; n++)
		nanosleep(&ts, NULL);
	/* A suspended connection must be resumed before its daemon stops: the slow thread runs what
	 * is queued (the drain above let it) and resumes each before it ends. */
	slow_stop(h->slow);
	slow_stop(h->reads);
	for (int i = 0; i < 2; i++) {
		if (d[i])
			MHD_stop_daemon(d[i]);
		if (ls[i] != MHD_INVALID_SOCKET)
			close(ls[i]);
	}
	/* Listeners never served (start-up failed after http_listen): clients queued in their
	 * backlog are refused by the close. */
	if (h->fd_unix >= 0)
		close(h->fd_unix);
	if (h->fd_tcp >= 0)
		close(h->fd_tcp);
	conn_table_free(h->conns);
	waits_free(h->waits);
	auth_free(h->auth);
	tls_files_free(&h->tls);
	free(h->unix_path);
	for (int i = 0; i < 3; i++)
		free(h->tcp_hosts[i]);
	free(h);
}
