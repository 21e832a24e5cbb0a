/* The comparison of an arm against the baseline (common/stats.h says what and why). */
#include "common/stats.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mmstats.h"
#include "common/stats_hl.h"

#define Z975 1.959963984540054   /* the standard normal's 97.5 % quantile */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A sorted copy of x (caller frees), or NULL: EINVAL for no samples or one out of range. */
static double *sorted_copy(const double *x, size_t n)
{
	double *s;

	if (!x || n == 0) {
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!(fabs(x[i]) <= STATS_MAX_ABS)) {   /* NaN fails this too */
			errno = EINVAL;
			return NULL;
		}
	if (!(s = malloc(n * sizeof *s))) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(s, x, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_double);
	return s;
}

static void summary_sorted(const double *s, size_t n, struct stats_summary *out)
{
	double sum = 0, m2 = 0, mean;

	for (size_t i = 0; i < n; i++)
		sum += s[i];
	mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		m2 += (s[i] - mean) * (s[i] - mean);
	*out = (struct stats_summary){
		.n = n, .mean = mean, .min = s[0], .max = s[n - 1],
		.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2,
		.sd = n > 1 ? sqrt(m2 / (double)(n - 1)) : NAN,
	};
}

int stats_summary(const double *x, size_t n, struct stats_summary *out)
{
	double *s;

	if (!out) {
		errno = EINVAL;
		return -1;
	}
	if (!(s = sorted_copy(x, n)))
		return -1;
	summary_sorted(s, n, out);
	free(s);
	return 0;
}

static double pct_of(double d, double ref)
{
	return ref == 0 ? NAN : d / fabs(ref) * 100;
}

/* The p-value, and the rank k of the interval's lower end among the sorted differences (0: no
 * 95 % interval). k is the no-ties one; with ties stats_compare inverts the test instead. */
static int u_test(const double *b, size_t nb, const double *a, size_t na, struct stats_cmp *o, uint64_t *k)
{
	double mn = (double)nb * (double)na, tie_term, big;

	stats_u_at(b, nb, a, na, 0, &o->u, &tie_term);
	o->ties = tie_term > 0;
	big = o->u > mn - o->u ? o->u : mn - o->u;
	*k = 0;
	if (!o->ties && nb <= STATS_EXACT_MAX_PAIRS / na) {
		size_t n = nb * na;
		double *cdf = malloc((n + 1) * sizeof *cdf);
		if (!cdf || stats_mwu_cdf(nb, na, cdf) < 0) {
			free(cdf);
			errno = ENOMEM;
			return -1;
		}
		/* two-sided: 2 P(U >= big) = 2 P(U <= mn - big) by symmetry (the lower tail sums small
		 * terms first) */
		o->p_value = 2 * cdf[(size_t)(mn - big)];
		o->p_exact = true;
		for (size_t c = 0; c <= n && cdf[c] <= STATS_ALPHA / 2; c++)
			*k = c + 1;
		o->ci_level = *k ? 1 - 2 * cdf[*k - 1] : NAN;
		free(cdf);
	} else {
		double nt = (double)nb + (double)na;
		double sigma = sqrt(mn / 12 * ((nt + 1) - tie_term / (nt * (nt - 1))));
		double z = sigma > 0 ? (big - mn / 2 - 0.5) / sigma : 0;
		double c = floor(mn / 2 - 0.5 - Z975 * sigma);
		o->p_value = sigma > 0 ? erfc(z / M_SQRT2) : 1;   /* 2 * the normal's upper tail */
		o->p_exact = false;
		*k = c >= 0 ? (uint64_t)c + 1 : 0;
		o->ci_level = *k ? 1 - STATS_ALPHA : NAN;
	}
	if (o->p_value > 1)
		o->p_value = 1;
	return 0;
}

static void welch(struct stats_cmp *o)
{
	const struct stats_summary *b = &o->base, *a = &o->arm;
	double vb, va, se, df, t;

	o->mean_diff = a->mean - b->mean;
	o->mean_diff_pct = pct_of(o->mean_diff, b->mean);
	o->welch_ok = false;
	o->welch_ci95[0] = o->welch_ci95[1] = o->welch_ci95_pct[0] = o->welch_ci95_pct[1] = o->welch_df = NAN;
	if (b->n < 2 || a->n < 2)
		return;
	vb = b->sd * b->sd / (double)b->n;
	va = a->sd * a->sd / (double)a->n;
	if (vb + va <= 0)
		return;
	se = sqrt(vb + va);
	df = (vb + va) * (vb + va) / (vb * vb / (double)(b->n - 1) + va * va / (double)(a->n - 1));
	t = stats_t_quantile(1 - STATS_ALPHA / 2, df);
	o->welch_ok = true;
	o->welch_df = df;
	o->welch_ci95[0] = o->mean_diff - t * se;
	o->welch_ci95[1] = o->mean_diff + t * se;
	o->welch_ci95_pct[0] = pct_of(o->welch_ci95[0], b->mean);
	o->welch_ci95_pct[1] = pct_of(o->welch_ci95[1], b->mean);
}

