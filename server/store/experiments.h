/* An experiment's raw samples (the experiment_samples table): every run of an arm writes one row
 * per metric, in one transaction, as the run ends, so that a daemon killed mid-experiment keeps
 * the runs it finished. Each function takes the writer's or reader's lock itself. */
#ifndef MPD_STORE_EXPERIMENTS_H
#define MPD_STORE_EXPERIMENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct store;

/* One run: metrics is {name: number} (borrowed; members that are not numbers are skipped).
 * Transaction "experiment_run": all of the run's rows or none. 0, or -1. */
int exp_db_add_run(struct store *st, int64_t op_id, int round, bool warmup, int seq, const char *arm,
		   const json_t *metrics, mp_err *e);
/* Every sample of op_id in run order: [{"round", "warmup", "seq", "arm", "metric", "value"}]
 * (owned), or NULL. */
json_t *exp_db_samples(struct store *st, int64_t op_id, mp_err *e);

#endif
