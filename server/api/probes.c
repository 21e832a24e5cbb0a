/* /v1/probes: the probe kinds, and starting one (a job: 202 + Location). */
#include <stdio.h>

#include "server/api/api.h"
#include "server/ops/probes.h"

static const char *const no_query[] = { NULL };

int api_probes_list(struct req *rq, mp_err *e)
{
	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	return req_reply(rq, 200, json_pack("{s:o}", "probes", probes_list()));
}

int api_probe_start(struct req *rq, mp_err *e)
{
	struct job_actor who = { .has_uid = rq->who.known, .uid = rq->who.uid, .name = rq->who.name };
	struct job_origin origin = { .source = "api", .actor = &who };
	int64_t conflict_id = 0;
	json_t *job;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	/* A 409 names the running probe, as a resize's names the running resize. */
	job = probe_start(rq->app, rq->param[0], rq->body, &origin, &conflict_id, e);
	return req_job_reply(rq, job, conflict_id, e);
}
