/* Statistics for A/B comparisons (experiments, history compare): is an arm different from the
 * baseline, and by how much, at 95 % confidence. Pure C: no daemon code, no global state.
 *
 * Methods (docs/DESIGN.md "Statistics" gives the reasons):
 * - The difference of medians is the headline (median(arm) - median(base), in % of the baseline's
 *   median). Its 95 % interval is the Hodges-Lehmann one: the order statistics of the nb*na pairwise
 *   differences arm[j] - base[i] picked by the Mann-Whitney U distribution (Bauer 1972; Hollander &
 *   Wolfe; R's wilcox.test(conf.int = TRUE)). Distribution-free, exact for small samples, needs no
 *   seed, and it is the interval the U test inverts: when there are no ties it excludes 0 exactly
 *   when the exact test rejects, so the interval and the p-value never disagree. A bootstrap was
 *   not taken: its coverage is only approximate at 10 rounds, it needs a seed to be reproducible,
 *   and 2,000 resamples of 10,000 a side cost some hundreds of ms against a 50 ms budget. With ties
 *   the interval is the set of shifts the (tie-corrected) test accepts (common/stats_hl.h).
 * - Welch's interval for the difference of means (Student t with the Welch-Satterthwaite df).
 * - The two-sided Mann-Whitney U p-value: exact (the null distribution of U counted) when there
 *   are no ties and nb*na <= STATS_EXACT_MAX_PAIRS; otherwise the normal approximation with the
 *   tie correction of the variance and a continuity correction of 0.5 — the formulas of SciPy's
 *   mannwhitneyu(method='asymptotic'), which its method='auto' also uses with ties.
 * - The verdict in ministat's words; "different" needs p < 0.05 and, without ties, the interval
 *   clear of 0 (with ties the interval's closed ends may touch 0 where the test rejects it).
 *
 * Errors: functions return 0, or -1 with errno EINVAL (a NULL pointer, no samples, a sample that
 * is NaN or beyond +-STATS_MAX_ABS), ENOMEM, or EDOM (stats_p95_ci: too few samples for the
 * interval). */
#ifndef MPD_STATS_H
#define MPD_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATS_ALPHA 0.05
/* Exact U distribution up to this many pairs (50 rounds per arm): the count takes
 * (min(nb,na)+1) * (nb*na+1) doubles twice (about 2 MB at the limit) and ~(nb*na)^2/4 steps. */
#define STATS_EXACT_MAX_PAIRS 2500u
/* Samples beyond this magnitude are refused: below it no difference, sum or square of deviations
 * overflows (1e100 is far past any count, byte or nanosecond figure). */
#define STATS_MAX_ABS 1e100
/* google/benchmark's rule: below this many rounds an arm's result is unreliable. */
#define STATS_MIN_RELIABLE 9u

struct stats_summary {
	size_t n;
	double median;   /* the middle one, or the mean of the two middle ones */
	double mean;
	double sd;       /* sample standard deviation (n - 1); NaN when n < 2 */
	double min, max;
};

/* The caller owns *out. Copies and sorts x (n doubles, freed before return). */
int stats_summary(const double *x, size_t n, struct stats_summary *out);

/* One arm against the baseline. Every *_pct is of the baseline's |median| (or |mean| for the
 * mean's) and NaN when that is 0; every difference is arm - base. */
struct stats_cmp {
	struct stats_summary base, arm;
	double median_diff, median_diff_pct;
	double hl_shift, hl_shift_pct;      /* Hodges-Lehmann estimate: median of the pairwise differences */
	bool ci_ok;                         /* false: so few rounds that no 95 % interval exists
					       (e.g. 3 and 3: the smallest two-sided p is 0.1) */
	double ci95[2], ci95_pct[2];        /* the HL interval [lo, hi]; NaN when !ci_ok */
	double ci_level;                    /* its coverage: exact (>= 0.95) or 0.95 (normal) */
	bool welch_ok;                      /* false when n < 2 in an arm or both variances are 0 */
	double mean_diff, mean_diff_pct;
	double welch_ci95[2], welch_ci95_pct[2], welch_df;
	double u;                           /* U of the arm: pairs with arm > base, ties count 1/2 */
	double p_value;                     /* two-sided Mann-Whitney U */
	bool p_exact, ties;
	bool unreliable;                    /* an arm has fewer than STATS_MIN_RELIABLE samples */
	bool different;                     /* p < 0.05 and (without ties) the interval excludes 0 */
	char verdict[192];                  /* ministat's words, see stats_compare */
};

/* base: nb >= 1 samples, arm: na >= 1 (caller's, read only). The caller owns *out; nothing is
 * kept. Allocates scratch (sorted copies, the exact distribution within the bound above), freed
 * before return. seed: the statistics here are deterministic and use none of it; it is kept so
 * that a resampling statistic added later is reproducible from what callers already store.
 * verdict:
 *   "Difference at 95% confidence: -31.2 % ± 8.9 %"   (the difference of medians ± h, when the HL
 *        interval is symmetric about it to the printed precision)
 *   "Difference at 95% confidence: -3.8 % (interval -11.5 % to -0.3 %)"   (when it is not: "d ± h"
 *        with the wider side as h could span 0 while the interval does not)
 *   "No difference proven at 95% confidence"
 * followed, under STATS_MIN_RELIABLE rounds, by " (unreliable: 5 and 10 rounds, 9+ recommended)".
 * When the baseline's median is 0 the difference is printed in the metric's unit. */
int stats_compare(const double *base, size_t nb, const double *arm, size_t na, uint64_t seed,
		  struct stats_cmp *out);

/* mmtests' distribution-free 95 % interval of the 95th percentile: *p95 is the floor nearest rank
 * one (common/mmstats.h), [*lo, *hi] the order statistics x(l) <= x(u) with l, u from the
 * Binomial(n, 0.95) distribution of B = #{x <= the true p95}: l the largest with P(B < l) <= 2.5 %,
 * u the smallest with P(B >= u) <= 2.5 %, so P(l <= B < u) >= 95 %. The upper end exists only when
 * 0.95^n <= 0.025, i.e. n >= 72; below that it returns -1 with errno EDOM, *p95 still filled
 * (n >= 1) and *lo, *hi NaN. */
int stats_p95_ci(const double *x, size_t n, double *p95, double *lo, double *hi);

/* The distributions underneath, exposed for the tests and for callers that print them. */
/* P(U <= k) under H0 for samples of nb and na without ties, for k = 0..nb*na: fills cdf (caller's,
 * nb*na + 1 doubles). -1 with EINVAL beyond STATS_EXACT_MAX_PAIRS, ENOMEM. */
int stats_mwu_cdf(size_t nb, size_t na, double *cdf);
/* The Student t quantile for probability p in (0, 1) and df > 0 degrees of freedom. */
double stats_t_quantile(double p, double df);
/* P(B <= k) for B ~ Binomial(n, p). */
double stats_binom_cdf(size_t k, size_t n, double p);

#endif
