/* The drift history: the profile.drift operations (history.h writes them: a drift is inserted
 * when first seen and its row updated with history_finish while it lasts, so a lasting drift is
 * one row). This is their reader, with each row's drift in full. */
#ifndef MPD_STORE_DRIFT_H
#define MPD_STORE_DRIFT_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"

struct store;

/* Newest first: at most limit (1..1000) rows, of key only when key is not NULL, with ids below
 * before_id when it is > 0. *items is an array of {id, first_seen_ns, last_seen_ns, action,
 * drift: the request, result: the result}; *next_before_id the cursor of the next page, 0 on the
 * last. Runs on the reader. 0, or -1 with e. */
int drift_list(struct store *st, const char *key, int64_t before_id, int limit, json_t **items,
	       int64_t *next_before_id, mp_err *e);

#endif
