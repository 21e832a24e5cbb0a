/* /v1/history: the operations, newest first, with filters and keyset cursors; one in full. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/api/api.h"
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

/* The cursor is opaque to clients: "c" + the hex of the last id returned + "-" + 8 hex digits of
 * a hash of the filters it was given out for (kind, status, since, until as parsed; not limit), so
 * that a cursor replayed with other filters is refused instead of paging through something else. */
static uint32_t filter_hash(const struct history_filter *f)
{
	char text[256];
	uint32_t h = 2166136261u;   /* FNV-1a */

	snprintf(text, sizeof text, "%s\n%s\n%d:%lld\n%d:%lld", f->kind ? f->kind : "", f->status ? f->status : "",
		 f->has_since, (long long)f->since_ns, f->has_until, (long long)f->until_ns);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static void cursor_encode(int64_t before, uint32_t filters, char *buf, size_t len)
{
	snprintf(buf, len, "c%llx-%08x", (unsigned long long)before, filters);
}

static int cursor_decode(const char *s, int64_t *before, uint32_t *filters)
{
	const char *dash = strchr(s, '-');
	char *end;
	unsigned long long v;

	if (s[0] != 'c' || !dash || dash == s + 1 || dash - s > 17 || strlen(dash + 1) != 8)
		return -1;
	for (const char *p = s + 1; *p; p++)
		if (p != dash && !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return -1;
	errno = 0;
	v = strtoull(s + 1, &end, 16);
	if (errno || end != dash || v == 0 || v > INT64_MAX)
		return -1;
	*before = (int64_t)v;
	*filters = (uint32_t)strtoul(dash + 1, NULL, 16);
	return 0;
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

int api_history_list(struct req *rq, mp_err *e)
{
	struct history_filter f = { 0 };
	uint64_t limit = 50;
	const char *v;
	json_t *ops;
	int64_t next;
	char cur[32];

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
	if ((v = req_query(rq, "cursor"))) {
		uint32_t given;
		if (cursor_decode(v, &f.before_id, &given) < 0)
			return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "cursor: not a cursor this daemon gave out");
		if (given != filter_hash(&f))
			return mp_fail(e, MPE_REQUEST_CURSOR_MISMATCH, 0, "cursor: it was given out for other "
				       "filters; repeat the same kind, status, since and until (limit may change)");
	}
	if (history_list(rq->app->store, &f, &ops, &next, e) < 0)
		return -1;
	cursor_encode(next, filter_hash(&f), cur, sizeof cur);
	return req_reply(rq, 200, json_pack("{s:o, s:o}", "operations", ops, "next_cursor",
					    next ? json_string(cur) : json_null()));
}

int api_history_get(struct req *rq, mp_err *e)
{
	int64_t id;
	json_t *op;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (parse_i64(rq->param[0], &id) < 0 || id <= 0)
		return mp_fail(e, MPE_HISTORY_NOT_FOUND, 0, "no operation '%.32s'", rq->param[0]);
	if (!(op = history_get(rq->app->store, id, e)))
		return -1;
	return req_reply(rq, 200, op);
}
