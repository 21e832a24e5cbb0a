/* /v1/schedules: cron schedules whose action is a pool target (see server/ops/schedules.h). */
#include <stdio.h>
#include <string.h>

#include "common/parse.h"
#include "server/api/api.h"
#include "server/ops/schedules.h"
#include "server/store/schedules.h"

int api_schedules_list(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "limit", "cursor", NULL };
	uint32_t scope = cursor_scope("schedules");   /* no filters: the list is the scope */
	uint64_t limit = 100;
	int64_t after, next;
	json_t *arr;

	if (req_query_only(rq, allowed, e) < 0 || req_query_u64(rq, "limit", 1, 1000, &limit, e) < 0 ||
	    req_cursor(rq, scope, &after, e) < 0 ||
	    !(arr = sched_store_list(rq->app->store, after, (int)limit + 1, e)))
		return -1;
	cursor_page(arr, (int)limit, &next);
	return req_reply(rq, 200, json_pack("{s:o, s:o}", "schedules", arr, "next_cursor", cursor_json(next, scope)));
}

int api_schedules_create(struct req *rq, mp_err *e)
{
	static const char *const none[] = { NULL };
	struct job_actor actor = { .has_uid = rq->who.known, .uid = rq->who.uid, .name = rq->who.name };
	json_t *s;
	int64_t id;

	if (req_query_only(rq, none, e) < 0)
		return -1;
	if (!(s = schedule_create(rq->app, rq->body, &actor, &id, e))) {
		/* The resource is the schedule, which does not exist yet: whatever its action names that
		 * is not there (a page size) is bad content, not a missing resource. */
		if (mp_code_kind(e->code) == MPK_NOT_FOUND)
			e->http_status = 422;
		return -1;
	}
	snprintf(rq->location, sizeof rq->location, "/v1/schedules/%lld", (long long)id);
	return req_reply(rq, 201, s);
}

int api_schedule_get(struct req *rq, mp_err *e)
{
	static const char *const none[] = { NULL };
	json_t *s;
	int64_t id;

	if (req_query_only(rq, none, e) < 0 || req_path_id(rq, MPE_SCHEDULE_NOT_FOUND, "schedule", &id, e) < 0 ||
	    !(s = sched_store_get(rq->app->store, id, e)))
		return -1;
	return req_reply(rq, 200, s);
}

/* 200 with the schedule as it was, so the caller sees what it removed. */
int api_schedule_delete(struct req *rq, mp_err *e)
{
	static const char *const none[] = { NULL };
	json_t *s;
	int64_t id;

	if (req_query_only(rq, none, e) < 0 || req_path_id(rq, MPE_SCHEDULE_NOT_FOUND, "schedule", &id, e) < 0 ||
	    !(s = schedule_delete(rq->app, id, e)))
		return -1;
	return req_reply(rq, 200, s);
}
