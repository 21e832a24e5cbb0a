/* The receiver of the store's events (server/store/events.h) that main() registers: each commit
 * is counted for GET /metrics (server/metrics.c) and each operation that reaches its final status
 * is logged once (server/oplog.c). The one place every operation of every kind passes: an
 * operation is written only through the store, and the store reports every write it commits. */
#ifndef MPD_OBSERVE_H
#define MPD_OBSERVE_H

struct store_events;
extern const struct store_events observe_store_events;

/* Forgets the operations remembered as running (tests, and main() before the seed). */
void observe_reset(void);

#endif
