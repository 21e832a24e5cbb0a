/* /v1/history: the operations, newest first, with filters and keyset cursors; one in full. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/api/api.h"
#include "server/api/jsonw.h"
#include "server/ops/compare.h"
#include "server/store/history.h"

/* "2026-11-29T10:00:00Z", "2026-11-29T10:00:00.5Z", "...+00:00", or integer ns since the epoch.
 * Only UTC: a local offset would need a time zone rule we do not want to guess. */
int api_parse_time_ns(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	const char *p;
	int64_t frac = 0, scale = 100000000;
	time_t t;

	if (parse_i64(s, out) == 0)
		return *out >= 0 ? 0 : -1;
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p || strlen(s) < 20 || s[4] != '-' || s[10] != 'T')
		return -1;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -1;
		for (p++; *p >= '0' && *p <= '9'; p++) {
			frac += (*p - '0') * scale;
			scale /= 10;
			if (!scale && p[1] >= '0' && p[1] <= '9')
				return -1;   /* finer than ns */
		}
	}
	if (strcmp(p, "Z") && strcmp(p, "z") && strcmp(p, "+00:00"))
		return -1;
	struct tm want = tm;
	t = timegm(&tm);
	/* timegm normalises 2026-02-30 into March 2: a date that does not exist is refused instead. */
	if (tm.tm_year != want.tm_year || tm.tm_mon != want.tm_mon || tm.tm_mday != want.tm_mday ||
	    tm.tm_hour != want.tm_hour || tm.tm_min != want.tm_min || tm.tm_sec != want.tm_sec)
		return -1;
	/* int64 ns since the epoch end in April 2262; later dates are out of range, not wrapped. */
	if (t == (time_t)-1 || t < 0 || t > INT64_MAX / 1000000000 - 1)
		return -1;
	*out = (int64_t)t * 1000000000 + frac;
	return 0;
}

/* The history's cursor scope (api/cursor.c): kind, status, since, until as parsed; not limit. */
static uint32_t filter_hash(const struct history_filter *f)
{
	char text[256];

	snprintf(text, sizeof text, "%s\n%s\n%d:%lld\n%d:%lld", f->kind ? f->kind : "", f->status ? f->status : "",
		 f->has_since, (long long)f->since_ns, f->has_until, (long long)f->until_ns);
	return cursor_scope(text);
}

static const char *const list_query[] = { "kind", "status", "since", "until", "limit", "cursor", NULL };
static const char *const no_query[] = { NULL };

static int short_text(struct req *rq, const char *key, const char **out, mp_err *e)
{
	const char *v = req_query(rq, key);

	if (v && (!*v || strlen(v) > 64))
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "query parameter '%s' must be 1 to 64 characters", key);
	*out = v;
	return 0;
}

/* One operation of the page: the members and their order what the jansson answer had (the
 * "_at" members last, where api_add_instants appended them). */
static int page_row(const struct op_row *r, void *arg)
{
	struct jw *w = arg;

	if (w->buf[w->len - 1] != '[')
		jw_lit(w, ",");
	jw_lit(w, "{\"id\":");
	jw_int(w, r->id);
	jw_lit(w, ",\"kind\":");
	jw_str(w, r->kind);
	jw_lit(w, ",\"source\":");
	jw_str(w, r->source);
	jw_lit(w, ",\"actor\":");
	if (!r->has_uid && !r->actor_name) {
		jw_lit(w, "null");
	} else {
		jw_lit(w, "{\"uid\":");
		jw_int_or_null(w, r->has_uid, r->uid);
		jw_lit(w, ",\"name\":");
		jw_str(w, r->actor_name);
		jw_lit(w, "}");
	}
	jw_lit(w, ",\"started_ns\":");
	jw_int_or_null(w, r->has_started, r->started_ns);
	jw_lit(w, ",\"finished_ns\":");
	jw_int_or_null(w, r->has_finished, r->finished_ns);
	jw_lit(w, ",\"status\":");
	jw_str(w, r->status);
	jw_lit(w, ",\"errno\":");
	jw_int_or_null(w, r->has_errno, r->err_no);
	jw_lit(w, ",\"error\":");
	jw_str(w, r->error);
	jw_lit(w, ",\"summary\":");
	jw_str(w, r->summary);
	jw_lit(w, ",\"started_at\":");
	jw_instant_at(w, r->has_started, r->started_ns);
	jw_lit(w, ",\"finished_at\":");
	jw_instant_at(w, r->has_finished, r->finished_ns);
	jw_lit(w, "}");
	return w->failed ? -1 : 0;
}

int api_history_list(struct req *rq, mp_err *e)
{
	struct history_filter f = { 0 };
	struct jw w = { 0 };         /* owns the page's text until it is the answer's */
	uint64_t limit = 50;
	const char *v;
	int64_t next;

	if (req_query_only(rq, list_query, e) < 0 || short_text(rq, "kind", &f.kind, e) < 0 ||
	    short_text(rq, "status", &f.status, e) < 0 || req_query_u64(rq, "limit", 1, 1000, &limit, e) < 0)
		return -1;
	f.limit = (int)limit;
	if ((v = req_query(rq, "since"))) {
		if (api_parse_time_ns(v, &f.since_ns) < 0)
			return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "since: expected RFC 3339 UTC "
				       "(2026-11-29T10:00:00Z) or integer nanoseconds since the epoch");
		f.has_since = true;
	}
	if ((v = req_query(rq, "until"))) {
		if (api_parse_time_ns(v, &f.until_ns) < 0)
			return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "until: expected RFC 3339 UTC "
				       "(2026-11-29T10:00:00Z) or integer nanoseconds since the epoch");
		f.has_until = true;
	}
	if (req_cursor(rq, filter_hash(&f), &f.before_id, e) < 0)
		return -1;
	/* Written as text while the rows are read, not built as a jansson tree and dumped: on a page
	 * of 1000 the tree's allocations, the instants' walk and the dump were most of its time
	 * (bench/README.md, history.page1000). */
	jw_lit(&w, "{\"operations\":[");
	if (history_list_each(rq->app->store, &f, page_row, &w, &next, e) < 0) {
		jw_free(&w);
		return -1;
	}
	return jw_reply_page(rq, &w, cursor_json(next, filter_hash(&f)), e);
}

int api_history_get(struct req *rq, mp_err *e)
{
	int64_t id;
	json_t *op;

	if (req_query_only(rq, no_query, e) < 0 || req_path_id(rq, MPE_HISTORY_NOT_FOUND, "operation", &id, e) < 0)
		return -1;
	if (!(op = history_get(rq->app->store, id, e)))
		return -1;
	return req_reply(rq, 200, op);
}

/* GET /v1/history/compare?ids=A,B[,C...] (or A:B:C,D:E:F, several runs a column): compare_parse_ids. */
int api_history_compare(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "ids", NULL };
	struct compare_cols cc;
	const char *v;
	json_t *out;

	if (req_query_only(rq, allowed, e) < 0)
		return -1;
	if (!(v = req_query(rq, "ids")))
		return mp_fail(e, MPE_REQUEST_MISSING_QUERY, 0, "ids (two or more operation ids, comma-separated) is required");
	if (compare_parse_ids(v, &cc, e) < 0 || !(out = history_compare(rq->app, &cc, e)))
		return -1;
	return req_reply(rq, 200, out);
}
