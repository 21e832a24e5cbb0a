/* Retention: what the store keeps, and the maintenance pass that removes the rest (retain.c).
 *
 * The rule. An operation (with its knob changes and batches) is removed when it started more than
 * max_age_ns ago or when more than max_operations newer ones exist; a finished job likewise by
 * age (of its end) and by max_jobs; beyond max_batches batch rows, the oldest operations lose
 * their batches (their summary, result and history stay); beyond max_bytes of pages in use, the
 * oldest operations and finished jobs go in the share the excess says (store_size_caps, turned into
 * the two counts above for one pass by jobs/maint.c). Never removed: an operation still
 * "running" (a change or job in progress, or one the next start must mark), and a job "queued" or
 * "running", nor the operation such a job points at. Schedules are not pruned (they are capped:
 * max-schedules). */
#ifndef MPD_STORE_RETAIN_H
#define MPD_STORE_RETAIN_H

#include <stdint.h>

#include "common/err.h"

struct store;

struct retention {
	int64_t max_age_ns;          /* 0: keep regardless of age */
	int64_t max_operations;      /* 0: no cap by count (likewise below) */
	int64_t max_batches;
	int64_t max_jobs;
	int64_t max_bytes;           /* the database's pages in use, in bytes */
};

#define RETAIN_DEFAULT_DAYS        90
#define RETAIN_DEFAULT_OPERATIONS  1000000
#define RETAIN_DEFAULT_BATCHES     1000000
#define RETAIN_DEFAULT_JOBS        100000
#define RETAIN_DEFAULT_BYTES       (1LL << 30)
#define RETAIN_MIN_BYTES           (1LL << 20)   /* an empty database's pages are ~200 kB */

/* How many rows one transaction removes at most: the writer is never held for long, and a
 * change waiting behind the pass waits for one small transaction, not for the pass. */
#define RETAIN_CHUNK 256

/* What one pass removed. */
struct retain_counts {
	int64_t operations, batches, jobs;
};

/* One bounded maintenance step: up to max_tx transactions of at most RETAIN_CHUNK rows each,
 * oldest first, the writer lock taken and released per transaction (a request's write goes in
 * between). now_ns is the wall clock the ages are measured from. Adds what it removed to *n;
 * returns 1 when there is more to remove, 0 when nothing is left, -1 on error. */
/* The size cap as counts: when the database's pages in use (page_count - freelist_count, times
 * the page size, on the reader's snapshot) exceed max_bytes, how many of the newest operations and
 * jobs to keep so that the same share of rows would fit in nine tenths of it (rows are alike
 * enough that the share of rows is the share of pages; the tenth spare keeps a database at its cap
 * from losing a few rows every pass). -1 for both when within the cap. *used is the bytes in use.
 * 0, or -1 on a read error. */
int store_size_caps(struct store *st, int64_t max_bytes, int64_t *ops, int64_t *jobs, int64_t *used, mp_err *e);

int store_prune(struct store *st, const struct retention *r, int64_t now_ns, int max_tx, struct retain_counts *n,
		mp_err *e);

#endif
