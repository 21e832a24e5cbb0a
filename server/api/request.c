/* The helpers a handler calls: its reply, the problem body, and strict query arguments. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/api/api.h"

int req_reply(struct req *rq, int status, json_t *out)
{
	json_decref(rq->out);
	rq->status = status;
	rq->out = out;
	return out ? 0 : -1;
}

int req_reply_text(struct req *rq, char *text, size_t len, const char *ctype)
{
	free(rq->text);
	rq->status = 200;
	rq->text = text;
	rq->text_len = len;
	rq->ctype = ctype;
	return 0;
}

/* ---- query arguments ------------------------------------------------------------------------ */

const char *req_query(struct req *rq, const char *key)
{
	for (int i = 0; i < rq->nquery; i++)
		if (!strcmp(rq->query[i].key, key))
			return rq->query[i].value;
	return NULL;
}

int req_query_only(struct req *rq, const char *const *allowed, mp_err *e)
{
	for (int i = 0; i < rq->nquery; i++) {
		const char *const *a = allowed;
		while (*a && strcmp(*a, rq->query[i].key))
			a++;
		if (!*a)
			return mp_fail(e, MPE_REQUEST_UNKNOWN_QUERY, 0, "unknown query parameter '%.64s'", rq->query[i].key);
	}
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
	uint64_t x;

	if (!v)
		return 0;
	/* parse_u64, not strtoull: " 1", "+5" and "-0" are refused, not read as numbers. */
	if (parse_u64(v, &x) < 0 || x < min || x > max)
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "query parameter '%s' must be an integer from %llu to %llu",
			       key, (unsigned long long)min, (unsigned long long)max);
	*out = x;
	return 0;
}

int req_path_id(const struct req *rq, enum mp_code not_found, const char *what, int64_t *id, mp_err *e)
{
	uint64_t v;

	if (parse_u64_canonical(rq->param[0], &v) < 0 || v < 1 || v > INT64_MAX)
		return mp_fail(e, not_found, 0, "no %s '%.32s' (an id is a decimal from 1, without leading zeros)",
			       what, rq->param[0]);
	*id = (int64_t)v;
	return 0;
}

int req_job_reply(struct req *rq, json_t *job, int64_t conflict_id, mp_err *e)
{
	json_t *p;

	if (!job) {
		if (e->code != MPE_JOB_CONFLICT || conflict_id <= 0)
			return -1;
		p = problem_json(e, rq->url);
		json_object_set_new(p, "job_id", json_integer(conflict_id));
		json_object_set_new(p, "job", json_sprintf("/v1/jobs/%lld", (long long)conflict_id));
		return req_reply(rq, 409, p);
	}
	snprintf(rq->location, sizeof rq->location, "/v1/jobs/%lld",
		 (long long)json_integer_value(json_object_get(job, "id")));
	return req_reply(rq, 202, job);
}
