/* SQL for the jobs and batches tables (schema/002_jobs.sql). Every function is called with the
 * store locked. */
#ifndef MPD_STORE_JOBS_H
#define MPD_STORE_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct store;

struct job_row {
	const char *kind;
	const char *status;
	const char *conflict_key;    /* NULL for none */
	const char *source;
	int64_t schedule_id;         /* 0: none */
	bool has_actor;
	uid_t actor_uid;
	const char *actor_name;
	int64_t op_id;
	int64_t created_ns;
	json_t *request;             /* borrowed */
	json_t *progress;            /* borrowed */
};

int64_t jobs_db_insert(struct store *st, const struct job_row *r, mp_err *e);
int jobs_db_set_running(struct store *st, int64_t id, int64_t started_ns, mp_err *e);
int jobs_db_finish(struct store *st, int64_t id, const char *status, int64_t finished_ns, const char *reason,
		   int err_no, const char *error, json_t *progress, json_t *result, mp_err *e);
/* The job as JSON (owned by the caller), NULL + 404 when unknown. */
json_t *jobs_db_get(struct store *st, int64_t id, mp_err *e);
json_t *jobs_db_list(struct store *st, const char *kind, const char *status, int64_t schedule_id,
		     int64_t before_id, int limit, mp_err *e);

/* Jobs left queued or running by a previous daemon: fills up to max ids (and their op ids). */
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

/* Inserts n batches in one transaction. */
int batches_db_insert(struct store *st, const struct batch_row *rows, int n, mp_err *e);

#endif
