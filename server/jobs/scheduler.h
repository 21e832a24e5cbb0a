/* The scheduler: one thread beside the job runner that sleeps until the next due minute of any
 * schedule (or until it is kicked because a schedule was created or deleted, or the daemon stops)
 * and fires each due schedule through the callback it was started with. It owns time — which
 * occurrence runs, which were missed, when the schedule is due next — and nothing else: what a
 * firing does (start the action as a job, record a skip or a failure, move next_run) is a use case
 * in ops/schedules.c. It includes nothing from ops/.
 *
 * Missed runs (the daemon was down, or the machine suspended, across a due time). When the
 * scheduler finds a schedule whose next_run has passed, it looks at the occurrences between
 * next_run and now:
 *   - the latest one runs ONCE if it is at most misfire_grace_s old;
 *   - every other occurrence (all of them, if the latest is older than the grace period) is
 *     missed, and the firing says how many and the first and last missed due times;
 *   - next_run becomes the first occurrence after now. */
#ifndef MPD_JOBS_SCHEDULER_H
#define MPD_JOBS_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct app;
struct scheduler;
struct sched_due;

/* The missed-run policy as a pure function (unit-tested): a schedule c (zone offset_s) whose
 * next run was due_s is looked at now_s >= due_s. Sets *run_s to the occurrence to run (0: none),
 * *missed to the number of other occurrences in [due_s, now_s] (counting stops at cap), and
 * *last_missed_s to the latest of them (0: none). */
struct cron;
void sched_misfire_plan(const struct cron *c, int32_t offset_s, int64_t due_s, int64_t now_s, int64_t grace_s,
			int64_t cap, int64_t *run_s, int64_t *missed, int64_t *last_missed_s);

/* One due schedule, as the scheduler hands it to the callback. */
struct sched_firing {
	const struct sched_due *schedule; /* borrowed: the row (id, cron, timezone, action, ...) */
	int64_t now_ns;
	int64_t due_s;               /* the next_run that was due */
	int64_t run_s;               /* the occurrence to run now, 0: none (all missed) */
	int64_t missed;              /* occurrences from due_s to now that do not run */
	bool missed_capped;          /* counting stopped: there were at least this many */
	int64_t last_missed_s;       /* the latest of them, 0: none */
	int64_t next_run_ns;         /* the first occurrence after now, 0: none */
};
/* Does what a firing asks and records it, moving the schedule's next_run to f->next_run_ns (else
 * it stays due and fires again at once). Runs on the scheduler thread. */
typedef void (*sched_fire_fn)(const struct app *app, const struct sched_firing *f);

/* Starts the thread; its first pass handles what was missed while the daemon was down. Needs
 * app->store. */
struct scheduler *scheduler_start(const struct app *app, sched_fire_fn fire, mp_err *e);
/* Wakes the thread, waits for it to finish its pass, frees. NULL is fine. */
void scheduler_stop(struct scheduler *s);
/* The schedules changed: look again now. NULL is fine. */
void scheduler_kick(struct scheduler *s);
/* While held, no schedule fires (a pass in progress is waited for): a schedule deleted under the
 * hold never fires after its DELETE has answered. NULL is fine. */
void scheduler_hold(struct scheduler *s);
void scheduler_release(struct scheduler *s);
/* How many passes have begun (the thread woke to look, and may be waiting for a hold) and how
 * many have finished (whatever was due then has fired): events a test waits for instead of
 * sleeping. Passes run one at a time, so *done <= *begun <= *done + 1. */
void scheduler_passes(struct scheduler *s, unsigned *begun, unsigned *done);

#endif
