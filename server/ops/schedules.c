/* The schedule use cases (see schedules.h); the scheduler thread only decides when. */
#include "server/ops/schedules.h"

#include "common/jsonfields.h"

#include <string.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/jobs/cron.h"
#include "server/jobs/scheduler.h"
#include "server/log.h"
#include "server/ops/resize.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/schedules.h"

#define NS 1000000000LL

static const char *const body_fields[] = { "cron", "action", "timezone", "misfire_grace_s", "enabled", NULL };

/* The action's resize, parsed and planned. The schedule's own wording for its members comes first
 * (request.* codes naming "action.hugepages."); the resize's field table decides which exist. */
static struct resize_args *plan_action(const struct app *app, const json_t *action, mp_err *e)
{
	struct resize_req r;
	const char *k;
	json_t *hp, *v;

	if (!json_is_object(action)) {
		mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"action\" must be an object");
		return NULL;
	}
	if (json_only_fields(action, "action.", (const char *const[]){ "hugepages", NULL }, e) < 0)
		return NULL;
	if (!(hp = json_object_get(action, "hugepages"))) {
		mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"action\" needs \"hugepages\" (the only action so far)");
		return NULL;
	}
	if (!json_is_object(hp)) {
		mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"action.hugepages\" must be an object");
		return NULL;
	}
	json_object_foreach(hp, k, v)
		if (!resize_field_ok(k, RESIZE_SCHEDULED)) {
			mp_fail(e, MPE_REQUEST_UNKNOWN_FIELD, 0, "unknown field: action.hugepages.%.64s", k);
			return NULL;
		}
	if (!json_is_string(json_object_get(hp, "size"))) {
		mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"action.hugepages.size\" (a string like \"2M\") is required");
		return NULL;
	}
	if (resize_parse(app, hp, NULL, RESIZE_SCHEDULED, &r, e) < 0)
		return NULL;
	return resize_plan(app, &r, e);
}

json_t *schedule_create(const struct app *app, const json_t *body, const struct job_actor *actor, int64_t *id,
			mp_err *e)
{
	const json_t *jcron = json_object_get(body, "cron"), *jtz = json_object_get(body, "timezone");
	const json_t *jgrace = json_object_get(body, "misfire_grace_s"), *jen = json_object_get(body, "enabled");
	const json_t *action = json_object_get(body, "action");
	struct resize_args *plan;
	struct cron c;
	int32_t off = 0;
	char tz[16];
	int64_t next;

	if (json_only_fields(body, "", body_fields, e) < 0)
		return NULL;
	if (!jcron || !action) {
		mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"%s\" is required", jcron ? "action" : "cron");
		return NULL;
	}
	if (!json_is_string(jcron) || (jtz && !json_is_string(jtz)) || (jgrace && !json_is_integer(jgrace)) ||
	    (jen && !json_is_boolean(jen))) {
		mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"cron\" and \"timezone\" are strings, \"misfire_grace_s\" "
			"an integer, \"enabled\" a boolean");
		return NULL;
	}
	if (cron_parse(json_string_value(jcron), &c, NULL, e) < 0 ||
	    (jtz && cron_tz_parse(json_string_value(jtz), &off, e) < 0))
		return NULL;
	if (jgrace && (json_integer_value(jgrace) < 1 || json_integer_value(jgrace) > SCHED_GRACE_MAX_S)) {
		mp_fail(e, MPE_SCHEDULE_BAD_GRACE, 0, "\"misfire_grace_s\" must be from 1 to %d seconds",
			SCHED_GRACE_MAX_S);
		return NULL;
	}
	if (!(plan = plan_action(app, action, e)))
		return NULL;
	resize_plan_free(plan);
	cron_tz_format(off, tz, sizeof tz);
	next = cron_next(&c, off, clk_wall_ns() / NS);
	struct schedule_new n = {
		.cron = json_string_value(jcron),
		.timezone = tz,
		.action = action,
		.enabled = jen ? json_is_true(jen) : true,
		.misfire_grace_s = jgrace ? json_integer_value(jgrace) : SCHED_GRACE_DEFAULT_S,
		.created_ns = clk_wall_ns(),
		.has_uid = actor && actor->has_uid,
		.uid = actor ? actor->uid : 0,
		.name = actor ? actor->name : NULL,
		.max_schedules = app->max_schedules,
	};
	n.next_run_ns = n.enabled && next > 0 ? next * NS : 0;
	if ((*id = sched_store_insert(app->store, &n, e)) < 0)
		return NULL;
	scheduler_kick(app->scheduler);
	log_info("schedule %lld created: '%s' %s", (long long)*id, n.cron, tz);
	return sched_store_get(app->store, *id, e);
}

