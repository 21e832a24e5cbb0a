/* The jobs and batches tables (schema/002_jobs.sql). Every function takes the store's lock itself;
 * a job's two rows (the job and its history operation) are only ever written together, in one
 * named transaction, so that after any crash they agree. */
#ifndef MPD_STORE_JOBS_H
#define MPD_STORE_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct store;
struct op_record;
struct knob_record;

struct job_row {
	const char *kind;
	const char *status;
	const char *conflict_key;    /* NULL for none */
	const char *source;
	int64_t schedule_id;         /* 0: none */
	bool has_actor;
	uid_t actor_uid;
	const char *actor_name;
	int64_t created_ns;
	int64_t started_ns;          /* 0: not started (queued, or as status says); else inserted "running" since then */
	json_t *request;             /* borrowed */
	json_t *progress;            /* borrowed */
};

/* Transaction "job_submit": the job's operation (op, "running") and the job row pointing at it
 * (inserted started when r->started_ns is set: a job run at once costs one commit, not two, and
 * one statement for its row, not two).
 * Fills *op_id and *job_id. */
int store_job_submit(struct store *st, const struct op_record *op, const struct job_row *r, int64_t *op_id,
		     int64_t *job_id, mp_err *e);
/* The same, and with (not NULL) a second operation inserted after the job's (its id in *with_id):
 * a job run at once whose own change must be on record, "running", before it makes it (a
 * profile.apply's knobs.set), in the same commit. */
int store_job_submit_with(struct store *st, const struct op_record *op, const struct job_row *r,
			  const struct op_record *with, int64_t *op_id, int64_t *job_id, int64_t *with_id, mp_err *e);
/* The job row says "running" since started_ns. */
int store_job_start(struct store *st, int64_t id, int64_t started_ns, mp_err *e);

/* How a job ended: written to the job row and to its operation. */
struct job_end {
	const char *tx;              /* the transaction's name: "job_finish" (NULL), "job_cancel", "job_recover" */
	int64_t job_id;
	int64_t op_id;               /* 0: the job has no operation */
	const char *status;
	int64_t finished_ns;
	const char *reason;          /* NULL when none */
	int err_no;                  /* 0 when none */
	const char *error;           /* the job's error, NULL or "" when none */
	const char *op_error;        /* the operation's error text, NULL when none */
	json_t *progress;            /* borrowed; NULL keeps the row's */
	json_t *result;              /* borrowed */
	const struct knob_record *knobs; /* borrowed; not NULL: a knob change of the job's (inserted by
					  * store_job_submit_with) recorded in the same transaction */
};
/* Transaction end->tx: the job row and its operation (and end->knobs), all or none. */
int store_job_finish(struct store *st, const struct job_end *end, mp_err *e);

/* The job as JSON (owned by the caller), NULL + MPE_JOB_NOT_FOUND when unknown. Reader. */
json_t *jobs_db_get(struct store *st, int64_t id, mp_err *e);
/* The job as jobs_db_get would read it right after the commits of r (inserted with op_id, as id)
 * and end: built from those values, not read back (owned by the caller; NULL: out of memory). */
json_t *jobs_db_view(const struct job_row *r, int64_t id, int64_t op_id, const struct job_end *end);
/* Newest first; NULL/0 filters do not filter. Reader. */
json_t *jobs_db_list(struct store *st, const char *kind, const char *status, int64_t schedule_id,
		     int64_t before_id, int limit, mp_err *e);

/* Jobs left queued or running by another daemon instance (not this store's): fills up to max ids
 * (and their op ids). */
int jobs_db_active(struct store *st, int64_t *ids, int64_t *op_ids, int max, mp_err *e);

struct batch_row {
	int64_t op_id;
	int64_t seq;
	const char *kind;            /* static */
	uint64_t size_kb;
	int node;                    /* < 0: global */
	bool grow;
	int64_t started_ns;
	uint64_t before, written, after, requested, achieved;
	int64_t elapsed_ns, latency_ns;
};

/* Transaction "batches": n batches, all or none. */
int batches_db_insert(struct store *st, const struct batch_row *rows, int n, mp_err *e);

#endif
