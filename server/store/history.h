/* Operations: the history of every change and measurement. An operation is inserted when it
 * starts (status "running" for long ones) and finished once, with its outcome. */
#ifndef MPD_STORE_HISTORY_H
#define MPD_STORE_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct store;

struct op_record {
	const char *kind;            /* "knobs.set", "hugepages.resize", ... */
	const char *source;          /* "api" or "scheduler" */
	bool has_actor;              /* false for the daemon itself (scheduler) */
	uid_t actor_uid;
	const char *actor_name;      /* NULL or "" when the uid has no name */
	int64_t started_ns;          /* CLOCK_REALTIME ns */
	int64_t finished_ns;         /* 0 while running */
	const char *status;          /* "ok", "failed", "rolled_back", "partial", "running", ... */
	int err_no;                  /* 0 when none */
	const char *error;           /* NULL when none */
	json_t *request;             /* borrowed; NULL or the request as JSON */
	json_t *result;              /* borrowed; NULL or the outcome as JSON */
	const char *kernel_release;
};

/* Inserts an operation and returns its id (> 0), or -1. Call with the store locked. */
int64_t history_insert(struct store *st, const struct op_record *op, mp_err *e);
/* Sets the outcome of a running operation. Call with the store locked. */
int history_finish(struct store *st, int64_t id, const char *status, int64_t finished_ns, int err_no,
		   const char *error, json_t *result, mp_err *e);

#endif
