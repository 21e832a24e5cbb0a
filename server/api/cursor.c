/* One paging scheme for every list (history, jobs, schedules): a keyset cursor, opaque to clients,
 * bound to the list and the filters it was given out for.
 *
 * The text is "c" + the hex of the last id returned + "-" + 8 hex digits of an FNV-1a hash of the
 * list's scope (its name and its filters as parsed; never limit), so that a cursor replayed on
 * another list or with other filters is refused (request.cursor_mismatch) instead of paging
 * through something else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api.h"

uint32_t cursor_scope(const char *text)
{
	uint32_t h = 2166136261u;   /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static int decode(const char *s, int64_t *key, uint32_t *scope)
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
	*key = (int64_t)v;
	*scope = (uint32_t)strtoul(dash + 1, NULL, 16);
	return 0;
}

int req_cursor(struct req *rq, uint32_t scope, int64_t *key, mp_err *e)
{
	const char *v = req_query(rq, "cursor");
	uint32_t given;

	*key = 0;
	if (!v)
		return 0;
	if (decode(v, key, &given) < 0)
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "cursor: not a cursor this daemon gave out");
	if (given != scope)
		return mp_fail(e, MPE_REQUEST_CURSOR_MISMATCH, 0, "cursor: it was given out for another list or other "
			       "filters; repeat the same filters (limit may change)");
	return 0;
}

json_t *cursor_json(int64_t next, uint32_t scope)
{
	char buf[32];

	if (next <= 0)
		return json_null();
	snprintf(buf, sizeof buf, "c%llx-%08x", (unsigned long long)next, scope);
	return json_string(buf);
}

int cursor_page(json_t *items, int limit, int64_t *next)
{
	size_t n = json_array_size(items);

	*next = 0;
	/* The store was asked for one row more than the page: its presence says there is more. */
	if (n > (size_t)limit) {
		json_array_remove(items, n - 1);
		*next = json_integer_value(json_object_get(json_array_get(items, n - 2), "id"));
	}
	return 0;
}
