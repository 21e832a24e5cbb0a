/* /v1/profiles: the profiles directory's files as the daemon reads them (docs/reference/profiles.md),
 * read-only, so any local caller may ask, like /v1/knobs; /v1/profile: the profile in force (GET)
 * and activating one (POST, admin). The use cases are ops/profiles.c and ops/profile_apply.c. */
#include <string.h>

#include "common/jsonfields.h"
#include "server/api/api.h"
#include "server/ops/profile_apply.h"
#include "server/ops/profile_view.h"
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

/* GET /v1/profile: the profile in force, every key read now (ops/profile_view.c). */
int api_profile_active_get(struct req *rq, mp_err *e)
{
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (!(out = profile_view_json(rq->app)))
		return mp_nomem(e);
	return req_reply(rq, 200, out);
}

/* POST /v1/profile {"name", "dry_run"?, "deadline_ms"?}: the dry run answers the diff (200); a real
 * activation answers 202 with the profile.apply job, as every job route does. */
int api_profile_activate(struct req *rq, mp_err *e)
{
	static const char *const fields[] = { "name", "dry_run", "deadline_ms", NULL };
	struct job_actor who = { .has_uid = rq->who.known, .uid = rq->who.uid, .name = rq->who.name };
	struct job_origin origin = { .source = "api", .actor = &who };
	struct prof_err pe = { 0 };
	const json_t *name = json_object_get(rq->body, "name"), *dry = json_object_get(rq->body, "dry_run"),
		     *dl = json_object_get(rq->body, "deadline_ms");
	int64_t conflict_id = 0;
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0 || json_only_fields(rq->body, "", fields, e) < 0)
		return -1;
	if (!name)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "name is required: the profile to activate (NAME.conf)");
	if (!json_is_string(name))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "name takes a string, a profile's name");
	if (strlen(json_string_value(name)) != json_string_length(name) || !prof_name_ok(json_string_value(name)))
		return mp_fail(e, MPE_PROFILE_NOT_FOUND, 0,
			       "not a profile name: [A-Za-z0-9_-] then [A-Za-z0-9._-], under %d bytes", PROF_NAME_MAX);
	if (dry && !json_is_boolean(dry))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "dry_run takes true or false");
	if (dl && (!json_is_integer(dl) || json_integer_value(dl) < 1 || json_integer_value(dl) > PROFILE_DEADLINE_MAX_MS))
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "deadline_ms takes an integer from 1 to %lld (how long the pools "
			       "may take)", (long long)PROFILE_DEADLINE_MAX_MS);
	if (profile_activate(rq->app, json_string_value(name), &origin, json_is_true(dry),
			     dl ? json_integer_value(dl) : 0, &out, &conflict_id, &pe) < 0) {
		if (pe.e.code == MPE_JOB_CONFLICT && conflict_id > 0) {
			*e = pe.e;
			return req_job_reply(rq, NULL, conflict_id, e);
		}
		return profile_problem(rq, &pe, e);
	}
	if (json_is_true(dry))
		return req_reply(rq, 200, out);
	return req_job_reply(rq, out, 0, e);
}
