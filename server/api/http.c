/* libmicrohttpd glue: listeners, the router, body limits, and sending replies and problems.
 * Everything a handler may assume is checked here first (the caller's identity: peer.c; the
 * helpers a handler calls: request.c). */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/api/api.h"
#include "server/api/auth.h"
#include "server/api/conn.h"
#include "server/api/edge.h"
#include "server/api/slow.h"
#include "server/api/listen.h"
#include "server/api/tls.h"
#include "server/api/waits.h"
#include "server/jobs/jobs.h"
#include "server/log.h"
#include "server/priv/act.h"

struct http {
	const struct app *app;     /* borrowed; NULL until http_serve() */
	int fd_unix, fd_tcp;       /* owned until http_serve() hands them to libmicrohttpd; -1 then */
	struct MHD_Daemon *d_unix; /* owned */
	struct MHD_Daemon *d_tcp;  /* owned, NULL without --listen-tcp */
	char *unix_path;           /* owned; unlinked at stop if still our socket (and not systemd's) */
	struct unix_socket_id unix_id;
	bool unix_inherited;       /* systemd's socket: left open for the next start, never shut down */
	char *tcp_hosts[3];        /* owned: the Host values the plain TCP listener answers to */
	struct tls_files tls;      /* owned: cert and key set when the TCP listener speaks TLS */
	struct auth *auth;         /* owned: failed authentications per peer (TLS only) */
	struct conn_limits lim;
	struct conn_table *conns;  /* owned: admission, per-uid counts, request deadlines */
	struct slow *slow;         /* owned: the thread R_SLOW handlers run on (api/slow.c) */
	struct waits *waits;       /* owned: held answers, ?wait= (api/waits.c) */
};

/* Per-request state between libmicrohttpd's calls. */
struct reqstate {
	const struct route *route; /* NULL when the router already decided the answer */
	mp_err early;              /* an answer decided before the body arrived */
	unsigned retry_after;      /* seconds, for a 429 early answer; 0: no Retry-After */
	char path[API_MAX_URL + 1]; /* the decoded path the router saw */
	char *body;                /* owned */
	size_t len;
	bool too_big;
	enum { SLOW_NONE, SLOW_RUNNING, SLOW_DONE } slow; /* an R_SLOW handler's progress */
	int slow_rc;               /* its return value, once SLOW_DONE */
	mp_err slow_err;           /* its error, once SLOW_DONE */
	struct req rq;
};

/* Runs on the slow thread while the connection is suspended; resuming it publishes the result
 * to the worker that sends it. */
static void run_slow(void *arg)
{
	struct reqstate *s = arg;

	mp_err_clear(&s->slow_err);
	s->slow_rc = s->route->fn(&s->rq, &s->slow_err);
	s->slow = SLOW_DONE;
}

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

static struct conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* ---- replies -------------------------------------------------------------------------------- */

/* Headers a problem may carry besides its body. */
struct problem_headers {
	const char *allow;         /* a 405's Allow */
	unsigned retry_after;      /* a 429's Retry-After, seconds; 0: none */
};

static enum MHD_Result send_json(struct MHD_Connection *conn, int status, json_t *body, const char *ctype,
				 const char *location, const struct problem_headers *ph)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!text)
		text = strdup("{}");
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (location && *location)
		MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, location);
	if (ph && ph->allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, ph->allow);
	if (ph && ph->retry_after) {
		char v[16];
		snprintf(v, sizeof v, "%u", ph->retry_after);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
	}
	/* RFC 6750: a 401 names the scheme it wants. */
	if (status == 401)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"mempolicyd\", error=\"invalid_token\"");
	ret = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_problem(struct MHD_Connection *conn, const mp_err *e, const char *url,
				    const struct problem_headers *ph)
{
	json_t *p = problem_json(e, url);
	enum MHD_Result ret = send_json(conn, api_status(e), p, "application/problem+json", NULL, ph);
	json_decref(p);
	return ret;
}

/* ---- routing -------------------------------------------------------------------------------- */

/* Does url match the route's pattern? Captures {} segments into params when given. With R_TAIL
 * the pattern's last {} takes the rest of the path, '/' included (a cgroup path). */
static bool match(const struct route *r, const char *url, char **params)
{
	int np = 0;
	const char *p = r->pattern, *u = url;

	while (*p && *u) {
		if (p[0] == '{' && p[1] == '}') {
			const char *end = (r->flags & R_TAIL) && !p[2] ? NULL : strchr(u, '/');
			size_t n = end ? (size_t)(end - u) : strlen(u);
			if (n == 0 || np == API_MAX_PARAMS)
				return false;
			if (params)
				params[np] = strndup(u, n);
			np++;
			u += n;
			p += 2;
		} else if (*p++ != *u++) {
			return false;
		}
	}
	return !*p && !*u;
}

