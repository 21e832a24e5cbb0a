#include "server/jobs/scheduler.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/app.h"
#include "server/jobs/cron.h"
#include "server/log.h"
#include "server/ops/resize.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/schedules.h"

#define NS 1000000000LL
/* The longest sleep: wall-clock jumps (NTP, an administrator's date) are noticed this soon. */
#define MAX_SLEEP_S 60
/* Counting missed occurrences stops here (a minutely schedule down for months); the record says so. */
#define MISSED_COUNT_CAP 100000

struct scheduler {
	struct app *app;             /* borrowed */
	pthread_t thread;
	pthread_mutex_t mu;          /* guards stop and kicked */
	pthread_cond_t cond;         /* signalled on kick and stop; CLOCK_REALTIME like the schedules */
	bool stop, kicked;
	/* Held for a whole pass and by schedule_delete, so a schedule deleted by the API is never
	 * submitted after the DELETE has answered. */
	pthread_mutex_t pass_mu;
};

static void kick(struct scheduler *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->kicked = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

/* The "schedule.run" history record of a skip or of a run that could not be submitted. */
static int64_t record_op(struct app *app, const struct sched_due *d, const char *status, int64_t now_ns,
			 const mp_err *err, json_t *result, mp_err *e)
{
	json_t *req = json_pack("{s:I, s:s, s:s, s:O}", "schedule_id", (json_int_t)d->id, "cron", d->cron,
				"timezone", d->timezone, "action", d->action);
	struct op_record op = {
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
	int64_t id = history_insert(app->store, &op, e);
	json_decref(req);
	return id;
}

void sched_misfire_plan(const struct cron *c, int32_t offset_s, int64_t due_s, int64_t now_s, int64_t grace_s,
			int64_t cap, int64_t *run_s, int64_t *missed, int64_t *last_missed_s)
{
	int64_t t, from = due_s > now_s - grace_s ? due_s : now_s - grace_s;

	*run_s = *missed = *last_missed_s = 0;
	/* The latest occurrence no older than the grace period, if any: it is the one that runs. */
	for (t = cron_next(c, offset_s, from - 1); t >= 0 && t <= now_s; t = cron_next(c, offset_s, t))
		*run_s = t;
	/* The occurrences from the due one up to now that do not run. */
	for (t = due_s; t >= 0 && t <= now_s && *missed < cap; t = cron_next(c, offset_s, t))
		if (t != *run_s) {
			(*missed)++;
			*last_missed_s = t;
		}
}

/* Starts a schedule's resize; returns the job (owned) or NULL with e filled. */
static json_t *start_action(struct app *app, int64_t schedule_id, const json_t *hp, int64_t *conflict, mp_err *e)
{
	struct job_origin origin = { .source = "scheduler", .schedule_id = schedule_id };
	struct resize_req r;
	struct resize_args *plan;

	if (resize_parse(app, hp, NULL, RESIZE_SCHEDULED, &r, e) < 0 || !(plan = resize_plan(app, &r, e)))
		return NULL;
	return resize_start(app, plan, &origin, conflict, e);
}

/* Acts on one due schedule: run the latest occurrence within the grace period, record the rest
 * as skipped, move next_run past now. */
static void run_due(struct scheduler *s, const struct sched_due *d, int64_t now_ns)
{
	struct app *app = s->app;
	struct cron c;
	int32_t off;
	int64_t now_s = now_ns / NS, due_s = d->next_run_ns / NS, run_s = 0, last_missed = 0, missed = 0;
	int64_t job_id = 0, conflict = 0, skip_op = 0, fail_op = 0, t;
	json_t *plan = NULL;
	mp_err e = { 0 }, run_err = { 0 };
	bool failed = false;

	if (cron_parse(d->cron, &c, NULL, &e) < 0 || cron_tz_parse(d->timezone, &off, &e) < 0) {
		/* Only a hand-edited database gets here: stop the schedule, say why. */
		log_error("schedule %lld: %s; disabling it", (long long)d->id, e.detail);
		struct sched_ran r = { .run_ns = now_ns, .due_ns = d->next_run_ns, .status = "failed",
				       .error = e.detail };
		store_lock(app->store);
		sched_store_ran(app->store, d->id, &r, &e);
		store_unlock(app->store);
		return;
	}
	sched_misfire_plan(&c, off, due_s, now_s, d->misfire_grace_s, MISSED_COUNT_CAP, &run_s, &missed, &last_missed);

	if (run_s) {
		json_t *hp = json_object_get(d->action, "hugepages");
		if (!app->jobs) {
			failed = true;
			mp_fail(&run_err, MPE_SCHEDULE_NO_RUNNER, 0, "the job runner is not running");
		} else if (!(plan = start_action(app, d->id, hp, &conflict, &run_err))) {
			failed = true;
			log_warn("schedule %lld: run due at %lld not submitted: %s", (long long)d->id, (long long)run_s,
				 run_err.detail);
		} else {
			job_id = json_integer_value(json_object_get(plan, "id"));
			log_info("schedule %lld: submitted job %lld (due %lld, %lld s late)", (long long)d->id,
				 (long long)job_id, (long long)run_s, (long long)(now_s - run_s));
		}
		json_decref(plan);
	}
	if (missed)
		log_warn("schedule %lld: skipped %lld missed run(s) older than the grace period (%lld s)",
			 (long long)d->id, (long long)missed, (long long)d->misfire_grace_s);

	store_lock(app->store);
	if (store_begin(app->store, &e) < 0)
		goto fail;
	if (missed) {
		json_t *res = json_pack("{s:I, s:b, s:I, s:I, s:I, s:s}", "missed", (json_int_t)missed,
					"missed_count_capped", missed >= MISSED_COUNT_CAP,
					"first_due_ns", (json_int_t)(due_s * NS), "last_due_ns", (json_int_t)(last_missed * NS),
					"misfire_grace_s", (json_int_t)d->misfire_grace_s,
					"reason", "due while the daemon was not running, later than the grace period");
		skip_op = record_op(app, d, "skipped", now_ns, NULL, res, &e);
		json_decref(res);
		if (skip_op < 0)
			goto rollback;
	}
	if (failed) {
		json_t *res = json_pack("{s:I, s:s, s:s}", "due_ns", (json_int_t)(run_s * NS), "code",
					mp_code_name(run_err.code), "kind", mp_kind_name(mp_code_kind(run_err.code)));
		if (conflict)
			json_object_set_new(res, "conflict_job_id", json_integer(conflict));
		fail_op = record_op(app, d, "failed", now_ns, &run_err, res, &e);
		json_decref(res);
		if (fail_op < 0)
			goto rollback;
	}
	t = cron_next(&c, off, now_s);
	struct sched_ran r = {
		.run_ns = now_ns,
		.due_ns = run_s ? run_s * NS : (last_missed ? last_missed : due_s) * NS,
		.status = failed ? "failed" : run_s ? "submitted" : "skipped",
		.job_id = job_id,
		.op_id = failed ? fail_op : skip_op,
		.error = failed ? run_err.detail : NULL,
		.next_run_ns = t > 0 ? t * NS : 0,
	};
	if (sched_store_ran(app->store, d->id, &r, &e) < 0 || store_commit(app->store, &e) < 0)
		goto rollback;
	store_unlock(app->store);
	return;
rollback:
	store_rollback(app->store);
fail:
	store_unlock(app->store);
	log_error("schedule %lld: cannot record the run: %s", (long long)d->id, e.detail);
}

/* One pass over the due schedules. Returns the next wake-up (ns), 0 when nothing is scheduled,
 * -1 on a store error. */
static int64_t pass(struct scheduler *s)
{
	struct sched_due *due;
	size_t n;
	int64_t now_ns = store_now_ns(), next;
	mp_err e = { 0 };

	pthread_mutex_lock(&s->pass_mu);
	if (sched_store_due(s->app->store, now_ns, &due, &n, &e) < 0) {
		log_error("scheduler: %s", e.detail);
		pthread_mutex_unlock(&s->pass_mu);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		run_due(s, &due[i], now_ns);
	sched_due_free(due, n);
	next = sched_store_next_wake(s->app->store, &e);
	pthread_mutex_unlock(&s->pass_mu);
	return next;
}

static void *thread_main(void *arg)
{
	struct scheduler *s = arg;

	for (;;) {
		int64_t next = pass(s), now = store_now_ns(), until = now + MAX_SLEEP_S * NS;
		struct timespec ts;

		if (next > 0 && next < until)
			until = next;
		ts.tv_sec = until / NS;
		ts.tv_nsec = until % NS;
		pthread_mutex_lock(&s->mu);
		while (!s->stop && !s->kicked)
			if (pthread_cond_timedwait(&s->cond, &s->mu, &ts) != 0)
				break;
		s->kicked = false;
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

struct scheduler *scheduler_start(struct app *app, mp_err *e)
{
	struct scheduler *s = calloc(1, sizeof *s);

	if (!s) {
		mp_nomem(e);
		return NULL;
	}
	s->app = app;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->pass_mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&s->thread, NULL, thread_main, s) != 0) {
		mp_fail(e, MPE_SCHEDULE_THREAD, 0, "cannot start the scheduler thread");
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->pass_mu);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return NULL;
	}
	return s;
}

void scheduler_stop(struct scheduler *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->pass_mu);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* ---- use cases ------------------------------------------------------------------------------ */

static const char *const body_fields[] = { "cron", "action", "timezone", "misfire_grace_s", "enabled", NULL };

static int only_fields(const json_t *obj, const char *const *allowed, const char *where, mp_err *e)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		size_t i;
		for (i = 0; allowed[i] && strcmp(allowed[i], k); i++)
			;
		if (!allowed[i])
			return mp_fail(e, MPE_REQUEST_UNKNOWN_FIELD, 0, "unknown field: %s%.64s", where, k);
	}
	return 0;
}

