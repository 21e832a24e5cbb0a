/* Operations: the history of every change and measurement. An operation is inserted when it
 * starts (status "running" for long ones) and finished once, with its outcome. */
#ifndef MPD_STORE_HISTORY_H
#define MPD_STORE_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct store;

struct op_record {
	const char *kind;            /* "knobs.set", "hugepages.resize", ... */
	const char *source;          /* "api" or "scheduler" */
	bool has_actor;              /* false for the daemon itself (scheduler) */
	uid_t actor_uid;
	const char *actor_name;      /* NULL or "" when the uid has no name; "token:NAME" (no uid) for a token */
	int64_t started_ns;          /* CLOCK_REALTIME ns */
	int64_t finished_ns;         /* 0 while running */
	const char *status;          /* "ok", "failed", "rolled_back", "partial", "running", ... */
	int err_no;                  /* 0 when none */
	const char *error;           /* NULL when none */
	json_t *request;             /* borrowed; NULL or the request as JSON */
	json_t *result;              /* borrowed; NULL or the outcome as JSON */
	const char *kernel_release;
};

/* Inserts an operation (one autocommit) and returns its id (> 0), or -1. */
int64_t history_insert(struct store *st, const struct op_record *op, mp_err *e);

/* At start, after the job runner's recovery: marks every operation still "running" that another
 * daemon instance wrote (a knob change cut short by a crash, or one whose outcome could not be
 * recorded) "interrupted", finished now. Rows carry the instance id of the store that wrote them
 * (store_instance), so changes this daemon is already making are left alone whatever the wall
 * clock did in between (a clock stepped back made "started before us" a lie). Returns how many,
 * or -1. */
int history_mark_unfinished(struct store *st, int64_t now_ns, mp_err *e);

/* One knob write of an operation (the knob_changes table). */
struct knob_change_rec {
	int seq;                     /* order of the write within the operation */
	const char *knob;
	const char *old;             /* kernel text before; NULL when unknown */
	const char *new_value;       /* kernel text requested */
	const char *status;          /* written, failed, restored, restore_failed, skipped */
	int err_no;                  /* 0 when none */
};

/* The outcome of a running operation. */
struct op_outcome {
	const char *status;
	int64_t finished_ns;
	int err_no;                  /* 0 when none */
	const char *error;           /* NULL when none */
	json_t *result;              /* borrowed; NULL keeps the row's result */
};

/* What a knob change records when it ends (ops/knobs.c's knob_tx_write): operation id's n knob
 * changes and its outcome; the pointers are borrowed. */
struct knob_record {
	int64_t id;
	const struct knob_change_rec *kc;
	size_t n;
	struct op_outcome out;
};

/* Sets the outcome of a running operation (one autocommit). An unknown id is store.error. */
int history_finish(struct store *st, int64_t id, const struct op_outcome *out, mp_err *e);

/* Transaction "knob_record": the n knob changes of operation id and its outcome, all or nothing.
 * An unknown id is store.error. */
int history_record_knobs(struct store *st, int64_t id, const struct knob_change_rec *kc, size_t n,
			 const struct op_outcome *out, mp_err *e);
/* Transaction "knob_record" of an operation not inserted before: op (its status is out's), its n
 * knob changes and its outcome, all or nothing. Fills *id. */
int history_insert_knobs(struct store *st, const struct op_record *op, const struct knob_change_rec *kc, size_t n,
			 const struct op_outcome *out, int64_t *id, mp_err *e);

/* Listing: newest first (id descending). Zero/NULL fields do not filter. */
struct history_filter {
	const char *kind;
	const char *status;
	bool has_since, has_until;
	int64_t since_ns;            /* started_ns >= since_ns */
	int64_t until_ns;            /* started_ns < until_ns */
	int64_t before_id;           /* keyset cursor: id < before_id; 0 for the first page */
	int limit;                   /* 1..1000 */
};
/* One operation of a list, as history_list_each hands it to its callback: every pointer is
 * borrowed from the row being read and valid only during the call; a NULL text is SQL NULL. */
struct op_row {
	int64_t id;
	const char *kind, *source, *status;
	bool has_uid;                /* actor_uid not NULL */
	int64_t uid;
	const char *actor_name;
	bool has_started, has_finished, has_errno;
	int64_t started_ns, finished_ns, err_no;
	const char *error;
	const char *summary;         /* store/summary.h's line (never NULL; may not be UTF-8) */
};
/* 0, or -1 when it is out of memory (the list stops with internal.nomem). */
typedef int (*op_row_fn)(const struct op_row *r, void *arg);

/* Hands each operation of the page to fn in order and sets *next_before_id to the cursor for
 * the next page (0 when this is the last). No JSON is built here: a page of 1000 is written by
 * its caller straight into the answer's text (api/history.c). Runs on the reader, whose lock is
 * held while fn runs: fn only writes memory. */
int history_list_each(struct store *st, const struct history_filter *f, op_row_fn fn, void *arg,
		      int64_t *next_before_id, mp_err *e);
/* One operation in full, with its knob changes; MPE_HISTORY_NOT_FOUND when none. Runs on the reader. */
json_t *history_get(struct store *st, int64_t id, mp_err *e);

#endif
