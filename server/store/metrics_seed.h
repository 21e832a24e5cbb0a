/* Seeds the in-memory counters (server/metrics.h, through the store's events) from the database, once,
 * at start. */
#ifndef MPD_STORE_METRICS_SEED_H
#define MPD_STORE_METRICS_SEED_H

#include <stdint.h>

#include "common/err.h"

struct store;

/* Call after store_open and store_set_events, and before anything else writes (the job runner's
 * recovery included). Without events it scans nothing. */
int store_metrics_seed(struct store *st, mp_err *e);
/* The database's size on disk (the file and its WAL), -1 when it cannot be read. */
int64_t store_file_bytes(struct store *st);

#endif
