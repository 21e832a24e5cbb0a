/* The request pipeline: everything a handler may assume is checked here first, in order (the
 * edge's decoding, authentication on TLS, routing by api/routes.c, the body's limits and type,
 * admin rights), then the handler runs (on an HTTP worker, or a thread of api/slow.c for R_SLOW and R_READ), its
 * answer may be held (?wait=), and the reply or problem goes out. The caller's identity is
 * peer.c's, the helpers a handler calls request.c's; the listeners that feed this are serve.c's. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/jtext.h"
#include "server/api/auth.h"
#include "server/api/edge.h"
#include "server/api/http.h"
#include "server/api/slow.h"
#include "server/api/waits.h"
#include "server/jobs/jobs.h"
#include "server/log.h"
#include "server/ops/helper_state.h"

/* Per-request state between libmicrohttpd's calls. */
struct reqstate {
	const struct route *route; /* NULL when the router already decided the answer */
	mp_err early;              /* an answer decided before the body arrived */
	unsigned retry_after;      /* seconds, for a 429 early answer; 0: no Retry-After */
	char path[API_MAX_URL + 1]; /* the decoded path the router saw */
	char *body;                /* owned */
	size_t len;
	bool too_big;
	enum { SLOW_NONE, SLOW_RUNNING, SLOW_DONE } slow; /* an R_SLOW or R_READ handler's progress */
	int slow_rc;               /* its return value, once SLOW_DONE */
	mp_err slow_err;           /* its error, once SLOW_DONE */
	struct req rq;
};

/* Runs on a thread of api/slow.c while the connection is suspended; resuming it publishes the result
 * to the worker that sends it. */
static void run_slow(void *arg)
{
	struct reqstate *s = arg;
	struct req *rq = &s->rq;
	char *text;   /* owned until handed to rq */

	mp_err_clear(&s->slow_err);
	s->slow_rc = s->route->fn(rq, &s->slow_err);
	/* A plain 200 JSON answer is also rendered here, so that no part of a large answer (its
	 * instants' texts, the dump) is left for the HTTP worker that serves writes. Anything else
	 * (an error, a hold, a header to add, no memory) goes out as it would from the worker. */
	if (s->slow_rc == 0 && rq->out && !rq->text && (!rq->status || rq->status == 200) && !rq->location[0] &&
	    !rq->hold_job && api_add_instants(rq->out) == 0 && (text = jtext_dump(rq->out, JSON_COMPACT, &rq->text_len))) {
		json_decref(rq->out);
		rq->out = NULL;
		rq->text = text;
		rq->ctype = "application/json";
	}
	s->slow = SLOW_DONE;
}

/* Not by comparing daemons: with a thread pool a connection belongs to a worker's daemon. */
bool http_on_unix_socket(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	return ai && ai->client_addr && ai->client_addr->sa_family == AF_UNIX;
}

static struct conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* A request's state: the block the connection kept from its previous request, cleared, else a new
 * one. A GET of a knob made this calloc (1.8 KB, past glibc's per-thread cache, so each went
 * through the arena's bins and its fast-bin consolidation) and its free for every request. */
static struct reqstate *reqstate_new(struct conn *c)
{
	void **spare = conn_spare(c);
	struct reqstate *s;

	if (!spare || !*spare)
		return calloc(1, sizeof *s);
	s = *spare;
	*spare = NULL;
	memset(s, 0, sizeof *s);
	return s;
}

/* Gives s (its members already freed) back to the connection c for its next request. */
static void reqstate_release(struct conn *c, struct reqstate *s)
{
	void **spare = conn_spare(c);

	if (spare && !*spare)
		*spare = s;
	else
		free(s);
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
	size_t len = 2;
	char *text = body ? jtext_dump(body, JSON_COMPACT, &len) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!text && !(text = strdup("{}")))
		return MHD_NO;   /* no memory for a reply: libmicrohttpd closes the connection */
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
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

/* "application/json", any case, optionally followed by parameters ("; charset=utf-8"): nothing
 * before it and nothing else after it. JSON is UTF-8 (RFC 8259) and the body is read as UTF-8, so
 * a charset parameter naming anything else (utf-16, latin1) is refused: read as UTF-8 it would be
 * another text than the client meant (edge_charset_utf8). */
static bool is_json_type(const char *ct)
{
	size_t n = strlen("application/json");

	if (!ct || strncasecmp(ct, "application/json", n))
		return false;
	ct += n;
	ct += strspn(ct, " \t");
	return *ct == '\0' || (*ct == ';' && edge_charset_utf8(ct));
}

/* Runs on the first call for a request: everything that can be decided from the headers. */
static void decide_early(struct http *h, struct MHD_Connection *conn, const char *url, const char *method,
			 const char *version, struct reqstate *s)
{
	char allow[64];
	bool path_known;
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const struct caller *who = conn_caller(conn_of(conn));

	bool tcp = !http_on_unix_socket(conn);

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
	/* The handler would refuse it too (ops/launch_req.c, pmigrate.c), but only after the body:
	 * an empty or malformed one would answer 400 where every other refusal of the caller is 403. */
	if ((s->route->flags & R_CALLER) && !s->rq.who.known) {
		mp_fail(&s->early, MPE_AUTH_FORBIDDEN, 0, "%s", s->rq.who.token
			? "a token has no uid: what runs as the caller needs a caller known from the Unix socket"
			: "what runs as the caller is only accepted on the Unix socket, where the caller is known");
		goto unroute;
	}
	/* Fail closed: once the helper is lost nothing that needs it is tried (it would fail with a
	 * broken pipe, misreported as the kernel's refusal) until the daemon's restart. */
	if ((s->route->flags & R_PRIV) && ops_helper_lost()) {
		mp_fail(&s->early, MPE_PRIV_LOST, 0, "the privileged helper is gone: no change can be made; the "
			"daemon exits once what is in flight is answered, and its service manager starts it again");
		goto unroute;
	}
	if (s->route->flags & R_BODY) {
		const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
		if (!is_json_type(ct)) {
			mp_fail(&s->early, MPE_REQUEST_UNSUPPORTED_MEDIA_TYPE, 0,
				"the body must be application/json in UTF-8 (got %.64s)", ct ? ct : "none");
			goto unroute;
		}
	}
	if (route_params(s->route, url, s->rq.param) < 0) {
		mp_nomem(&s->early);
		goto unroute;
	}
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

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
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
		if (!(s = reqstate_new(conn_of(conn))))
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
	if ((s->route->flags & (R_SLOW | R_READ)) && s->slow == SLOW_NONE) {
		s->slow = SLOW_RUNNING;
		MHD_suspend_connection(conn);
		if (slow_submit(s->route->flags & R_SLOW ? h->slow : h->reads, conn, run_slow, s) == 0)
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
		/* Handed over, not copied (a history page is 330 kB): the response frees it. */
		struct MHD_Response *r = MHD_create_response_from_buffer(s->rq.text_len, s->rq.text,
									 MHD_RESPMEM_MUST_FREE);
		if (!r)
			return MHD_NO;   /* still rq's: http_on_completed frees it */
		s->rq.text = NULL;
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

void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct http *h = cls;
	struct reqstate *s = *con_cls;
	struct conn *c = conn_of(conn);
	(void)toe;

	if (!s)
		return;
	conn_request_done(h->conns, c);
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
	reqstate_release(c, s);
	*con_cls = NULL;
}