json_t *schedule_delete(const struct app *app, int64_t id, mp_err *e)
{
	json_t *old;

	scheduler_hold(app->scheduler);
	if ((old = sched_store_get(app->store, id, e)) && sched_store_delete(app->store, id, e) < 0) {
		json_decref(old);
		old = NULL;
	}
	scheduler_release(app->scheduler);
	if (old) {
		scheduler_kick(app->scheduler);
		log_info("schedule %lld deleted", (long long)id);
	}
	return old;
}

/* ---- a due schedule --------------------------------------------------------------------------- */

/* The "schedule.run" history record of a skip or of a run that could not be started; req (the
 * schedule) and result are borrowed. Written with the run, in sched_store_ran's transaction. */
static struct op_record run_op(const struct app *app, const char *status, int64_t now_ns, const mp_err *err,
			       json_t *req, json_t *result)
{
	return (struct op_record){
		.kind = "schedule.run",
		.source = "scheduler",
		.started_ns = now_ns,
		.finished_ns = now_ns,
		.status = status,
		.err_no = err ? err->sys_errno : 0,
		.error = err ? err->detail : NULL,
		.request = req,
		.result = result,
		.kernel_release = app->caps.kernel_release,
	};
}

/* Starts the schedule's resize; returns the job (owned) or NULL with e filled. The action is
 * validated again: the machine may have changed since the schedule was made. */
static json_t *start_action(const struct app *app, const struct sched_due *d, int64_t *conflict, mp_err *e)
{
	struct job_origin origin = { .source = "scheduler", .schedule_id = d->id };
	struct resize_args *plan;

	if (!(plan = plan_action(app, d->action, e)))
		return NULL;
	return resize_start(app, plan, &origin, conflict, e);
}

void schedule_fire(const struct app *app, const struct sched_firing *f)
{
	const struct sched_due *d = f->schedule;
	int64_t now_ns = f->now_ns, due_s = f->due_s, run_s = f->run_s, last_missed = f->last_missed_s;
	int64_t missed = f->missed, job_id = 0, conflict = 0;
	json_t *job = NULL, *req, *skip_res = NULL, *fail_res = NULL;
	struct op_record skip_op, fail_op;
	mp_err e = { 0 }, run_err = { 0 };
	bool failed = false;

	if (run_s) {
		if (!app->jobs) {
			failed = true;
			mp_fail(&run_err, MPE_SCHEDULE_NO_RUNNER, 0, "the job runner is not running");
		} else if (!(job = start_action(app, d, &conflict, &run_err))) {
			failed = true;
			log_warn("schedule %lld: run due at %lld not submitted: %s", (long long)d->id, (long long)run_s,
				 run_err.detail);
		} else {
			job_id = json_integer_value(json_object_get(job, "id"));
			log_info("schedule %lld: submitted job %lld (due %lld, %lld s late)", (long long)d->id,
				 (long long)job_id, (long long)run_s, (long long)(now_ns / NS - run_s));
		}
		json_decref(job);
	}
	if (missed)
		log_warn("schedule %lld: skipped %lld missed run(s) older than the grace period (%lld s)",
			 (long long)d->id, (long long)missed, (long long)d->misfire_grace_s);

	req = json_pack("{s:I, s:s, s:s, s:O}", "schedule_id", (json_int_t)d->id, "cron", d->cron, "timezone",
			d->timezone, "action", d->action);
	if (missed) {
		skip_res = json_pack("{s:I, s:b, s:I, s:I, s:I, s:s}", "missed", (json_int_t)missed,
				     "missed_count_capped", f->missed_capped,
				     "first_due_ns", (json_int_t)(due_s * NS), "last_due_ns", (json_int_t)(last_missed * NS),
				     "misfire_grace_s", (json_int_t)d->misfire_grace_s,
				     "reason", "due while the daemon was not running, later than the grace period");
		skip_op = run_op(app, "skipped", now_ns, NULL, req, skip_res);
	}
	if (failed) {
		fail_res = json_pack("{s:I, s:s, s:s}", "due_ns", (json_int_t)(run_s * NS), "code",
				     mp_code_name(run_err.code), "kind", mp_kind_name(mp_code_kind(run_err.code)));
		if (conflict)
			json_object_set_new(fail_res, "conflict_job_id", json_integer(conflict));
		fail_op = run_op(app, "failed", now_ns, &run_err, req, fail_res);
	}
	struct sched_ran r = {
		.run_ns = now_ns,
		.due_ns = run_s ? run_s * NS : (last_missed ? last_missed : due_s) * NS,
		.status = failed ? "failed" : run_s ? "submitted" : "skipped",
		.job_id = job_id,
		.error = failed ? run_err.detail : NULL,
		.next_run_ns = f->next_run_ns,
		.skipped_op = missed ? &skip_op : NULL,
		.failed_op = failed ? &fail_op : NULL,
	};
	if (sched_store_ran(app->store, d->id, &r, &e) < 0)
		log_error("schedule %lld: cannot record the run: %s", (long long)d->id, e.detail);
	json_decref(req);
	json_decref(skip_res);
	json_decref(fail_res);
}