static void verdict(struct stats_cmp *o)
{
	size_t len = sizeof o->verdict;
	int n;

	if (o->different) {
		bool pct = !isnan(o->median_diff_pct);
		double d = pct ? o->median_diff_pct : o->median_diff;
		const double *ci = pct ? o->ci95_pct : o->ci95;
		double below = d - ci[0], above = ci[1] - d;

		/* ministat's "d ± h" holds for a symmetric interval only; a Hodges-Lehmann interval is often
		 * not, and "d ± max" would then print a span that may cover 0 while the interval does not. */
		if (fabs(below - above) < (pct ? 0.05 : 1e-9 * fmax(1.0, fabs(d))))
			n = pct ? snprintf(o->verdict, len, "Difference at 95%% confidence: %+.1f %% \u00b1 %.1f %%", d, above)
				: snprintf(o->verdict, len, "Difference at 95%% confidence: %+.4g \u00b1 %.4g (baseline median 0)",
					   d, above);
		else
			n = pct ? snprintf(o->verdict, len, "Difference at 95%% confidence: %+.1f %% (interval %+.1f %% to %+.1f %%)",
					   d, ci[0], ci[1])
				: snprintf(o->verdict, len, "Difference at 95%% confidence: %+.4g (interval %+.4g to %+.4g; baseline "
					   "median 0)", d, ci[0], ci[1]);
	} else {
		n = snprintf(o->verdict, len, "No difference proven at 95%% confidence%s",
			     o->ci_ok ? "" : " (too few rounds for a 95% interval)");
	}
	if (o->unreliable && n > 0 && (size_t)n < len)
		snprintf(o->verdict + n, len - (size_t)n, " (unreliable: %zu and %zu rounds, %u+ recommended)",
			 o->base.n, o->arm.n, STATS_MIN_RELIABLE);
}

int stats_compare(const double *base, size_t nb, const double *arm, size_t na, uint64_t seed,
		  struct stats_cmp *out)
{
	double *b = NULL, *a = NULL, *scratch = NULL;
	uint64_t k, mn;
	size_t room;
	int rc = -1;

	(void)seed;   /* see the header: nothing here resamples */
	if (!out) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof *out);
	if (!(b = sorted_copy(base, nb)) || !(a = sorted_copy(arm, na)))
		goto done;
	summary_sorted(b, nb, &out->base);
	summary_sorted(a, na, &out->arm);
	out->median_diff = out->arm.median - out->base.median;
	out->median_diff_pct = pct_of(out->median_diff, out->base.median);
	mn = (uint64_t)nb * na;
	room = 2 * (nb + na);
	if (!(scratch = malloc(room * sizeof *scratch))) {
		errno = ENOMEM;
		goto done;
	}
	out->hl_shift = mn % 2 ? stats_diff_rank(b, nb, a, na, mn / 2 + 1, scratch, room)
		: (stats_diff_rank(b, nb, a, na, mn / 2, scratch, room) + stats_diff_rank(b, nb, a, na, mn / 2 + 1, scratch, room)) / 2;
	out->hl_shift_pct = pct_of(out->hl_shift, out->base.median);
	if (u_test(b, nb, a, na, out, &k) < 0)
		goto done;
	if (out->ties) {
		/* the U distribution's ranks k assume no ties: with them (discrete figures: pages, faults)
		 * those ends include 0 far more often than the test rejects (an A/A share of 1 % at 10
		 * rounds). The interval is then the set of shifts the test accepts. */
		out->ci_ok = stats_hl_tied_interval(b, nb, a, na, Z975, out->ci95) == 0;
		out->ci_level = out->ci_ok ? 1 - STATS_ALPHA : NAN;
	} else {
		out->ci_ok = k >= 1 && k <= mn + 1 - k;
		if (out->ci_ok) {
			out->ci95[0] = stats_diff_rank(b, nb, a, na, k, scratch, room);
			out->ci95[1] = stats_diff_rank(b, nb, a, na, mn + 1 - k, scratch, room);
		}
	}
	if (!out->ci_ok)
		out->ci95[0] = out->ci95[1] = NAN;
	out->ci95_pct[0] = pct_of(out->ci95[0], out->base.median);
	out->ci95_pct[1] = pct_of(out->ci95[1], out->base.median);
	welch(out);
	out->unreliable = nb < STATS_MIN_RELIABLE || na < STATS_MIN_RELIABLE;
	/* with ties the accepted shifts can be an open set, (0, hi] say, whose closed ends the
	 * interval reports: 0 is then an end though the test rejects it. The test decides. */
	out->different = out->ci_ok && out->p_value < STATS_ALPHA && (out->ties || out->ci95[0] > 0 || out->ci95[1] < 0);
	verdict(out);
	rc = 0;
done:
	free(b);
	free(a);
	free(scratch);
	return rc;
}

int stats_p95_ci(const double *x, size_t n, double *p95, double *lo, double *hi)
{
	const double p = 0.95, tail = STATS_ALPHA / 2;
	double *s;
	size_t l = 0, u = 0;

	if (!p95 || !lo || !hi) {
		errno = EINVAL;
		return -1;
	}
	*p95 = *lo = *hi = NAN;
	if (!(s = sorted_copy(x, n)))
		return -1;
	*p95 = mmstats_percentile(s, n, 95);
	/* l: the largest with P(B <= l - 1) <= tail; u: the smallest with P(B >= u) <= tail, i.e.
	 * P(B <= u - 1) >= 1 - tail. Both CDFs are monotone in the rank: bisect. */
	for (size_t a = 1, b = n; a <= b;) {
		size_t m = a + (b - a) / 2;
		if (stats_binom_cdf(m - 1, n, p) <= tail)
			l = m, a = m + 1;
		else if (m == 1)
			break;
		else
			b = m - 1;
	}
	for (size_t a = 1, b = n; a <= b;) {
		size_t m = a + (b - a) / 2;
		if (1 - stats_binom_cdf(m - 1, n, p) <= tail)
			u = m, b = m - 1;
		else
			a = m + 1;
	}
	if (l == 0 || u == 0) {
		free(s);
		errno = EDOM;
		return -1;
	}
	*lo = s[l - 1];
	*hi = s[u - 1];
	free(s);
	return 0;
}
