/* How a result's "conditions" (ops/conditions.h) is kept in the database: the measured counts,
 * with buddyinfo's "after" as what moved since "before" and nothing that can be computed from
 * them; the API answers the full form, rebuilt on read (store/conditions.c says how). Rows in the
 * full form, written before, read as they are. Used by the store's writers and readers of the
 * result columns (operations.result, jobs.result) only. */
#ifndef MPD_STORE_CONDITIONS_H
#define MPD_STORE_CONDITIONS_H

#include <jansson.h>

/* The form to store for result (borrowed): a new reference, result itself when there is nothing
 * to shorten; NULL when out of memory. result is not changed. */
json_t *cond_stored_form(json_t *result);
/* Turns a stored result, in place, into the answer's form; a full form is left as it is. */
void cond_answer_form(json_t *result);

#endif
