/* What ops/ see of the job runner, and all they include of it: a job kind (one table entry per
 * kind), the context its run function gets while it runs (progress, cancellation, deadline), and
 * submitting a job. The runner (jobs.c) implements this and knows no kind by name; main() owns the
 * runner itself (jobs.h). How to add a kind: docs/DESIGN.md, "How to add a job kind". */
#ifndef MPD_JOBS_JOB_CTX_H
#define MPD_JOBS_JOB_CTX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "server/jobs/reasons.h"

struct app;
struct jobs;
struct knob_record;
struct op_record;
struct job_ctx;                  /* opaque: the runner's, valid while run() runs */

/* What run() reports when it returns. The runner owns result afterwards. */
struct job_outcome {
	const char *status;          /* static: "ok", "partial", "failed" or "cancelled"; NULL reads "failed" */
	enum job_reason reason;      /* why it stopped short (JR_NO_PROGRESS, ...), JR_NONE: no reason */
	int err_no;                  /* 0 when none */
	char error[512];             /* "" when none */
	json_t *result;              /* owned: the outcome as JSON, or NULL */
	/* Borrowed, valid until the job is freed; NULL: none. A knob change of the job's own (its
	 * operation the submission's with_op) recorded in the job's end transaction: one commit for
	 * both. When that commit fails, the kind's unrecorded() is called, and the end it leaves is
	 * recorded without these rows. */
	const struct knob_record *knobs;
};

/* A kind of job, registered once at start (jobs_register) and named by every submission. arg is
 * the submission's argument (the kind's own plan struct), owned by the runner from submission on. */
struct job_kind {
	const char *name;            /* "hugepages.resize": the job's kind and its history operation's */
	/* Runs on a worker thread: polls job_cancelled() (and job_past_deadline() when the submission
	 * set a deadline) between steps, calls job_progress() as it goes, fills out. */
	void (*run)(struct job_ctx *ctx, void *arg, struct job_outcome *out);
	/* Releases arg; NULL when it needs no freeing. */
	void (*free_arg)(void *arg);
	/* Writes the resource arg acts on, e.g. "hugepages:2048kB": one job per key runs at a time, a
	 * second one gets 409 job.conflict (or queues, see wait_behind). NULL, or "" written: never
	 * conflicts. */
	void (*conflict_key)(const void *arg, char *key, size_t len);
	/* What GET /v1/jobs/{id} shows as "progress" before run() first reports: a new JSON value
	 * (owned by the runner), or NULL for none. The same shape run() reports keeps clients simple. */
	json_t *(*initial_progress)(const void *arg);
	/* A job of this kind that a previous daemon left queued or running is marked "interrupted" at
	 * start; this returns its result (a new JSON object, e.g. the resource as re-read now), or
	 * NULL. request is the one stored at submission. NULL: no result. */
	json_t *(*interrupted)(const struct app *app, int64_t job_id, const json_t *request);
	/* The end's transaction with out->knobs failed (why): the change must not stay made without
	 * its record, so this undoes it and rewrites out (status, error, result) to say so. NULL for
	 * a kind that never sets out->knobs. */
	void (*unrecorded)(struct job_ctx *ctx, void *arg, struct job_outcome *out, const mp_err *why);
	/* The job's end is recorded (or its recording failed for good, unrecorded() done): what it
	 * left may be made known now, and not before, so that nobody sees an outcome its record then
	 * undoes. Called once, on the thread that ran the job. NULL: nothing to do. */
	void (*settled)(struct job_ctx *ctx, void *arg);
};

/* Registers a kind (a static table entry, borrowed for the runner's life) before jobs_start();
 * ops/ register theirs in ops/kinds.c. Fails on a second kind of the same name or too many. */
int jobs_register(struct jobs *j, const struct job_kind *kind, mp_err *e);

/* What is measured around every job, whatever its kind (ops/conditions.c: the counters and
 * settings the operation ran under). begin() runs on the worker right before run(), end() right
 * after it, with what begin() returned (end frees it); end may add to out->result. */
