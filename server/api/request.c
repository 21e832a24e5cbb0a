/* The helpers a handler calls: its reply, the problem body, and strict query arguments. */
#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api.h"

int req_reply(struct req *rq, int status, json_t *out)
{
	json_decref(rq->out);
	rq->status = status;
	rq->out = out;
	return out ? 0 : -1;
}

/* ---- query arguments ------------------------------------------------------------------------ */

const char *req_query(struct req *rq, const char *key)
{
	const char *v = NULL;
	size_t n = 0;

	/* "?dry_run" without '=' is present with no value; libmicrohttpd's plain lookup reports it
	 * as absent, which would turn a requested dry run into a real change. Present is "". */
	if (MHD_lookup_connection_value_n(rq->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), &v, &n) != MHD_YES)
		return NULL;
	return v ? v : "";
}

struct query_check {
	const char *const *allowed;
	const char *bad;
};

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct query_check *qc = cls;
	(void)kind;
	(void)value;
	for (const char *const *a = qc->allowed; *a; a++)
		if (!strcmp(*a, key))
			return MHD_YES;
	qc->bad = key;
	return MHD_NO;
}

int req_query_only(struct req *rq, const char *const *allowed, mp_err *e)
{
	struct query_check qc = { allowed, NULL };

	MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, check_arg, &qc);
	if (qc.bad)
		return mp_fail(e, MPE_REQUEST_UNKNOWN_QUERY, 0, "unknown query parameter '%.64s'", qc.bad);
	return 0;
}

int req_query_bool(struct req *rq, const char *key, bool *out, mp_err *e)
{
	const char *v = req_query(rq, key);

	if (!v)
		return 0;
	if (!strcmp(v, "true") || !strcmp(v, "1") || !*v)
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "query parameter '%s' must be true or false", key);
	return 0;
}

int req_query_u64(struct req *rq, const char *key, uint64_t min, uint64_t max, uint64_t *out, mp_err *e)
{
	const char *v = req_query(rq, key);
	char *end;
	unsigned long long x;

	if (!v)
		return 0;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (!*v || *end || errno || v[0] == '-' || v[0] == '+' || x < min || x > max)
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "query parameter '%s' must be an integer from %llu to %llu",
			       key, (unsigned long long)min, (unsigned long long)max);
	*out = x;
	return 0;
}
