/* Pending restores (the restores table): a value an operation must put back, written before the
 * change is made. Every function takes the writer's lock itself (store/db.h's lock rule). */
#ifndef MPD_STORE_RESTORES_H
#define MPD_STORE_RESTORES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct store;
struct op_record;

/* Records that op_id is about to change target (what: "knob" or "pool") from value. Returns the
 * row's id (> 0), or -1. */
int64_t restores_db_add(struct store *st, int64_t op_id, const char *what, const char *target, const char *value,
			mp_err *e);
/* The value is back (or given up on, with the outcome recorded in the operation): deletes the row. */
int restores_db_done(struct store *st, int64_t id, mp_err *e);
/* Every pending row, newest first (the order to restore in): [{"id", "op_id", "what", "target",
 * "value"}] (owned), or NULL. */
json_t *restores_db_pending(struct store *st, mp_err *e);
/* Transaction "restore_at_start": records op (what the start-up restore did) and deletes the n
 * rows it restored, all or nothing. Returns the operation's id, or -1. */
int64_t restores_db_record(struct store *st, const struct op_record *op, const int64_t *ids, size_t n, mp_err *e);

#endif