struct job_measure {
	void *(*begin)(const struct app *app);
	void (*end)(const struct app *app, void *snap, struct job_outcome *out);
};
/* Sets it, before jobs_start(); m is static. */
void jobs_measure(struct jobs *j, const struct job_measure *m);

/* Who asked. has_uid false: the daemon itself (the scheduler; name NULL), or a bearer token (name
 * "token:NAME"). */
struct job_actor {
	bool has_uid;
	uid_t uid;
	const char *name;            /* borrowed; NULL or "" when the uid has no name */
};

/* Who started a job: stored with it and with its history operation. */
struct job_origin {
	const char *source;          /* "api" or "scheduler" */
	const struct job_actor *actor; /* borrowed; NULL for the daemon itself */
	int64_t schedule_id;         /* 0 when not started by a schedule */
};

/* One submission. */
struct job_spec {
	const struct job_kind *kind; /* registered */
	void *arg;                   /* ownership passes to the runner at jobs_submit(), even when it
	                              * fails: it is released with kind->free_arg */
	json_t *request;             /* borrowed: stored with the job and in history */
	struct job_origin origin;
	int wait_behind;             /* 0: a conflict is 409. > 0: queue behind up to this many active
	                              * jobs of the same key and run after them, in order */
	int64_t deadline_ms;         /* 0: none; else job_past_deadline() turns true this long after
	                              * run() starts */
	bool measures_itself;        /* run() measures its own conditions (the one change it makes is
	                              * measured already, a knob transaction): the runner's
	                              * jobs_measure is not taken around it */
	/* jobs_run_now only (borrowed; NULL: none): the operation of the change run() is about to
	 * make, inserted "running" in the transaction that stores the job started, so that the
	 * attempt is on record before the first write in one commit (job_with_op_id: its id). It
	 * is stored started when the job is (its started_ns is the job's). */
	const struct op_record *with_op;
};

/* Queues a job. Returns it as GET /v1/jobs/{id} shows it (owned by the caller; only its id, kind
 * and status if reading it back fails), or NULL with e filled: 409 MPE_JOB_CONFLICT when a job with
 * the same conflict key is queued or running (its id in *conflict_id when not NULL), 503 while the
 * runner starts or stops, store errors, MPE_INTERNAL_ERROR for a kind never registered. The job
 * row and its history operation exist when this returns a job. */
json_t *jobs_submit(struct jobs *j, const struct job_spec *spec, int64_t *conflict_id, mp_err *e);
/* Runs a job in the caller's thread and returns when it has ended: stored queued-and-started in one
 * transaction, on the active list while it runs (a second submission with its key is 409, GET and
 * cancel see it), measured and recorded as a worker's job is; wait_behind is ignored (a holder of
 * the key is a conflict). Returns the ended job as GET /v1/jobs/{id} shows it, or NULL as
 * jobs_submit. For a short job whose caller answers with its outcome (a knob-only profile apply):
 * no thread hand-off and no wait. */
json_t *jobs_run_now(struct jobs *j, const struct job_spec *spec, int64_t *conflict_id, mp_err *e);

/* ---- for run() ------------------------------------------------------------------------------ */
bool job_cancelled(struct job_ctx *ctx);
/* True once the submission's deadline_ms has passed since run() started; false without one. */
bool job_past_deadline(struct job_ctx *ctx);
/* Replaces the progress shown by GET /v1/jobs/{id}. progress is stolen. */
void job_progress(struct job_ctx *ctx, json_t *progress);
int64_t job_id(const struct job_ctx *ctx);
int64_t job_op_id(const struct job_ctx *ctx);  /* the history operation of this job */
int64_t job_with_op_id(const struct job_ctx *ctx);  /* the submission's with_op once inserted; 0: none */
/* A job that acts on a second resource for a while (profile.apply resizing a pool) holds that
 * resource's key: until job_release_key (or the job's end), a submission with that conflict key
 * is 409 job.conflict naming this job (or queues behind it, wait_behind), and one queued already
 * waits. 0, or -1 with *holder the job that stands on the key now (nothing held). One at a time. */
int job_hold_key(struct job_ctx *ctx, const char *key, int64_t *holder);
void job_release_key(struct job_ctx *ctx);

#endif