static const struct route *route_find(const char *method, const char *url, char *allow, size_t allow_len,
				       bool *path_known)
{
	const struct route *found = NULL;
	size_t off = 0;

	*path_known = false;
	allow[0] = '\0';
	for (size_t i = 0; i < api_nroutes; i++) {
		const struct route *r = &api_routes[i];
		if (!match(r, url, NULL))
			continue;
		*path_known = true;
		/* RFC 9110 9.3.2: every GET route answers HEAD too, with GET's status and headers;
		 * libmicrohttpd leaves the body out of an answer to HEAD (Content-Length stays). */
		bool is_get = !strcmp(r->method, "GET");
		/* The first match wins, so a literal ("/v1/history/stats") listed before a pattern
		 * ("/v1/history/{}") takes precedence. */
		if (!found && (!strcmp(r->method, method) || (is_get && !strcmp(method, "HEAD"))))
			found = r;
		if (!strstr(allow, r->method)) {
			int w = snprintf(allow + off, allow_len - off, "%s%s%s", off ? ", " : "", r->method,
					 is_get ? ", HEAD" : "");
			if (w > 0 && (size_t)w < allow_len - off)
				off += (size_t)w;
		}
	}
	return found;
}

/* "application/json", any case, optionally followed by parameters ("; charset=utf-8"): nothing
 * before it and nothing else after it. */
static bool is_json_type(const char *ct)
{
	size_t n = strlen("application/json");

	if (!ct || strncasecmp(ct, "application/json", n))
		return false;
	ct += n;
	ct += strspn(ct, " \t");
	return *ct == '\0' || *ct == ';';
}

/* Runs on the first call for a request: everything that can be decided from the headers. */
static void decide_early(struct http *h, struct MHD_Connection *conn, const char *url, const char *method,
			 const char *version, struct reqstate *s)
{
	char allow[64];
	bool path_known;
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const struct caller *who = conn_caller(conn_of(conn));

	/* Not by comparing daemons: with a thread pool a connection belongs to a worker's daemon. */
	const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	bool tcp = !ai || !ai->client_addr || ai->client_addr->sa_family != AF_UNIX;

	s->rq.app = h->app;
	s->rq.conn = conn;
	s->rq.method = method;
	s->rq.url = s->path;
	if (who)
		s->rq.who = *who;
	if (strlen(url) > API_MAX_URL) {
		mp_fail(&s->early, MPE_REQUEST_URI_TOO_LONG, 0, "the URL is longer than %d bytes", API_MAX_URL);
		return;
	}
	if (edge_decode_path(url, s->path, sizeof s->path, &s->early) < 0 ||
	    edge_check_headers(conn, version, tcp, h->tls.cert ? NULL : (const char *const *)h->tcp_hosts,
			       &s->early) < 0 ||
	    edge_decode_query(conn, &s->rq, &s->early) < 0)
		return;
	/* Over TLS every request, reads included, is a token's (api/auth.c); before routing, so that
	 * a client without one learns nothing of the API. */
	if (tcp && h->tls.cert && auth_tls_request(h->auth, h->app, conn, h->tls.ca != NULL, &s->rq.who,
						   &s->retry_after, &s->early) < 0)
		return;
	url = s->path;
	s->route = route_find(method, url, allow, sizeof allow, &path_known);
	if (!s->route) {
		if (path_known)
			mp_fail(&s->early, MPE_REQUEST_METHOD_NOT_ALLOWED, 0, "%s is not allowed on %s (allowed: %s)",
				method, url, allow);
		else
			mp_fail(&s->early, MPE_REQUEST_NOT_FOUND, 0, "no resource at %s", url);
		return;
	}
	if (cl && strtoull(cl, NULL, 10) > API_MAX_BODY) {
		mp_fail(&s->early, MPE_REQUEST_TOO_LARGE, 0, "the body is larger than %d bytes", API_MAX_BODY);
		goto unroute;
	}
	if ((s->route->flags & R_ADMIN) && !s->rq.who.admin) {
		if (s->rq.who.token)
			mp_fail(&s->early, MPE_AUTH_SCOPE, 0, "the token '%s' has scope read; changes need a token "
				"of scope admin", s->rq.who.name + strlen("token:"));
		else if (s->rq.who.known)
			mp_fail(&s->early, MPE_AUTH_FORBIDDEN, 0,
				"uid %u may read but not change; changes need root or the admin group",
				(unsigned)s->rq.who.uid);
		else
			mp_fail(&s->early, MPE_AUTH_FORBIDDEN, 0,
				"changes are only accepted on the Unix socket, where the caller is known");
		goto unroute;
	}
	/* Fail closed: once the helper is lost nothing that needs it is tried (it would fail with a
	 * broken pipe, misreported as the kernel's refusal) until the daemon's restart. */
	if ((s->route->flags & R_PRIV) && act_helper_lost()) {
		mp_fail(&s->early, MPE_PRIV_LOST, 0, "the privileged helper is gone: no change can be made; the "
			"daemon exits once what is in flight is answered, and its service manager starts it again");
		goto unroute;
	}
	if (s->route->flags & R_BODY) {
		const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
		if (!is_json_type(ct)) {
			mp_fail(&s->early, MPE_REQUEST_UNSUPPORTED_MEDIA_TYPE, 0,
				"the body must be application/json (got %.64s)", ct ? ct : "none");
			goto unroute;
		}
	}
	match(s->route, url, s->rq.param);
	return;
unroute:
	s->route = NULL;
}

