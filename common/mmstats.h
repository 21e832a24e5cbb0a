/* Latency statistics computed the way mmtests builds its compare tables (SummariseVariabletime,
 * Stat.pm): samples sorted ascending (lower is better); percentile N is sorted[max(1, floor(n*N/100)) - 1]
 * (floor nearest rank, no interpolation); amean the arithmetic mean; stddev the sample standard
 * deviation (n - 1; NaN when n <= 1). */
#ifndef MPD_MMSTATS_H
#define MPD_MMSTATS_H

#include <stddef.h>

struct mmstats {
	size_t count;
	double min, q1, q2, q3, max;
	double p90, p95, p99;         /* mmtests "Max-90", "Max-95", "Max-99" */
	double amean, stddev;         /* stddev is NaN when count <= 1 */
};

/* The percentile of sorted (ascending, n >= 1) samples, floor nearest rank. */
double mmstats_percentile(const double *sorted, size_t n, int pct);
/* Fills *out from n ascending samples; n == 0 gives count 0 and NaN everywhere else. */
void mmstats_sorted(const double *sorted, size_t n, struct mmstats *out);

/* The same statistics from a stream of n ascending samples whose mean is known beforehand (the
 * store gets n and the mean from SQL, then walks an index in latency order): no buffer, the same
 * percentile ranks. begin, then add() exactly n samples in ascending order, then end(). */
struct mmstats_walk {
	struct mmstats *out;         /* borrowed */
	size_t n, i;
	size_t rank[6];              /* 0-based positions of q1, q2, q3, p90, p95, p99 */
	double m2;
};
void mmstats_walk_begin(struct mmstats_walk *w, size_t n, double mean, struct mmstats *out);
void mmstats_walk_add(struct mmstats_walk *w, double v);
void mmstats_walk_end(struct mmstats_walk *w);

#endif
