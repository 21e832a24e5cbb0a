/* The job runner: long operations (pool resizes, probes) run on worker threads, persisted in the
 * jobs table, each one also an operation in history. An operation function from server/ops/ gets a
 * job_ctx: it reports progress and polls for cancellation, and knows nothing of HTTP or of the
 * runner. The scheduler (jobs/scheduler.c) submits ordinary jobs through jobs_submit().
 *
 * Job states: "queued" -> "running" -> one of "ok", "partial", "failed", "cancelled"; a job that
 * was queued or running when the daemon died reads "interrupted" after the next start. */
#ifndef MPD_JOBS_H
#define MPD_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct app;
struct jobs;
struct job_ctx;

/* Who asked. has_uid false: the daemon itself (the scheduler). */
struct job_actor {
	bool has_uid;
	uid_t uid;
	const char *name;            /* borrowed; NULL or "" when the uid has no name */
};

/* What an operation function reports when it returns. The runner owns result afterwards. */
struct job_outcome {
	const char *status;          /* static: "ok", "partial", "failed" or "cancelled" */
	const char *reason;          /* static or NULL: why it stopped short ("no_progress", "deadline") */
	int err_no;                  /* 0 when none */
	char error[512];             /* "" when none */
	json_t *result;              /* owned: the outcome as JSON, or NULL */
};

/* The operation itself. Runs on a worker thread; must poll job_cancelled() between steps. */
typedef void (*job_run_fn)(struct job_ctx *ctx, void *arg, struct job_outcome *out);
typedef void (*job_free_fn)(void *arg);

struct job_spec {
	const char *kind;            /* "hugepages.resize", ...; also the history kind */
	const char *conflict_key;    /* NULL, or e.g. "hugepages:2048kB": one job per key runs at a
	                              * time; a submission while another is active gets 409 ... */
	int wait_behind;             /* ... unless this is > 0: then it queues behind up to this many
	                              * active jobs of its key and runs after them, in order */
	const char *source;          /* "api" or "scheduler" */
	const struct job_actor *actor; /* borrowed; NULL for the daemon itself */
	int64_t schedule_id;         /* 0 when not started by a schedule */
	json_t *request;             /* borrowed; stored with the job and in history */
	json_t *initial_progress;    /* borrowed; NULL or what GET shows before the first report */
	job_run_fn run;
	void *arg;                   /* ownership passes to the runner at jobs_submit(), even when it
	                              * fails: it is released with free_arg */
	job_free_fn free_arg;        /* NULL when arg needs no freeing */
};

/* Opens the runner (no threads yet). */
struct jobs *jobs_open(struct app *app, mp_err *e);
/* What to do with a job of this kind found queued/running at start: fn returns a JSON object
 * (owned by the caller, e.g. the pool as re-read now) stored as the job's result. Register before
 * jobs_start(). */
typedef json_t *(*job_interrupted_fn)(struct app *app, int64_t job_id, const json_t *request);
void jobs_on_interrupted(struct jobs *j, const char *kind, job_interrupted_fn fn);
/* Marks jobs left queued/running by a previous daemon "interrupted" (and finishes their history
 * operations the same way), then starts nworkers worker threads. */
int jobs_start(struct jobs *j, int nworkers, mp_err *e);
/* Cancels every job, waits for the workers, frees. NULL is fine. */
void jobs_close(struct jobs *j);

/* Queues a job. Returns its id (> 0), or -1 with e filled: 409 MPE_JOB_CONFLICT when a job with the
 * same conflict key is queued or running (its id in *conflict_id when not NULL), 500 on store
 * errors. The job row and its history operation exist when this returns. */
int64_t jobs_submit(struct jobs *j, const struct job_spec *spec, int64_t *conflict_id, mp_err *e);

/* The job as JSON (owned by the caller): id, kind, status, source, schedule_id, actor, op_id,
 * created/started/finished (ns), request, progress, result, reason, errno, error. NULL + 404
 * MPE_JOB_NOT_FOUND when unknown. */
json_t *jobs_get(struct jobs *j, int64_t id, mp_err *e);

struct job_filter {
	const char *kind;            /* NULL: any */
	const char *status;          /* NULL: any */
	int64_t schedule_id;         /* 0: any */
	int64_t before_id;           /* 0: from the newest; else only ids < before_id (pagination) */
	int limit;                   /* 1..1000 */
};
/* Newest first, as a JSON array (owned by the caller). */
json_t *jobs_list(struct jobs *j, const struct job_filter *f, mp_err *e);

/* Asks a job to stop: a queued job is cancelled at once, a running one at its next check. Returns
 * the job as JSON. 404 when unknown; 409 MPE_JOB_FINISHED when it already ended. */
json_t *jobs_cancel(struct jobs *j, int64_t id, mp_err *e);

/* ---- for operation functions ------------------------------------------------------------- */
bool job_cancelled(struct job_ctx *ctx);
/* Replaces the progress shown by GET /v1/jobs/{id}. progress is stolen. */
void job_progress(struct job_ctx *ctx, json_t *progress);
int64_t job_id(const struct job_ctx *ctx);
int64_t job_op_id(const struct job_ctx *ctx);  /* the history operation of this job */
struct app *job_app(const struct job_ctx *ctx);

#endif