/* The action, validated by a dry run of the resize it will submit. */
static int check_action(struct app *app, const json_t *action, mp_err *e)
{
	struct resize_req r;
	struct resize_args *plan;
	json_t *hp;
	const char *k;
	json_t *v;

	if (!json_is_object(action))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"action\" must be an object");
	if (only_fields(action, (const char *const[]){ "hugepages", NULL }, "action.", e) < 0)
		return -1;
	if (!(hp = json_object_get(action, "hugepages")))
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"action\" needs \"hugepages\" (the only action so far)");
	if (!json_is_object(hp))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"action.hugepages\" must be an object");
	json_object_foreach(hp, k, v)
		if (!resize_field_ok(k, RESIZE_SCHEDULED))
			return mp_fail(e, MPE_REQUEST_UNKNOWN_FIELD, 0, "unknown field: action.hugepages.%.64s", k);
	if (!json_is_string(json_object_get(hp, "size")))
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"action.hugepages.size\" (a string like \"2M\") is required");
	if (resize_parse(app, hp, NULL, RESIZE_SCHEDULED, &r, e) < 0 || !(plan = resize_plan(app, &r, e)))
		return -1;
	resize_plan_free(plan);
	return 0;
}

json_t *schedule_create(struct app *app, const json_t *body, const struct job_actor *actor, int64_t *id,
			mp_err *e)
{
	const json_t *jcron = json_object_get(body, "cron"), *jtz = json_object_get(body, "timezone");
	const json_t *jgrace = json_object_get(body, "misfire_grace_s"), *jen = json_object_get(body, "enabled");
	const json_t *action = json_object_get(body, "action");
	struct cron c;
	int32_t off = 0;
	char tz[16];
	int64_t next;

	if (only_fields(body, body_fields, "", e) < 0)
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
	if (check_action(app, action, e) < 0)
		return NULL;
	cron_tz_format(off, tz, sizeof tz);
	next = cron_next(&c, off, store_now_ns() / NS);
	struct schedule_new n = {
		.cron = json_string_value(jcron),
		.timezone = tz,
		.action = action,
		.enabled = jen ? json_is_true(jen) : true,
		.misfire_grace_s = jgrace ? json_integer_value(jgrace) : SCHED_GRACE_DEFAULT_S,
		.created_ns = store_now_ns(),
		.has_uid = actor && actor->has_uid,
		.uid = actor ? actor->uid : 0,
		.name = actor ? actor->name : NULL,
	};
	n.next_run_ns = n.enabled && next > 0 ? next * NS : 0;
	if ((*id = sched_store_insert(app->store, &n, e)) < 0)
		return NULL;
	kick(app->scheduler);
	log_info("schedule %lld created: '%s' %s", (long long)*id, n.cron, tz);
	return sched_store_get(app->store, *id, e);
}

json_t *schedule_delete(struct app *app, int64_t id, mp_err *e)
{
	struct scheduler *s = app->scheduler;
	json_t *old;

	if (s)
		pthread_mutex_lock(&s->pass_mu);
	if ((old = sched_store_get(app->store, id, e)) && sched_store_delete(app->store, id, e) < 0) {
		json_decref(old);
		old = NULL;
	}
	if (s)
		pthread_mutex_unlock(&s->pass_mu);
	if (old) {
		kick(s);
		log_info("schedule %lld deleted", (long long)id);
	}
	return old;
}
