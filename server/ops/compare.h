/* History compare (GET /v1/history/compare?ids=A,B,...): recorded operations side by side in the
 * shape of the seeds' tables — one row per metric, one column per run, and each run's change
 * against the first in percent. */
#ifndef MPD_OPS_COMPARE_H
#define MPD_OPS_COMPARE_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"

struct app;

#define COMPARE_MAX_RUNS 16

/* ids: 2..COMPARE_MAX_RUNS operation ids. Returns {"runs": [...], "rows": [{"metric", "values",
 * "change_pct"}]} (owned), or NULL: 404 history.not_found naming the first unknown id. */
json_t *history_compare(const struct app *app, const int64_t *ids, int n, mp_err *e);

/* The metrics history compare takes from a result (its numbers, and those one object down as
 * "key.sub", after prefix) and from an operation's conditions (vmstat.NAME, numastat.NODE.NAME),
 * added to m: what an experiment's run records too (ops/exp_round.c). */
void compare_flatten(json_t *m, const char *prefix, const json_t *obj);
void compare_condition_metrics(json_t *m, const json_t *cond);

#endif
