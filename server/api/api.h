/* The HTTP edge: requests, the route table, replies. Handlers translate between JSON and the ops
 * layer; the router has already answered 404/405/413/414/415/403 and parsed the body. */
#ifndef MPD_API_H
#define MPD_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/err.h"
#include "server/app.h"

struct MHD_Connection;

#define API_MAX_BODY   (64 * 1024)   /* larger bodies get 413 */
#define API_MAX_URL    1024          /* longer URLs get 414 */
#define API_MAX_PARAMS 4
#define API_MAX_QUERY  16            /* more query arguments get 400 */

/* Who is calling: from SO_PEERCRED on the Unix socket (known, with a uid), from a bearer token on
 * the TLS listener (token: no uid, admin by the token's scope, name "token:NAME"), else nobody
 * (plain loopback TCP): it may read, never change. Whatever needs a uid (launching, migrating a
 * process) needs known. */
struct caller {
	bool known;                  /* a uid from SO_PEERCRED */
	bool token;                  /* authenticated by a bearer token over TLS */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool admin;                  /* uid 0 or member of the admin group, or a token of scope admin */
	char name[64];               /* user name ("" when the uid has none), or "token:NAME" */
};

struct req {
	const struct app *app;       /* borrowed */
	struct MHD_Connection *conn; /* borrowed */
	const char *method;          /* borrowed from MHD */
	const char *url;             /* borrowed from MHD, path only */
	char *param[API_MAX_PARAMS]; /* owned: the {...} path segments, in order, decoded */
	struct { char *key, *value; } query[API_MAX_QUERY]; /* owned: decoded (api/edge.c) */
	int nquery;
	json_t *body;                /* owned: the parsed JSON object body, or NULL */
	struct caller who;
	/* Set by the handler when it returns 0: */
	int status;
	json_t *out;                 /* owned: response body */
	char *text;                  /* owned: a non-JSON body (GET /metrics) sent instead of out */
	size_t text_len;
	const char *ctype;           /* static: the Content-Type of text */
	char location[256];          /* Location header, "" for none */
	/* A handler that holds its answer (GET /v1/jobs/{id}?wait=S) sets hold_job and hold_s and
	 * returns 0 without a reply; the router then suspends the connection until the job ends or
	 * hold_s pass (api/waits.c) and calls the handler again with held set, which answers. */
	int64_t hold_job;            /* 0: answer now */
	unsigned hold_s;
	bool held;                   /* the call after the hold, or a hold the router could not make */
};

typedef int (*handler_fn)(struct req *rq, mp_err *e);

#define R_ADMIN 0x1   /* a change: the caller must be root or in the admin group, or a token of scope admin */
#define R_BODY  0x2   /* takes a JSON object body (Content-Type application/json) */
#define R_SLOW  0x4   /* scans: runs off the HTTP workers at idle priority (api/slow.c) */
#define R_TAIL  0x8   /* the pattern's last {} matches the rest of the path, '/' included */
#define R_CALLER 0x10 /* runs as the caller (launch, migrate, collapse): needs a uid from SO_PEERCRED, so a
                       * caller without one (TCP, a token) is 403 before the body is read, as R_ADMIN is */
#define R_PRIV  0x20  /* acts through the privileged helper: 503 priv.lost at once once it is lost */
#define R_READ  0x40  /* a large answer that changes nothing (a list page, the placement): runs off the
                       * HTTP workers at a lower priority than writes (api/slow.c) */

struct route {
	const char *method;
	const char *pattern;         /* "/v1/knobs/{}": {} matches one non-empty segment */
	handler_fn fn;
	unsigned flags;
};

extern const struct route api_routes[];
extern const size_t api_nroutes;

/* The router (api/routes.c). route_find: the route for method and the decoded path url, NULL when
 * none; *path_known tells a 405 (some method matches the path) from a 404, and allow (allow_len
 * bytes) lists the methods that do, HEAD beside GET, when none is found ("" when one is).
 * route_params copies r's {} segments of url into params (owned by the caller); -1 when out of
 * memory. */
const struct route *route_find(const char *method, const char *url, char *allow, size_t allow_len, bool *path_known);
int route_params(const struct route *r, const char *url, char **params);

