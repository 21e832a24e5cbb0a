/* Inside common/stats: the pairwise differences of two samples (common/stats_hl.c). Both samples
 * ascending, finite, non-empty; nothing is allocated here. */
#ifndef MPD_STATS_HL_H
#define MPD_STATS_HL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The r-th smallest (1-based) of the nb*na differences a[j] - b[i]; scratch: room >= nb + na
 * doubles of the caller's, overwritten. */
double stats_diff_rank(const double *b, size_t nb, const double *a, size_t na, uint64_t r, double *scratch,
		       size_t room);
/* U of a - mu against b (pairs a[j] - mu > b[i], equal ones 1/2) and the tie term sum(t^3 - t) of
 * the two together, from midranks in one merge. */
void stats_u_at(const double *b, size_t nb, const double *a, size_t na, double mu, double *u, double *tie_term);
/* With ties the interval is the set of shifts mu the U test itself does not reject,
 * {mu : -zq <= z(mu) <= zq} with z tie- and continuity-corrected at each mu (as R's wilcox.test
 * finds it by root finding), its ends snapped to the differences where U steps. The ends are
 * the set's infimum and supremum: with discrete figures the set may be open there (every shift in
 * (0, 1) accepted, 0 itself rejected), so whether 0 is rejected is the test's to say, not the
 * closed interval's. -1 when no shift is rejected at all. */
int stats_hl_tied_interval(const double *b, size_t nb, const double *a, size_t na, double zq, double ci[2]);

#endif
