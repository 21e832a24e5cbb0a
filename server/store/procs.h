/* History writes of the process operations (process.launch, process.migrate's and
 * process.collapse's jobs go through the runner; launches and watch samples are recorded here).
 * Each function takes the store lock itself: callers never hold it. */
#ifndef MPD_STORE_PROCS_H
#define MPD_STORE_PROCS_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/store/history.h"

struct store;

/* Inserts op (usually status "running") and returns its id (> 0), or -1. */
int64_t procs_db_begin(struct store *st, const struct op_record *op, mp_err *e);
/* Finishes a running operation with its outcome; result is borrowed. */
int procs_db_finish(struct store *st, int64_t id, const char *status, int err_no, const char *error,
		    json_t *result, mp_err *e);
/* Inserts a finished operation in one step (a watch sample) and returns its id, or -1. */
int64_t procs_db_record(struct store *st, const struct op_record *op, mp_err *e);

#endif