/* Replies: the handler sets status and steals out. */
int req_reply(struct req *rq, int status, json_t *out);
/* A job just submitted: 202 with Location /v1/jobs/ID; or, when job is NULL for a job.conflict
 * with conflict_id > 0, a 409 problem naming the job that holds the resource (job_id, job); any
 * other failure returns -1 with e as it is. Takes job. */
int req_job_reply(struct req *rq, json_t *job, int64_t conflict_id, mp_err *e);
/* A 200 with a body that is not JSON: steals text (malloc'd, len bytes); ctype is static. */
int req_reply_text(struct req *rq, char *text, size_t len, const char *ctype);

/* Time in answers (api/instants.c): beside every instant "<stem>_ns" (ns since the epoch) at any
 * depth of v, "<stem>_at" as RFC 3339 UTC text with nine fraction digits (null beside null).
 * Called on every JSON answer before it is sent; -1 only when out of memory.
 * api_instant_text writes one instant's text into buf (len >= 36). */
int api_add_instants(json_t *v);
int api_instant_text(int64_t ns, char *buf, size_t len);

/* Query arguments (decoded and checked by api/edge.c: no repeats). req_query returns NULL when
 * absent, "" for "?flag" without a value. req_query_only fails (400
 * MPE_REQUEST_UNKNOWN_QUERY) if the request has an argument not in the NULL-terminated list. */
const char *req_query(struct req *rq, const char *key);
int req_query_only(struct req *rq, const char *const *allowed, mp_err *e);
/* Typed query arguments; absent leaves *out untouched and returns 0; malformed is a 400. */
int req_query_bool(struct req *rq, const char *key, bool *out, mp_err *e);
int req_query_u64(struct req *rq, const char *key, uint64_t min, uint64_t max, uint64_t *out, mp_err *e);
/* The id in a path (/v1/jobs/{id}, /v1/schedules/{id}, /v1/history/{id}): 1 to INT64_MAX in its
 * one spelling (parse_u64_canonical: "01", "+1", " 1" name nothing). Anything else fails with
 * not_found, "no <what> '<text>'", as an id that does not exist would. */
int req_path_id(const struct req *rq, enum mp_code not_found, const char *what, int64_t *id, mp_err *e);

/* Paging (api/cursor.c): one keyset cursor for every list, bound to the list's scope (its name and
 * filters, as text hashed by cursor_scope). req_cursor reads ?cursor (absent: *key 0; malformed:
 * request.bad_query; given out for another scope: request.cursor_mismatch). A handler asks the
 * store for limit + 1 rows; cursor_page drops the extra one and sets *next to the last id shown
 * (0: no more), which cursor_json turns into "next_cursor" (a string, or null). */
uint32_t cursor_scope(const char *text);
int req_cursor(struct req *rq, uint32_t scope, int64_t *key, mp_err *e);
int cursor_page(json_t *items, int limit, int64_t *next);
json_t *cursor_json(int64_t next, uint32_t scope);

/* Problems (api/problem.c): the HTTP status of an error (its http_status when a handler set one,
 * else its code's kind), the reason phrase of a status, and the problem+json body. */
int api_kind_status(enum mp_kind kind, int sys_errno);
int api_status(const mp_err *e);
const char *api_status_title(int status);
json_t *problem_json(const mp_err *e, const char *instance);
/* The registry as lines "code<TAB>status<TAB>kind<TAB>meaning" (mempolicyd --list-errors). */
int api_list_errors(FILE *f);

/* Listeners, with the connection limits of api/conn.h (copied), in two steps so that the daemon
 * is complete before its first request: http_listen binds the sockets (the Unix socket is then
 * ours: a second daemon is refused, and clients that connect wait in the backlog); http_serve
 * starts answering, with app complete and read-only from then on (server/app.h). unix_fd: a
 * listening socket at unix_path that systemd passed (socket activation), or -1 to bind unix_path
 * here. An inherited socket is systemd's: never unlinked nor shut down at stop, so that the next
 * start finds it with its backlog. */
