/* The schedules table. Every function here takes the store's lock itself. */
#ifndef MPD_STORE_SCHEDULES_H
#define MPD_STORE_SCHEDULES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct store;
struct op_record;

struct schedule_new {
	const char *cron;            /* validated */
	const char *timezone;        /* canonical */
	const json_t *action;        /* borrowed, validated */
	bool enabled;
	int64_t misfire_grace_s;
	int64_t created_ns;
	bool has_uid;
	uid_t uid;
	const char *name;            /* NULL or "" when the uid has no name */
	int64_t next_run_ns;         /* 0: none (disabled) */
	int64_t max_schedules;       /* the cap: with this many already, nothing is inserted */
};

/* Inserts, unless max_schedules are there already (409 MPE_SCHEDULE_LIMIT; the count and the
 * insert are one statement); returns the new id (> 0) or -1. */
int64_t sched_store_insert(struct store *st, const struct schedule_new *n, mp_err *e);

/* One schedule as the API shows it (owned by the caller); NULL + 404 MPE_SCHEDULE_NOT_FOUND. */
json_t *sched_store_get(struct store *st, int64_t id, mp_err *e);
/* One schedule of a list as sched_store_list_each hands it over: every pointer is borrowed from
 * the row being read, valid only during the call; a NULL text is SQL NULL. */
struct sched_row {
	int64_t id;
	const char *cron, *timezone;
	const char *action;          /* the stored JSON text */
	bool enabled;
	int64_t misfire_grace_s, created_ns;
	bool has_created_by_uid;
	int64_t created_by_uid;
	const char *created_by_name;
	bool has_next_run, has_last_run, has_last_due, has_last_job, has_last_op;
	int64_t next_run_ns, last_run_ns, last_due_ns, last_job_id, last_op_id;
	const char *last_status, *last_error;
};
/* 0, or -1 when out of memory (the list stops with internal.nomem). */
typedef int (*sched_row_fn)(const struct sched_row *r, void *arg);
/* Hands up to limit schedules with ids above after_id to fn, by id, and sets *next_after_id to
 * the next page's cursor (0 on the last page). No JSON is built here: a page of 1000 is written
 * as text by its caller (api/schedules.c). The reader's lock is held while fn runs. */
int sched_store_list_each(struct store *st, int64_t after_id, int limit, sched_row_fn fn, void *arg,
			  int64_t *next_after_id, mp_err *e);
/* Deletes one; 404 MPE_SCHEDULE_NOT_FOUND when there is none. */
int sched_store_delete(struct store *st, int64_t id, mp_err *e);

/* A schedule whose next run is due. Strings are owned by the array (sched_due_free). */
struct sched_due {
	int64_t id;
	char *cron;
	char *timezone;
	json_t *action;              /* owned */
	int64_t misfire_grace_s;
	int64_t next_run_ns;
};
/* The enabled schedules with next_run_ns <= now_ns, by next_run_ns. *out is NULL when none. */
int sched_store_due(struct store *st, int64_t now_ns, struct sched_due **out, size_t *n, mp_err *e);
void sched_due_free(struct sched_due *d, size_t n);

/* The earliest next_run_ns of the enabled schedules, 0 when none. */
int64_t sched_store_next_wake(struct store *st, mp_err *e);

/* What the scheduler did with a due schedule. */
struct sched_ran {
	int64_t run_ns;              /* now */
	int64_t due_ns;              /* the due minute it acted on */
	const char *status;          /* "submitted", "skipped" or "failed" */
	int64_t job_id;              /* 0 when none */
	const char *error;           /* NULL when none */
	int64_t next_run_ns;         /* 0: none */
	/* The "schedule.run" history operations of this run, NULL when none: the occurrences
	 * skipped, and a run that could not be submitted. The schedule's last_operation_id is the failure's,
	 * else the skip's. */
	const struct op_record *skipped_op, *failed_op;
};
/* Transaction "schedule_run": inserts the run's operations, records the run and moves
 * next_run_ns, all or nothing. A schedule deleted meanwhile is not an error (0 rows). */
int sched_store_ran(struct store *st, int64_t id, const struct sched_ran *r, mp_err *e);

#endif
