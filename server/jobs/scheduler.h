/* The scheduler: one thread beside the job runner that sleeps until the next due minute of any
 * schedule (or until a schedule is created or deleted, or the daemon stops) and submits each due
 * run as an ordinary resize job tagged with the schedule id (source "scheduler").
 *
 * Missed runs (the daemon was down, or the machine suspended, across a due time). When the
 * scheduler finds a schedule whose next_run has passed, it looks at the occurrences between
 * next_run and now:
 *   - the latest one runs ONCE if it is at most misfire_grace_s old (default 3600 s);
 *   - every other occurrence (all of them, if the latest is older than the grace period) is
 *     skipped, and the skip is recorded in history as one operation kind "schedule.run", status
 *     "skipped", source "scheduler", with the count and the first and last missed due times;
 *   - next_run becomes the first occurrence after now.
 * A run that cannot be submitted (a resize of that size is running: 409, or the action no longer
 * validates, e.g. the node vanished) is recorded as a "schedule.run" operation with status
 * "failed" and the error; the schedule stays and fires at its next occurrence. */
#ifndef MPD_JOBS_SCHEDULER_H
#define MPD_JOBS_SCHEDULER_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/jobs/jobs.h"

struct app;
struct scheduler;

#define SCHED_GRACE_DEFAULT_S 3600
#define SCHED_GRACE_MAX_S     (31 * 86400)

/* The missed-run policy as a pure function (unit-tested): a schedule c (zone offset_s) whose
 * next run was due_s is looked at now_s >= due_s. Sets *run_s to the occurrence to run (0: none),
 * *missed to the number of other occurrences in [due_s, now_s] (counting stops at cap), and
 * *last_missed_s to the latest of them (0: none). */
struct cron;
void sched_misfire_plan(const struct cron *c, int32_t offset_s, int64_t due_s, int64_t now_s, int64_t grace_s,
			int64_t cap, int64_t *run_s, int64_t *missed, int64_t *last_missed_s);

/* Starts the thread; its first pass handles what was missed while the daemon was down. Needs
 * app->store and app->jobs (started). */
struct scheduler *scheduler_start(struct app *app, mp_err *e);
/* Wakes the thread, waits for it to finish its pass, frees. NULL is fine. */
void scheduler_stop(struct scheduler *s);

/* Use cases for the API. body is POST /v1/schedules's object:
 *   {"cron": "0 2 * * *", "action": {"hugepages": {"size": "2M", "nodes": {"0": 4096}}},
 *    "timezone": "UTC", "misfire_grace_s": 3600, "enabled": true}
 * The action is validated in full now (a dry run of the resize) so that a bad schedule is refused
 * up front. Errors: 400 request.unknown_field / request.missing_field / request.wrong_type,
 * 422 schedule.bad_cron / schedule.bad_timezone / schedule.bad_grace, and the resize validation's
 * codes (resize.bad_request 400, hugepages.unknown_size, resize.bad_node, resize.bad_count: 422).
 * Returns the new schedule as JSON (owned by the caller) and its id in *id. */
json_t *schedule_create(struct app *app, const json_t *body, const struct job_actor *actor, int64_t *id,
			mp_err *e);
/* Deletes a schedule; returns it as it was (owned by the caller). 404 schedule.not_found. Jobs it
 * started keep their schedule_id. */
json_t *schedule_delete(struct app *app, int64_t id, mp_err *e);

#endif
