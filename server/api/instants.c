/* One rule for time in every answer (docs/DESIGN.md, "Time in answers"): an instant is
 * "<stem>_ns", integer nanoseconds since the Unix epoch (exact, for arithmetic and for filters),
 * and beside it "<stem>_at", the same instant as RFC 3339 UTC text with nine fraction digits.
 * The text is there because an instant in ns is past 2^53, where JavaScript (and any client that
 * reads JSON numbers as doubles) silently rounds it. Durations ("elapsed_ns", "latency_ns") stay
 * "_ns" alone: they never come near 2^53 (104 days).
 *
 * Added once, on the way out, to every JSON answer at every depth, so no handler can forget it
 * and a stored result (a job's, an operation's) follows the same rule as a live one. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/api/api.h"

/* The members that are instants; every other "*_ns" is a duration. */
static const char *const instants[] = {
	"created_ns", "started_ns", "finished_ns", "time_ns", "since_ns", "until_ns",
	"next_run_ns", "last_run_ns", "last_due_ns", "due_ns", "first_due_ns",
	"expires_ns", "last_used_ns", "revoked_ns",   /* a token's (null when it has none) */
	"applied_ns", "rejected_ns",                  /* the profile state's (GET /v1/profile) */
};

static bool is_instant(const char *key)
{
	size_t n = strlen(key);

	/* Most members are not "*_ns" at all: a list answer walks thousands of them. */
	if (n < 4 || memcmp(key + n - 3, "_ns", 3))
		return false;
	for (size_t i = 0; i < sizeof instants / sizeof instants[0]; i++)
		if (!strcmp(key, instants[i]))
			return true;
	return false;
}

int api_instant_text(int64_t ns, char *buf, size_t len)
{
	int64_t s = ns / 1000000000, frac = ns % 1000000000;
	struct tm tm;
	time_t t;
	size_t n;

	if (frac < 0) {   /* before 1970: the fraction counts forward from the second below */
		frac += 1000000000;
		s--;
	}
	t = (time_t)s;
	if (!gmtime_r(&t, &tm) || !(n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)))
		return -1;
	return snprintf(buf + n, len - n, ".%09lldZ", (long long)frac) < (int)(len - n) ? 0 : -1;
}

/* The "_at" member for one instant member: text, or null beside a null. */
static json_t *at_value(const json_t *v)
{
	char buf[48];

	if (json_is_integer(v) && api_instant_text((int64_t)json_integer_value(v), buf, sizeof buf) == 0)
		return json_string(buf);
	return json_null();
}

int api_add_instants(json_t *v)
{
	const char *key;
	json_t *m;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, m)
			if (api_add_instants(m) < 0)
				return -1;
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	/* Members cannot be added while the object is iterated: first recurse and count, then add. */
	size_t n = 0;
	json_object_foreach(v, key, m) {
		if (api_add_instants(m) < 0)
			return -1;
		n += is_instant(key);
	}
	if (!n)
		return 0;
	const char *keys[sizeof instants / sizeof instants[0]];   /* borrowed from v */
	n = 0;
	json_object_foreach(v, key, m)
		if (is_instant(key) && n < sizeof keys / sizeof keys[0])
			keys[n++] = key;
	for (i = 0; i < n; i++) {
		char at[32];
		size_t stem = strlen(keys[i]) - 3;   /* without "_ns" */
		snprintf(at, sizeof at, "%.*s_at", (int)stem, keys[i]);
		json_t *text = at_value(json_object_get(v, keys[i]));
		if (!text || json_object_set_new(v, at, text) < 0)
			return -1;
	}
	return 0;
}
