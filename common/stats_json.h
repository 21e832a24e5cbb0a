/* The JSON of a comparison (common/stats.h), the one builder of the shape experiments and
 * history compare answer with:
 *   {"metric", "baseline", "arm", "n": [nb, na], "median_diff_pct", "ci95_pct": [lo, hi],
 *    "mean_diff_pct", "welch_ci95_pct": [lo, hi], "p_value", "p_exact", "different",
 *    "unreliable", "verdict"}
 * A figure that does not exist (a % of a baseline of 0, an interval too few rounds cannot give)
 * is null, never NaN. */
#ifndef MPD_STATS_JSON_H
#define MPD_STATS_JSON_H

#include <jansson.h>

#include "common/stats.h"

/* Strings are copied; returns a new object (caller owns) or NULL when out of memory. */
json_t *stats_cmp_json(const char *metric, const char *baseline, const char *arm, const struct stats_cmp *c);
/* A double as JSON: a real, or null when NaN or infinite. New reference. */
json_t *stats_json_num(double v);

#endif
