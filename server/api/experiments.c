/* /v1/experiments (a job each: 202 + Location) and /v1/advice. */
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/api/api.h"
#include "server/jobs/jobs.h"
#include "server/ops/experiments.h"

#define MAX_GROUPS 1024

static const char *const no_query[] = { NULL };

int api_experiments_list(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "limit", NULL };
	uint64_t limit = 50;
	json_t *list;

	if (req_query_only(rq, allowed, e) < 0 || req_query_u64(rq, "limit", 1, 1000, &limit, e) < 0 ||
	    !(list = experiments_list(rq->app, (int)limit, e)))
		return -1;
	return req_reply(rq, 200, json_pack("{s:o}", "experiments", list));
}

int api_experiments_start(struct req *rq, mp_err *e)
{
	gid_t groups[MAX_GROUPS];
	struct job_actor actor = { .has_uid = rq->who.known, .uid = rq->who.uid, .name = rq->who.name };
	struct job_origin origin = { .source = "api", .actor = &actor };
	struct launch_who who = { .known = rq->who.known, .uid = rq->who.uid, .gid = rq->who.gid,
				  .name = rq->who.name, .groups = groups, .conn_fd = -1 };
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	int64_t conflict_id = 0;
	json_t *job;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	/* The job runs the caller's program after this answer: it keeps its own copy of the caller's
	 * connection, which the helper checks the identity against at each start. */
	if (who.known && ci) {
		who.ngroups = api_peer_groups(ci->connect_fd, groups, MAX_GROUPS);
		who.conn_fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 3);
	}
	/* Two statements: conflict_id is read after the start has set it. */
	job = experiment_start(rq->app, rq->body, &who, &origin, &conflict_id, e);
	return req_job_reply(rq, job, conflict_id, e);
}

int api_experiment_get(struct req *rq, mp_err *e)
{
	int64_t id;
	json_t *x;

	if (req_query_only(rq, no_query, e) < 0 || req_path_id(rq, MPE_EXPERIMENT_NOT_FOUND, "experiment", &id, e) < 0 ||
	    !(x = experiment_get(rq->app, id, e)))
		return -1;
	return req_reply(rq, 200, x);
}

int api_experiment_samples(struct req *rq, mp_err *e)
{
	int64_t id;
	json_t *x;

	if (req_query_only(rq, no_query, e) < 0 || req_path_id(rq, MPE_EXPERIMENT_NOT_FOUND, "experiment", &id, e) < 0 ||
	    !(x = experiment_samples(rq->app, id, e)))
		return -1;
	return req_reply(rq, 200, x);
}

int api_experiment_cancel(struct req *rq, mp_err *e)
{
	int64_t id;
	json_t *x, *job;

	if (req_query_only(rq, no_query, e) < 0 || req_path_id(rq, MPE_EXPERIMENT_NOT_FOUND, "experiment", &id, e) < 0 ||
	    !(x = experiment_job_get(rq->app, id, e)))   /* 404 unless it is an experiment */
		return -1;
	json_decref(x);
	if (!(job = jobs_cancel(rq->app->jobs, id, e)))
		return -1;
	/* 202: a running experiment stops at its next check (between runs, or its run is killed). */
	return req_reply(rq, 202, job);
}

int api_advice_get(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "floor_pct", NULL };
	uint64_t floor_pct = 5;
	json_t *x;

	if (req_query_only(rq, allowed, e) < 0 || req_query_u64(rq, "floor_pct", 1, 100, &floor_pct, e) < 0 ||
	    !(x = advice_get(rq->app, (double)floor_pct, e)))
		return -1;
	return req_reply(rq, 200, x);
}
