/* The schedule use cases: creating and deleting a schedule (its action validated in full up
 * front), and what a due schedule does when the scheduler (server/jobs/scheduler.c) fires it:
 * start its resize as a job tagged with the schedule id (source "scheduler"), or record why not.
 *
 * A firing's records: missed occurrences are recorded in history as one operation kind
 * "schedule.run", status "skipped", source "scheduler", with the count and the first and last
 * missed due times. A run that cannot be started (a resize of that size is running and 4 more are
 * queued: 409, or the action no longer validates, e.g. the node vanished) is a "schedule.run"
 * operation with status "failed" and the error; the schedule stays and fires at its next
 * occurrence. Both, the schedule's last run and its next_run are written in one transaction. */
#ifndef MPD_OPS_SCHEDULES_H
#define MPD_OPS_SCHEDULES_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/jobs/job_ctx.h"

struct app;
struct sched_firing;

#define SCHED_GRACE_DEFAULT_S 3600
#define SCHED_GRACE_MAX_S     (31 * 86400)

/* body is POST /v1/schedules's object:
 *   {"cron": "0 2 * * *", "action": {"hugepages": {"size": "2M", "nodes": {"0": 4096}}},
 *    "timezone": "UTC", "misfire_grace_s": 3600, "enabled": true}
 * The action is validated in full now (parsed and planned like a dry run of the resize) so that a
 * bad schedule is refused up front. Errors: 400 request.unknown_field / request.missing_field /
 * request.wrong_type, 422 schedule.bad_cron / schedule.bad_timezone / schedule.bad_grace, and the
 * resize's codes (resize.bad_request 400, hugepages.unknown_size, resize.bad_node,
 * resize.bad_count: 422). Returns the new schedule as JSON (owned by the caller), its id in *id. */
json_t *schedule_create(const struct app *app, const json_t *body, const struct job_actor *actor, int64_t *id,
			mp_err *e);
/* Deletes a schedule; returns it as it was (owned by the caller). 404 MPE_SCHEDULE_NOT_FOUND. Jobs it
 * started keep their schedule_id. */
json_t *schedule_delete(const struct app *app, int64_t id, mp_err *e);

/* The scheduler's callback (scheduler_start): runs the occurrence f says, records the rest. */
void schedule_fire(const struct app *app, const struct sched_firing *f);

#endif
