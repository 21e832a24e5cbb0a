/* /v1/jobs: long operations, their progress and outcome (GET ?wait= holds the answer until the
 * job ends); DELETE cancels between batches. */
#include <stdio.h>
#include <string.h>

#include "common/parse.h"
#include "server/api/api.h"
#include "server/jobs/jobs.h"

/* The jobs list's cursor scope (api/cursor.c): its filters as given; not limit. */
static uint32_t jobs_scope(const struct job_filter *f)
{
	char text[192];

	snprintf(text, sizeof text, "jobs\n%s\n%s\n%lld", f->kind ? f->kind : "", f->status ? f->status : "",
		 (long long)f->schedule_id);
	return cursor_scope(text);
}

int api_jobs_list(struct req *rq, mp_err *e)
{
	/* One paging scheme for every list: the cursor. The older before=ID is gone (an unknown
	 * query parameter now), so no client can mix the two. */
	static const char *const allowed[] = { "kind", "status", "schedule_id", "limit", "cursor", NULL };
	struct job_filter f = { .limit = 50 };
	uint64_t v = 0;
	int64_t next;
	json_t *arr;

	if (req_query_only(rq, allowed, e) < 0)
		return -1;
	f.kind = req_query(rq, "kind");
	f.status = req_query(rq, "status");
	if (req_query_u64(rq, "schedule_id", 1, INT64_MAX, &v, e) < 0)
		return -1;
	f.schedule_id = (int64_t)v;
	if (req_cursor(rq, jobs_scope(&f), &f.before_id, e) < 0)
		return -1;
	v = 50;
	if (req_query_u64(rq, "limit", 1, 1000, &v, e) < 0)
		return -1;
	f.limit = (int)v + 1;   /* one more tells whether there is a next page */
	if (!(arr = jobs_list(rq->app->jobs, &f, e)))
		return -1;
	cursor_page(arr, (int)v, &next);
	return req_reply(rq, 200, json_pack("{s:o, s:o}", "jobs", arr, "next_cursor", cursor_json(next, jobs_scope(&f))));
}

/* ?wait=S (1..30 s): while the job is queued or running, the answer is held until it ends or S
 * seconds pass (api/waits.c, cut to under the idle timeout), then it is the same answer as
 * without wait. Called a second time after the hold (rq->held), it answers whatever the job is. */
int api_job_get(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "wait", NULL };
	uint64_t wait = 0;
	int64_t id;
	json_t *job;
	const char *status;

	if (req_query_only(rq, allowed, e) < 0 || req_query_u64(rq, "wait", 1, 30, &wait, e) < 0 ||
	    req_path_id(rq, MPE_JOB_NOT_FOUND, "job", &id, e) < 0 || !(job = jobs_get(rq->app->jobs, id, e)))
		return -1;
	status = json_string_value(json_object_get(job, "status"));
	if (wait && !rq->held && status && (!strcmp(status, "queued") || !strcmp(status, "running"))) {
		json_decref(job);
		rq->hold_job = id;
		rq->hold_s = (unsigned)wait;
		return 0;
	}
	return req_reply(rq, 200, job);
}

int api_job_cancel(struct req *rq, mp_err *e)
{
	static const char *const none[] = { NULL };
	int64_t id;
	json_t *job;

	if (req_query_only(rq, none, e) < 0 || req_path_id(rq, MPE_JOB_NOT_FOUND, "job", &id, e) < 0 ||
	    !(job = jobs_cancel(rq->app->jobs, id, e)))
		return -1;
	/* 202: a running job stops at its next batch boundary, not now. */
	return req_reply(rq, 202, job);
}
