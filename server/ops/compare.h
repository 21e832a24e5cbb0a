/* History compare (GET /v1/history/compare?ids=A,B,...): recorded operations side by side in the
 * shape of the seeds' tables — one row per metric, one column per run, and each run's change
 * against the first in percent. A column may hold several runs (ids=A:B:C,D:E:F, several runs of
 * one probe): their figures are then samples, the column shows their median, and each column is
 * compared with the first by common/stats (the difference of medians with its 95 % interval, the
 * Mann-Whitney U p-value, ministat's verdict). */
#ifndef MPD_OPS_COMPARE_H
#define MPD_OPS_COMPARE_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"

struct app;

#define COMPARE_MAX_RUNS 16     /* columns */
#define COMPARE_MAX_IDS  256    /* runs in all the columns together */

struct compare_cols {
	int64_t ids[COMPARE_MAX_IDS];
	int col[COMPARE_MAX_IDS];      /* the column of ids[i], 0..ncols-1, non-decreasing */
	int nids, ncols;
};

/* "12,15" or "12:13:14,15:16:17": columns separated by commas, a column's runs by colons, each a
 * positive decimal id, 2..COMPARE_MAX_RUNS columns and at most COMPARE_MAX_IDS ids. Every id once.
 * -1 with 400 request.bad_query otherwise. */
int compare_parse_ids(const char *s, struct compare_cols *out, mp_err *e);

/* Returns {"runs": [...], "rows": [{"metric", "values", "change_pct"}]} (owned), a row with a
 * figure that has its own interval also "value_ci95" (a resize's latency_ns.p95); when a column
 * has several runs also "columns": [{"label", "ids"}], per row "n", "means", "ci95_pct", "p_value",
 * "different" (per column, null for the first), and "comparisons" (common/stats_json.h, one per
 * metric and column after the first). NULL: 404 history.not_found naming the first unknown id. */
json_t *history_compare(const struct app *app, const struct compare_cols *cc, mp_err *e);

/* The metrics history compare takes from a result (its numbers, and those one object down as
 * "key.sub", after prefix) and from an operation's conditions (vmstat.NAME, numastat.NODE.NAME),
 * added to m: what an experiment's run records too (ops/exp_round.c). */
void compare_flatten(json_t *m, const char *prefix, const json_t *obj);
void compare_condition_metrics(json_t *m, const json_t *cond);

#endif
