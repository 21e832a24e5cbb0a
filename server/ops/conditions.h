/* Under what conditions an operation was measured — one mechanism for every recorded operation
 * (every job: resizes, migrations, collapses, probes; and knob changes): the kernel release, the
 * THP/NUMA settings in force, the deltas of the kernel's memory counters over the operation
 * (/proc/vmstat's thp_*, compact_*, htlb_buddy_alloc_*, numa_*, pgmigrate_*; each node's
 * numastat) and the free blocks per order per node with the kernel's unusable and fragmentation
 * indices (common/extfrag.h) at start and end. Stored as the "conditions" member of the
 * operation's result. Counters are system-wide: what runs beside the operation counts too. */
#ifndef MPD_OPS_CONDITIONS_H
#define MPD_OPS_CONDITIONS_H

#include <jansson.h>

#include "server/jobs/job_ctx.h"

struct app;
struct cond_snap;                /* opaque: the counters at the start */

/* Reads the counters now. NULL when out of memory or /proc/vmstat is unreadable (nothing is
 * recorded then, rather than a wrong delta). */
struct cond_snap *cond_begin(const struct app *app);
/* Reads them again and returns {"kernel_release", "settings", "vmstat_delta", "numastat_delta",
 * "buddyinfo": {"before", "after"}} (owned); frees s. A counter that did not move is left out. */
json_t *cond_end(const struct app *app, struct cond_snap *s);

/* The same around every job (ops/kinds.c hands it to the runner). */
extern const struct job_measure cond_job_measure;

/* A node's free blocks as JSON: {"zones": [...], "free_blocks": [per order], "free_pages",
 * "unusable_index": [per order, 0..1], "fragmentation_index": [per order, -1 or 0..1]}. */
struct mm_snapshot;
json_t *cond_buddy_json(const struct mm_snapshot *m);

#endif
