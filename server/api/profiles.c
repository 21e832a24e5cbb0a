/* /v1/profiles: the profiles directory's files as the daemon reads them (docs/reference/profiles.md).
 * Read-only, so any local caller may ask, like /v1/knobs. The use cases are ops/profiles.c. */
#include <string.h>

#include "server/api/api.h"
#include "server/ops/profiles.h"

static const char *const no_query[] = { NULL };

/* A profile's error: the problem, plus where (file, line, column) as extension members. */
static int profile_problem(struct req *rq, const struct prof_err *pe, mp_err *e)
{
	json_t *p;

	*e = pe->e;
	if (!pe->loc.file[0])
		return -1;
	p = problem_json(e, rq->url);
	json_object_set_new(p, "file", json_string(pe->loc.file));
	json_object_set_new(p, "line", pe->loc.line ? json_integer(pe->loc.line) : json_null());
	json_object_set_new(p, "column", pe->loc.line ? json_integer(pe->loc.col) : json_null());
	return req_reply(rq, api_status(e), p);
}

int api_profiles_list(struct req *rq, mp_err *e)
{
	struct prof_err pe = { 0 };
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (profiles_list(rq->app, &out, &pe) < 0)
		return profile_problem(rq, &pe, e);
	return req_reply(rq, 200, out);
}

/* GET /v1/profiles/{name} and /v1/profiles/{name}/diff. */
static int one(struct req *rq, mp_err *e, int (*fn)(const struct app *, const char *, json_t **, struct prof_err *))
{
	struct prof_err pe = { 0 };
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (!prof_name_ok(rq->param[0]))
		return mp_fail(e, MPE_PROFILE_NOT_FOUND, 0,
			       "not a profile name: [A-Za-z0-9_-] then [A-Za-z0-9._-], under %d bytes", PROF_NAME_MAX);
	if (fn(rq->app, rq->param[0], &out, &pe) < 0)
		return profile_problem(rq, &pe, e);
	return req_reply(rq, 200, out);
}

int api_profile_get(struct req *rq, mp_err *e)
{
	return one(rq, e, profiles_show);
}

int api_profile_diff(struct req *rq, mp_err *e)
{
	return one(rq, e, profiles_diff);
}