struct http;
struct conn_limits;
struct tls_files;
/* tls: NULL for a plain TCP listener (loopback addresses only, read-only); else the TCP listener
 * speaks TLS on any address and every request on it needs a bearer token (api/auth.h). Its
 * contents are moved into the listener (t is left empty), also on failure. */
struct http *http_listen(const char *unix_path, int unix_fd, const char *tcp_addr, struct tls_files *tls,
			 const struct conn_limits *lim, mp_err *e);
/* The Unix listening socket (borrowed), for priv_start: the helper keeps a copy to know which
 * file it is bound to (server/priv/identity.h); this process alone accepts on it. */
int http_unix_listener(const struct http *h);
int http_serve(struct http *h, const struct app *app, mp_err *e);
/* Stops accepting, lets in-flight requests finish (up to a few seconds), then stops. NULL is fine;
 * so is a listener never served. */
void http_stop(struct http *h);

/* Handlers, one file per resource. */
int api_health_get(struct req *rq, mp_err *e);
int api_metrics_get(struct req *rq, mp_err *e);
int api_topology_get(struct req *rq, mp_err *e);
int api_knobs_list(struct req *rq, mp_err *e);
int api_knob_get(struct req *rq, mp_err *e);
int api_knob_put(struct req *rq, mp_err *e);
int api_knobs_patch(struct req *rq, mp_err *e);
int api_history_list(struct req *rq, mp_err *e);
int api_history_get(struct req *rq, mp_err *e);
/* RFC 3339 UTC or integer ns since the epoch -> ns (api/history.c); 0 or -1. */
int api_parse_time_ns(const char *s, int64_t *out);
int api_hugepages_list(struct req *rq, mp_err *e);
int api_hugepages_get(struct req *rq, mp_err *e);
int api_hugepages_put(struct req *rq, mp_err *e);
int api_hugepages_avail(struct req *rq, mp_err *e);
int api_jobs_list(struct req *rq, mp_err *e);
int api_job_get(struct req *rq, mp_err *e);
int api_job_cancel(struct req *rq, mp_err *e);
int api_history_stats(struct req *rq, mp_err *e);
int api_history_compare(struct req *rq, mp_err *e);
int api_schedules_list(struct req *rq, mp_err *e);
int api_schedules_create(struct req *rq, mp_err *e);
int api_schedule_get(struct req *rq, mp_err *e);
int api_schedule_delete(struct req *rq, mp_err *e);
int api_processes_launch(struct req *rq, mp_err *e);
int api_processes_self(struct req *rq, mp_err *e);
int api_process_get(struct req *rq, mp_err *e);
int api_process_samples(struct req *rq, mp_err *e);
int api_cgroup_root_get(struct req *rq, mp_err *e);
int api_cgroup_get(struct req *rq, mp_err *e);
int api_cgroup_put(struct req *rq, mp_err *e);
int api_cgroup_root_put(struct req *rq, mp_err *e);
int api_process_migrate(struct req *rq, mp_err *e);
int api_process_collapse(struct req *rq, mp_err *e);
int api_experiments_list(struct req *rq, mp_err *e);
int api_experiments_start(struct req *rq, mp_err *e);
int api_experiment_get(struct req *rq, mp_err *e);
int api_experiment_samples(struct req *rq, mp_err *e);
int api_experiment_cancel(struct req *rq, mp_err *e);
int api_advice_get(struct req *rq, mp_err *e);
/* The caller's supplementary groups as its socket saw them at connect (SO_PEERGROUPS), at most
 * max into g; 0 when unreadable (api/process_actions.c). */
size_t api_peer_groups(int fd, gid_t *g, size_t max);
int api_probes_list(struct req *rq, mp_err *e);
int api_probe_start(struct req *rq, mp_err *e);
int api_tokens_list(struct req *rq, mp_err *e);
int api_tokens_create(struct req *rq, mp_err *e);
int api_profile_active_get(struct req *rq, mp_err *e);
int api_profile_activate(struct req *rq, mp_err *e);
int api_token_revoke(struct req *rq, mp_err *e);
int api_profiles_list(struct req *rq, mp_err *e);
int api_profile_get(struct req *rq, mp_err *e);
int api_profile_diff(struct req *rq, mp_err *e);
int api_profile_drift(struct req *rq, mp_err *e);

#endif
