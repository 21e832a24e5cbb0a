/* Per-page latency statistics over the batches table, in the mmtests shape (common/mmstats.h). */
#ifndef MPD_STORE_STATS_H
#define MPD_STORE_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/mmstats.h"

struct store;

struct stats_filter {
	const char *kind;            /* "hugepages.resize" */
	bool grow;                   /* grow batches (allocation latency) or shrink batches */
	uint64_t size_kb;            /* 0: every size */
	int node;                    /* < 0: every node, global writes included */
	int64_t since_ns, until_ns;  /* 0: unbounded; batch started_ns in [since, until) */
};

/* Samples are batches' latency_ns (per page), exact mmtests nearest-rank percentiles. On the
 * reader, in one read transaction, walking a covering index in latency order: up to 2^20 samples
 * (8 MiB) are kept and summarised in one pass; a larger population is counted in SQL first and
 * walked again keeping nothing. Memory is bounded whatever the rows, one scan runs at a time (the
 * reader's lock), and no writer ever waits for it. */
int stats_latency(struct store *st, const struct stats_filter *f, struct mmstats *out, mp_err *e);
/* The statistics of one operation's batches (history compare); count 0 when it has none. On the
 * reader. p95_ci (NULL: not wanted) gets mmtests' distribution-free 95 % interval of the 95th
 * percentile (common/stats.h stats_p95_ci), NaN when the batches are fewer than 72. 0 or -1. */
int stats_op_latency(struct store *st, int64_t op_id, struct mmstats *out, double p95_ci[2], mp_err *e);

#endif