/* Sends the answer decide_early() chose, with Allow on a 405. */
static enum MHD_Result send_early(struct MHD_Connection *conn, const struct reqstate *s, const char *method,
				  const char *url)
{
	char allow[64];
	bool known;

	struct problem_headers ph = { .retry_after = s->retry_after };

	route_find(method, url, allow, sizeof allow, &known);
	if (s->early.code == MPE_REQUEST_METHOD_NOT_ALLOWED)
		ph.allow = allow;
	return send_problem(conn, &s->early, url, &ph);
}

/* An early refusal goes out before the body only when reading the body costs more than it is
 * worth: it is over the limit (413), the client waits for "100 Continue" before sending it, or its
 * length is unknown (chunked). libmicrohttpd then drops the body and closes the connection, and a
 * client that writes its whole request before reading gets EPIPE instead of the problem. So a body
 * of known length (at most 64 KiB, or it is a 413) is read and dropped first. */
static bool answer_before_body(struct MHD_Connection *conn, const mp_err *early)
{
	const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
	const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return early->code == MPE_REQUEST_TOO_LARGE || early->code == MPE_REQUEST_URI_TOO_LONG || (expect && !strcasecmp(expect, "100-continue")) ||
	       (te && strcasecmp(te, "identity"));
}

static int parse_body(struct reqstate *s, mp_err *e)
{
	json_error_t jerr;

	if (!s->len)
		return mp_fail(e, MPE_REQUEST_EMPTY_BODY, 0, "this request needs a JSON object body");
	s->rq.body = json_loadb(s->body, s->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!s->rq.body)
		return mp_fail(e, json_error_code(&jerr) == json_error_duplicate_key ? MPE_REQUEST_DUPLICATE_KEY
										       : MPE_REQUEST_MALFORMED_JSON,
			       0, "malformed JSON at line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	if (edge_json_has_negative_zero(s->body, s->len))
		return mp_fail(e, MPE_REQUEST_MALFORMED_JSON, 0, "the body holds a negative zero; write 0");
	if (!json_is_object(s->rq.body))
		return mp_fail(e, MPE_REQUEST_NOT_AN_OBJECT, 0, "the body must be a JSON object");
	return 0;
}

/* Suspends conn until the job rq->hold_job ends or rq->hold_s pass; -1: not held, the handler
 * answers now. libmicrohttpd does not time out a suspended connection (and restarts its idle
 * clock on resume), and the request deadline stopped when the request was in (conn.c); the hold
 * is still cut to under the idle timeout, so that no answer takes longer than a client that
 * times out at the daemon's idle timeout waits: with --idle-timeout 1 nothing is held. */
static int hold(struct http *h, struct MHD_Connection *conn, const struct req *rq)
{
	unsigned secs = rq->hold_s < h->lim.idle_timeout_s ? rq->hold_s : h->lim.idle_timeout_s - 1;

	if (!secs || !h->waits || !h->app->jobs)
		return -1;
	MHD_suspend_connection(conn);
	if (waits_add(h->waits, conn, rq->hold_job, (int64_t)secs * 1000) < 0) {
		MHD_resume_connection(conn);
		return -1;
	}
	/* The job may have ended after the handler read it and before waits_add, its end told to
	 * nobody: jobs_active() answers under the lock the runner tells ends under (jobs.h). */
	if (!jobs_active(h->app->jobs, rq->hold_job))
		waits_job_ended(h->waits, rq->hold_job);
	return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct http *h = cls;
	struct reqstate *s = *con_cls;
	mp_err e;
	enum MHD_Result ret;
	int rc;

	if (!s) {
		/* Refused at accept (conn.c answered 503 on the socket): nothing more is said. */
		if (conn_refused(conn_of(conn)))
			return MHD_NO;
		if (!(s = calloc(1, sizeof *s)))
			return MHD_NO;
		*con_cls = s;
		decide_early(h, conn, url, method, version, s);
		if (s->early.code && answer_before_body(conn, &s->early)) {
			conn_request_in(h->conns, conn_of(conn));
			return send_early(conn, s, method, url);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (s->early.code) {
			;   /* read and dropped: the answer is already decided */
		} else if (!s->too_big && s->len + *upload_size <= API_MAX_BODY) {
			char *nb = realloc(s->body, s->len + *upload_size);
			if (!nb)
				return MHD_NO;
			s->body = nb;
			memcpy(s->body + s->len, upload, *upload_size);
			s->len += *upload_size;
		} else {
			s->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	/* The whole request is in: its deadline no longer runs while the handler works. */
	conn_request_in(h->conns, conn_of(conn));
	if (s->early.code)
		return send_early(conn, s, method, url);
	mp_err_clear(&e);
	if (s->too_big) {
		mp_fail(&e, MPE_REQUEST_TOO_LARGE, 0, "the body is larger than %d bytes", API_MAX_BODY);
		return send_problem(conn, &e, url, NULL);
	}
	if (s->slow == SLOW_NONE && (s->route->flags & R_BODY) && parse_body(s, &e) < 0)
		return send_problem(conn, &e, url, NULL);
	if ((s->route->flags & R_SLOW) && s->slow == SLOW_NONE) {
		s->slow = SLOW_RUNNING;
		MHD_suspend_connection(conn);
		if (slow_submit(h->slow, conn, run_slow, s) == 0)
			return MHD_YES;   /* called again once the slow thread resumes the connection */
		MHD_resume_connection(conn);
		s->slow = SLOW_NONE;  /* no memory to queue it: run it here */
	}
	if (s->slow == SLOW_DONE)
		e = s->slow_err;
	rc = s->slow == SLOW_DONE ? s->slow_rc : s->route->fn(&s->rq, &e);
	if (rc == 0 && s->rq.hold_job && !s->rq.held) {
		s->rq.held = true;
		if (hold(h, conn, &s->rq) == 0)
			return MHD_YES;   /* called again once the job ended or the time is up */
		rc = s->route->fn(&s->rq, &e);   /* not held: answered now */
	}
	if (rc < 0) {
		if (!e.code)
			mp_fail(&e, MPE_INTERNAL_ERROR, 0, "the handler failed without saying why");
		if (api_status(&e) >= 500)
			log_error("%s %s: %s", method, url, e.detail);
		return send_problem(conn, &e, url, NULL);
	}
	if (s->rq.text) {
		struct MHD_Response *r = MHD_create_response_from_buffer(s->rq.text_len, s->rq.text,
									 MHD_RESPMEM_MUST_COPY);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, s->rq.ctype);
		ret = MHD_queue_response(conn, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (s->rq.out && api_add_instants(s->rq.out) < 0) {
		mp_nomem(&e);
		return send_problem(conn, &e, url, NULL);
	}
	/* A handler may answer an error itself when the problem carries extension members. */
	ret = send_json(conn, s->rq.status ? s->rq.status : 200, s->rq.out,
			s->rq.status >= 400 ? "application/problem+json" : "application/json", s->rq.location, NULL);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct http *h = cls;
	struct reqstate *s = *con_cls;
	(void)toe;

	if (!s)
		return;
	conn_request_done(h->conns, conn_of(conn));
	for (int i = 0; i < API_MAX_PARAMS; i++)
		free(s->rq.param[i]);
	for (int i = 0; i < s->rq.nquery; i++) {
		free(s->rq.query[i].key);
		free(s->rq.query[i].value);
	}
	json_decref(s->rq.body);
	json_decref(s->rq.out);
	free(s->rq.text);
	free(s->body);
	free(s);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	(void)cls;
	vsnprintf(line, sizeof line, fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_warn("libmicrohttpd: %s", line);
}

/* ---- listeners ------------------------------------------------------------------------------ */

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
				NULL, NULL, on_request, h,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_UNESCAPE_CALLBACK, edge_no_unescape, NULL,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)CONN_WORKERS,
				MHD_OPTION_CONNECTION_TIMEOUT, h->lim.idle_timeout_s,
				MHD_OPTION_CONNECTION_LIMIT, h->lim.max_connections,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
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

/* The job runner's end-of-job hook (jobs_on_end), under its lock. */
static void job_ended(void *cls, int64_t job_id)
{
	waits_job_ended(cls, job_id);
}

int http_serve(struct http *h, const struct app *app, mp_err *e)
{
	h->app = app;
	if (!(h->conns = conn_table_new(&h->lim, app->have_admin_gid, app->admin_gid, e)) || !(h->slow = slow_start(e)) ||
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
	for (int n = 0; n < 250 && connections(d[0]) + connections(d[1]) > 0; n++)
		nanosleep(&ts, NULL);
	/* A suspended connection must be resumed before its daemon stops: the slow thread runs what
	 * is queued (the drain above let it) and resumes each before it ends. */
	slow_stop(h->slow);
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
