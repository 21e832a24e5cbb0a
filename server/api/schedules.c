/* /v1/schedules: cron schedules whose action is a pool target (see server/ops/schedules.h). */
#include <stdio.h>
#include <string.h>

#include "common/parse.h"
#include "server/api/api.h"
#include "server/api/jsonw.h"
#include "server/ops/schedules.h"
#include "server/store/schedules.h"

/* One schedule of the page: the members and their order what the jansson answer had (the "_at"
 * members last, where api_add_instants appended them). */
static int page_row(const struct sched_row *r, void *arg)
{
	struct jw *w = arg;

	if (w->buf[w->len - 1] != '[')
		jw_lit(w, ",");
	jw_lit(w, "{\"id\":");
	jw_int(w, r->id);
	jw_lit(w, ",\"cron\":");
	jw_str(w, r->cron);
	jw_lit(w, ",\"timezone\":");
	jw_str(w, r->timezone);
	jw_lit(w, ",\"action\":");
	jw_json_text(w, r->action);
	if (r->enabled)
		jw_lit(w, ",\"enabled\":true");
	else
		jw_lit(w, ",\"enabled\":false");
	jw_lit(w, ",\"misfire_grace_s\":");
	jw_int(w, r->misfire_grace_s);
	jw_lit(w, ",\"created_ns\":");
	jw_int(w, r->created_ns);
	jw_lit(w, ",\"created_by\":{\"uid\":");
	jw_int_or_null(w, r->has_created_by_uid, r->created_by_uid);
	jw_lit(w, ",\"name\":");
	jw_str(w, r->created_by_name);
	jw_lit(w, "},\"next_run_ns\":");
	jw_int_or_null(w, r->has_next_run, r->next_run_ns);
	jw_lit(w, ",\"last_run_ns\":");
	jw_int_or_null(w, r->has_last_run, r->last_run_ns);
	jw_lit(w, ",\"last_due_ns\":");
	jw_int_or_null(w, r->has_last_due, r->last_due_ns);
	jw_lit(w, ",\"last_status\":");
	jw_str(w, r->last_status);
	jw_lit(w, ",\"last_job_id\":");
	jw_int_or_null(w, r->has_last_job, r->last_job_id);
	jw_lit(w, ",\"last_operation_id\":");
	jw_int_or_null(w, r->has_last_op, r->last_op_id);
	jw_lit(w, ",\"last_error\":");
	jw_str(w, r->last_error);
	jw_lit(w, ",\"created_at\":");
	jw_instant_at(w, true, r->created_ns);
	jw_lit(w, ",\"next_run_at\":");
	jw_instant_at(w, r->has_next_run, r->next_run_ns);
	jw_lit(w, ",\"last_run_at\":");
	jw_instant_at(w, r->has_last_run, r->last_run_ns);
	jw_lit(w, ",\"last_due_at\":");
	jw_instant_at(w, r->has_last_due, r->last_due_ns);
	jw_lit(w, "}");
	return w->failed ? -1 : 0;
}

int api_schedules_list(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "limit", "cursor", NULL };
	uint32_t scope = cursor_scope("schedules");   /* no filters: the list is the scope */
	struct jw w = { 0 };         /* owns the page's text until it is the answer's */
	uint64_t limit = 100;
	int64_t after, next;

	if (req_query_only(rq, allowed, e) < 0 || req_query_u64(rq, "limit", 1, 1000, &limit, e) < 0 ||
	    req_cursor(rq, scope, &after, e) < 0)
		return -1;
	/* Text while the rows are read, as GET /v1/history (bench/README.md, limits.readers). */
	jw_lit(&w, "{\"schedules\":[");
	if (sched_store_list_each(rq->app->store, after, (int)limit, page_row, &w, &next, e) < 0) {
		jw_free(&w);
		return -1;
	}
	return jw_reply_page(rq, &w, cursor_json(next, scope), e);
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
