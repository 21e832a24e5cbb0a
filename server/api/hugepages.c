/* /v1/hugepages: pools per size and node, resizes (as jobs), availability. */
#include <stdio.h>

#include "server/api/api.h"
#include "server/ops/pools.h"
#include "server/ops/resize.h"

static const char *const no_query[] = { NULL };

int api_hugepages_list(struct req *rq, mp_err *e)
{
	json_t *arr;

	if (req_query_only(rq, no_query, e) < 0 || !(arr = pools_list(rq->app, e)))
		return -1;
	return req_reply(rq, 200, json_pack("{s:o}", "pools", arr));
}

int api_hugepages_get(struct req *rq, mp_err *e)
{
	uint64_t kb;
	json_t *p;

	if (req_query_only(rq, no_query, e) < 0 || pools_size(rq->app, rq->param[0], &kb, e) < 0 ||
	    !(p = pools_get(rq->app, kb, e)))
		return -1;
	return req_reply(rq, 200, p);
}

/* A 409 names the running job in the problem body ("job_id") as well as in the detail. */
static int conflict(struct req *rq, const mp_err *e, int64_t id)
{
	json_t *p = problem_json(e, rq->url);

	json_object_set_new(p, "job_id", json_integer(id));
	json_object_set_new(p, "job", json_sprintf("/v1/jobs/%lld", (long long)id));
	return req_reply(rq, 409, p);
}

int api_hugepages_put(struct req *rq, mp_err *e)
{
	struct job_actor who = { .has_uid = rq->who.known, .uid = rq->who.uid, .name = rq->who.name };
	struct job_origin origin = { .source = "api", .actor = &who };
	struct resize_req r;
	struct resize_args *plan;
	int64_t conflict_id = 0;
	json_t *job;

	if (req_query_only(rq, no_query, e) < 0 || resize_parse(rq->app, rq->body, rq->param[0], RESIZE_PUT, &r, e) < 0 ||
	    !(plan = resize_plan(rq->app, &r, e)))
		return -1;
	if (r.dry_run) {
		job = resize_plan_json(plan);
		resize_plan_free(plan);
		return req_reply(rq, 200, job);
	}
	/* Idempotent: a pool already at its target gets no job and no record (a retried PUT). */
	if (resize_unchanged(rq->app, plan)) {
		job = resize_plan_json(plan);
		resize_plan_free(plan);
		json_object_set_new(job, "dry_run", json_false());
		json_object_set_new(job, "status", json_string("unchanged"));
		json_object_set_new(job, "changed", json_false());
		return req_reply(rq, 200, job);
	}
	if (!(job = resize_start(rq->app, plan, &origin, &conflict_id, e)))
		return e->code == MPE_JOB_CONFLICT && conflict_id > 0 ? conflict(rq, e, conflict_id) : -1;
	snprintf(rq->location, sizeof rq->location, "/v1/jobs/%lld",
		 (long long)json_integer_value(json_object_get(job, "id")));
	return req_reply(rq, 202, job);
}

int api_hugepages_avail(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "node", "count", NULL };
	uint64_t kb, node = UINT64_MAX, count = 0;
	json_t *out;

	if (req_query_only(rq, allowed, e) < 0 || pools_size(rq->app, rq->param[0], &kb, e) < 0 ||
	    req_query_u64(rq, "node", 0, 4095, &node, e) < 0 ||
	    req_query_u64(rq, "count", 1, UINT32_MAX, &count, e) < 0)
		return -1;
	if (!req_query(rq, "count"))
		return mp_fail(e, MPE_REQUEST_MISSING_QUERY, 0, "count (pages wanted) is required");
	if (!(out = pools_availability(rq->app, kb, node == UINT64_MAX ? -1 : (int)node, count, e)))
		return -1;
	return req_reply(rq, 200, out);
}
