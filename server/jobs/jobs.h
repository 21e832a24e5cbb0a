/* The job runner: long operations (pool resizes, probes) run on worker threads, persisted in the
 * jobs table, each one also an operation in history. It knows no kind of job: ops/ register kinds
 * and submit jobs through job_ctx.h, which is all they include of it; a kind's run() sees only a
 * job_ctx (progress, cancellation, deadline) and knows nothing of HTTP or of the runner. This
 * header is the rest: the runner's life (main()) and reading and cancelling jobs (api/).
 *
 * Job states: "queued" -> "running" -> one of "ok", "partial", "failed", "cancelled"; a job that
 * was queued or running when the daemon died reads "interrupted" after the next start. */
#ifndef MPD_JOBS_H
#define MPD_JOBS_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/jobs/job_ctx.h"

struct app;
struct jobs;

/* Opens the runner (no threads yet). */
struct jobs *jobs_open(const struct app *app, mp_err *e);
/* Marks jobs left queued/running by a previous daemon "interrupted" (and finishes their history
 * operations the same way; a registered kind's interrupted() gives the result), then starts
 * nworkers worker threads. Kinds are registered before (job_ctx.h: jobs_register). */
int jobs_start(struct jobs *j, int nworkers, mp_err *e);
/* Cancels every job, waits for the workers, frees. NULL is fine. */
void jobs_close(struct jobs *j);

/* The job as JSON (owned by the caller): id, kind, status, source, schedule_id, actor, operation_id,
 * created/started/finished (ns), request, progress, result, reason, errno, error. NULL + 404
 * MPE_JOB_NOT_FOUND when unknown. */
json_t *jobs_get(struct jobs *j, int64_t id, mp_err *e);

struct job_filter {
	const char *kind;            /* NULL: any */
	const char *status;          /* NULL: any */
	int64_t schedule_id;         /* 0: any */
	int64_t before_id;           /* 0: from the newest; else only ids < before_id (pagination) */
	int limit;                   /* 1..1001 (the API asks one more than a page) */
};
/* Newest first, as a JSON array (owned by the caller). */
json_t *jobs_list(struct jobs *j, const struct job_filter *f, mp_err *e);

/* Asks a job to stop: a queued job is cancelled at once, a running one at its next check. Returns
 * the job as JSON. 404 when unknown; 409 MPE_JOB_FINISHED when it already ended, which includes a
 * job whose run has returned and whose outcome is being recorded: a cancel cannot change it. */
json_t *jobs_cancel(struct jobs *j, int64_t id, mp_err *e);

/* Waiting for a job without polling (api/waits.c): fn(cls, id) is called under the runner's lock
 * each time a job has left the active list with its final status recorded (it ended, failed, was
 * cancelled, or was cancelled before it started); it must not block nor call into the runner.
 * One at a time; NULL removes it, and once jobs_on_end returns the old fn is not running nor
 * called again. Because both run under the same lock, a waiter that registers itself and then
 * finds jobs_active() false knows the call for its job has been made, or it would have seen it. */
void jobs_on_end(struct jobs *j, void (*fn)(void *cls, int64_t job_id), void *cls);
/* True while the job is queued or running in this runner (memory only, no store read). */
bool jobs_active(struct jobs *j, int64_t id);
/* True while a queued or running job has this conflict key ("hugepages:2048kB"), or holds it
 * (job_hold_key). */
bool jobs_key_busy(struct jobs *j, const char *key);
/* The first such job's id, 0 when none. */
int64_t jobs_key_holder(struct jobs *j, const char *key);

#ifdef MPD_TEST_HOOKS
/* Test builds only: fn(cls, id) runs on the worker right after a job's outcome is recorded and
 * before the job leaves the active list (not under the lock; it may block), so a test can land a
 * call in that window without timing. NULL removes it. */
void jobs_test_on_recorded(struct jobs *j, void (*fn)(void *cls, int64_t job_id), void *cls);
#endif
/* How many jobs of one registered kind are queued and running now (memory only): GET /metrics. */
struct jobs_count {
	const char *kind;            /* borrowed: the registered kind's name */
	unsigned queued, running;
};
/* Every registered kind, in registration order, kinds with no job included (a gauge that drops
 * to 0 is a sample, a series that vanishes is not); at most max. Returns how many were filled. */
int jobs_count_active(struct jobs *j, struct jobs_count *out, int max);

#endif
