/* common/stats: agreement with SciPy on fixed sample sets (fixtures/stats_scipy.json, written by
 * fixtures/stats_scipy.py and re-checked against SciPy by tests/e2e/test_stats_scipy.py), its
 * properties on random samples, the calibration of the 95 % level over 1,000 simulated
 * experiments, and bad input. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "tests/unit/check_main.h"

#define FIXTURE MPD_SRCDIR "/tests/unit/fixtures/stats_scipy.json"

/* |got - want| within rel of want (plus a floor for values near 0). */
#define ck_close(got, want, rel)                                                                 \
	do {                                                                                     \
		double g_ = (got), w_ = (want);                                                  \
		ck_assert_msg(fabs(g_ - w_) <= (rel) * fabs(w_) + 1e-15, "%s = %.17g, want %.17g", \
			      #got, g_, w_);                                                     \
	} while (0)

static json_t *fixture(void)
{
	json_error_t je;
	json_t *j = json_load_file(FIXTURE, 0, &je);

	ck_assert_msg(j != NULL, "%s: %s", FIXTURE, je.text);
	return j;
}

/* A JSON array of numbers as doubles (caller frees). */
static double *numbers(const json_t *arr, size_t *n)
{
	double *x = malloc((json_array_size(arr) + 1) * sizeof *x);
	const json_t *v;
	size_t i;

	ck_assert_ptr_nonnull(x);
	json_array_foreach(arr, i, v)
		x[i] = json_number_value(v);
	*n = json_array_size(arr);
	return x;
}

START_TEST(agrees_with_scipy_on_fixed_sets)
{
	json_t *j = fixture(), *c;
	size_t i;

	ck_assert_uint_ge(json_array_size(json_object_get(j, "cases")), 9);
	json_array_foreach(json_object_get(j, "cases"), i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		size_t nb, na;
		double *b = numbers(json_object_get(c, "base"), &nb), *a = numbers(json_object_get(c, "arm"), &na);
		const json_t *pe = json_object_get(c, "p_exact"), *ci = json_object_get(c, "hl_ci");
		const json_t *wci = json_object_get(c, "welch_ci");
		struct stats_cmp o;

		ck_assert_int_eq(stats_compare(b, nb, a, na, 1, &o), 0);
		ck_assert_msg(o.ties == json_is_true(json_object_get(c, "ties")), "%s: ties", name);
		ck_assert_msg(o.p_exact == (pe != NULL), "%s: exact %d", name, o.p_exact);
		/* both exact: to 1e-9; the asymptotic one is the same formula as SciPy's */
		ck_close(o.p_value, json_number_value(pe ? pe : json_object_get(c, "p_asymptotic")), 1e-9);
		ck_close(o.u, json_number_value(json_object_get(c, "u")), 0);
		/* the order statistics are picked exactly, so the interval's ends are the same doubles */
		ck_close(o.hl_shift, json_number_value(json_object_get(c, "hl")), 1e-15);
		ck_assert_msg(o.ci_ok == json_is_array(ci), "%s: ci_ok %d", name, o.ci_ok);
		if (o.ci_ok) {
			ck_close(o.ci95[0], json_number_value(json_array_get(ci, 0)), 0);
			ck_close(o.ci95[1], json_number_value(json_array_get(ci, 1)), 0);
			ck_close(o.ci_level, json_number_value(json_object_get(c, "hl_level")), 1e-12);
		}
		ck_assert_msg(o.welch_ok == (wci != NULL), "%s: welch_ok", name);
		if (wci) {
			/* to 1e-11 of the half-width (an end near 0 is a difference of two larger
			 * figures); the fixture's t quantile is SciPy's polished on its own t.sf */
			double w0 = json_number_value(json_array_get(wci, 0)), w1 = json_number_value(json_array_get(wci, 1));
			double tol = 1e-11 * (w1 - w0) / 2;
			ck_assert_msg(fabs(o.welch_ci95[0] - w0) <= tol && fabs(o.welch_ci95[1] - w1) <= tol,
				      "%s: Welch [%.17g, %.17g], want [%.17g, %.17g]", name, o.welch_ci95[0], o.welch_ci95[1], w0, w1);
			ck_close(o.welch_df, json_number_value(json_object_get(c, "welch_df")), 1e-12);
		}
		ck_close(o.base.median, json_number_value(json_object_get(c, "median_base")), 0);
		ck_close(o.arm.median, json_number_value(json_object_get(c, "median_arm")), 0);
		free(b);
		free(a);
	}
	json_decref(j);
}
END_TEST

START_TEST(p95_interval_and_t_quantile_agree_with_scipy)
{
	json_t *j = fixture(), *c;
	size_t i;

	json_array_foreach(json_object_get(j, "p95"), i, c) {
		size_t n;
		double *x = numbers(json_object_get(c, "x"), &n), p95, lo, hi;
		const json_t *ci = json_object_get(c, "ci");
		int rc = stats_p95_ci(x, n, &p95, &lo, &hi);

		ck_close(p95, json_number_value(json_object_get(c, "p95")), 0);
		if (json_is_array(ci)) {
			ck_assert_int_eq(rc, 0);
			ck_close(lo, json_number_value(json_array_get(ci, 0)), 0);
			ck_close(hi, json_number_value(json_array_get(ci, 1)), 0);
		} else {
			ck_assert_int_eq(rc, -1);
			ck_assert_int_eq(errno, EDOM);
			ck_assert(isnan(lo) && isnan(hi));
		}
		free(x);
	}
	ck_assert_uint_ge(json_array_size(json_object_get(j, "t_quantile")), 18);
	json_array_foreach(json_object_get(j, "t_quantile"), i, c)
		ck_close(stats_t_quantile(json_number_value(json_object_get(c, "p")), json_number_value(json_object_get(c, "df"))),
			 json_number_value(json_object_get(c, "t")), 1e-12);
	/* closed forms: df 1 is Cauchy, tan(pi (p - 1/2)); df 2 is
	 * (2p - 1) / sqrt(2 p (1 - p)) */
	for (double p = 0.55; p < 1; p += 0.1) {
		ck_close(stats_t_quantile(p, 1), tan(M_PI * (p - 0.5)), 1e-13);
		ck_close(stats_t_quantile(p, 2), (2 * p - 1) / sqrt(2 * p * (1 - p)), 1e-13);
	}
	json_decref(j);
}
END_TEST

START_TEST(exact_distribution_is_the_counted_one)
{
	/* 3 and 4: C(7,3) = 35 arrangements, counts of U = 0..12 are 1 1 2 3 4 4 5 4 4 3 2 1 1 */
	static const int counts[13] = { 1, 1, 2, 3, 4, 4, 5, 4, 4, 3, 2, 1, 1 };
	double cdf[13];
	int acc = 0;

	ck_assert_int_eq(stats_mwu_cdf(3, 4, cdf), 0);
	for (int u = 0; u < 13; u++) {
		acc += counts[u];
		ck_close(cdf[u], acc / 35.0, 1e-15);
	}
	errno = 0;
	ck_assert_int_eq(stats_mwu_cdf(51, 50, cdf), -1);   /* past STATS_EXACT_MAX_PAIRS */
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* splitmix64: the tests' own generator, so a seed gives the same samples everywhere */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
	return ((double)(next(s) >> 11) + 0.5) / 9007199254740992.0;   /* (0, 1) */
}

static double normal(uint64_t *s, double mean, double sd)
{
	return mean + sd * sqrt(-2 * log(uniform(s))) * cos(2 * M_PI * uniform(s));
}

/* Dyadic values k/1024 below 2^20: sums and differences with other such values are exact, so
 * the properties below can be asserted as equalities. */
static void dyadic(uint64_t *s, double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = (double)(next(s) % (1u << 30)) / 1024;
}

START_TEST(properties_on_random_samples)
{
	uint64_t seed = 42;

	for (int t = 0; t < 200; t++) {
		size_t nb = 2 + next(&seed) % 40, na = 2 + next(&seed) % 40;
		double b[64], a[64], a2[64], c = (double)(next(&seed) % 4096) / 1024 - 2;
		struct stats_cmp o, sw, sh;

		dyadic(&seed, b, nb);
		dyadic(&seed, a, na);
		ck_assert_int_eq(stats_compare(b, nb, a, na, 7, &o), 0);
		/* swapping the arms flips every difference, keeps p */
		ck_assert_int_eq(stats_compare(a, na, b, nb, 7, &sw), 0);
		ck_assert(sw.hl_shift == -o.hl_shift);
		ck_assert(sw.p_value == o.p_value);
		ck_assert(sw.u == (double)nb * (double)na - o.u);
		ck_assert(sw.ci_ok == o.ci_ok);
		if (o.ci_ok)
			ck_assert(sw.ci95[0] == -o.ci95[1] && sw.ci95[1] == -o.ci95[0]);
		ck_assert(sw.different == o.different);
		/* shifting the arm by c shifts the estimate and the interval by c */
		for (size_t i = 0; i < na; i++)
			a2[i] = a[i] + c;
		ck_assert_int_eq(stats_compare(b, nb, a2, na, 7, &sh), 0);
		if (!o.ties && !sh.ties) {
			ck_assert_msg(sh.hl_shift == o.hl_shift + c, "%.17g vs %.17g + %.17g", sh.hl_shift, o.hl_shift, c);
			ck_assert(sh.ci_ok == o.ci_ok);
			if (o.ci_ok)
				ck_assert(sh.ci95[0] == o.ci95[0] + c && sh.ci95[1] == o.ci95[1] + c);
		}
		ck_assert(o.p_value > 0 && o.p_value <= 1);
		ck_assert(!o.ci_ok || (o.ci95[0] <= o.hl_shift && o.hl_shift <= o.ci95[1]));
		ck_assert(o.unreliable == (nb < STATS_MIN_RELIABLE || na < STATS_MIN_RELIABLE));
	}
}
END_TEST

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

START_TEST(order_statistics_of_the_differences_are_the_sorted_ones)
{
	/* Up to 300 x 300 samples, continuous (no ties, so past 2500 pairs the normal k applies:
	 * floor(mn/2 - 0.5 - z sigma) + 1) and integer-valued (heavy ties): the estimate and the
	 * interval's ends are the very elements of all nb*na differences sorted. */
	uint64_t seed = 7;

	for (int t = 0; t < 40; t++) {
		size_t nb = 50 + next(&seed) % 251, na = 50 + next(&seed) % 251, mn = nb * na;
		bool ints = t % 2;
		double *b = malloc(nb * sizeof *b), *a = malloc(na * sizeof *a), *d = malloc(mn * sizeof *d);
		struct stats_cmp o;

		ck_assert(b && a && d);
		for (size_t i = 0; i < nb; i++)
			b[i] = ints ? (double)(next(&seed) % 20) : normal(&seed, 100, 15);
		for (size_t i = 0; i < na; i++)
			a[i] = ints ? (double)(next(&seed) % 23) : normal(&seed, 103, 15);
		for (size_t i = 0; i < nb; i++)
			for (size_t j = 0; j < na; j++)
				d[i * na + j] = a[j] - b[i];
		qsort(d, mn, sizeof *d, cmp_d);
		ck_assert_int_eq(stats_compare(b, nb, a, na, 1, &o), 0);
		ck_assert(o.ties == ints);
		ck_assert(o.hl_shift == (mn % 2 ? d[mn / 2] : (d[mn / 2 - 1] + d[mn / 2]) / 2));
		ck_assert(o.ci_ok);
		if (!ints && mn > STATS_EXACT_MAX_PAIRS) {
			double sigma = sqrt((double)mn / 12 * (double)(nb + na + 1));
			size_t k = (size_t)floor((double)mn / 2 - 0.5 - 1.959963984540054 * sigma) + 1;
			ck_assert(o.ci95[0] == d[k - 1] && o.ci95[1] == d[mn - k]);
		} else {
			/* ties: the ends are differences (where U steps), around the estimate, and the
			 * verdict is the test's */
			ck_assert(bsearch(&o.ci95[0], d, mn, sizeof *d, cmp_d) && bsearch(&o.ci95[1], d, mn, sizeof *d, cmp_d));
			ck_assert(o.ci95[0] <= o.hl_shift && o.hl_shift <= o.ci95[1]);
			ck_assert(o.different == (o.p_value < 0.05));
		}
		free(b);
		free(a);
		free(d);
	}
}
END_TEST

/* The share of "difference" verdicts over 1,000 simulated experiments of 10 rounds per arm, the
 * arm's mean and sd moved by shift. Continuous: normal around 100 with a coefficient of variation
 * of 15 % (this machine's own bench shows about +-15 % between identical rounds). Discrete (page
 * or fault counts): around 5 with sd 1.5 rounded to integers, heavy ties, so the normal
 * approximation with the tie correction decides. */
static double share_different(uint64_t seed, double shift, bool discrete)
{
	double mean = discrete ? 5 : 100, sd = discrete ? 1.5 : 15;
	int diff = 0;

	for (int e = 0; e < 1000; e++) {
		double b[10], a[10];
		struct stats_cmp o;
		for (int i = 0; i < 10; i++) {
			b[i] = normal(&seed, mean, sd);
			a[i] = normal(&seed, mean * (1 + shift), sd * (1 + shift));
			if (discrete)
				b[i] = floor(b[i] + 0.5), a[i] = floor(a[i] + 0.5);
		}
		ck_assert_int_eq(stats_compare(b, 10, a, 10, (uint64_t)e, &o), 0);
		ck_assert(!o.unreliable && (discrete || !o.ties));
		diff += o.different;
	}
	return diff / 1000.0;
}

START_TEST(the_95_percent_level_holds_with_ties)
{
	/* Over the seeds 20261201..08 the test called 3.6 to 4.8 % different; requiring the closed
	 * interval to be clear of 0 as well (its ends fall on integer differences, 0 among them)
	 * would have called only 0.7 to 1.1 %. */
	double aa = share_different(20261205, 0, true);

	ck_assert_msg(aa >= 0.03 && aa <= 0.07, "discrete A/A: %.3f called different", aa);
}
END_TEST

START_TEST(the_95_percent_level_means_what_it_says)
{
	/* The exact test at 10 and 10 rejects at U <= 23 or >= 77: a level of 4.33 %. Over the seeds
	 * 20261201..05 the A/A share was 3.3 to 5.0 % and the -20 % shift was found in 82.9 to 84.7 %;
	 * one fixed pair of seeds keeps the test deterministic. */
	double aa = share_different(20261203, 0, false), ab = share_different(20261204, -0.20, false);

	ck_assert_msg(aa >= 0.03 && aa <= 0.07, "A/A: %.3f called different", aa);
	ck_assert_msg(ab >= 0.80, "a real 20 %% shift found in only %.3f", ab);
}
END_TEST

START_TEST(verdict_in_ministats_words)
{
	static const double b[10] = { 10, 12, 11, 14, 13, 15, 9, 10.5, 12.5, 11.5 };
	static const double a[10] = { 8, 9.1, 7, 8.5, 10.2, 9.4, 8.8, 7.7, 9.9, 8.1 };
	struct stats_cmp o;

	ck_assert_int_eq(stats_compare(b, 10, a, 10, 1, &o), 0);
	/* medians 11.75 and 8.65: -26.4 %; HL interval [-4.8, -1.6] = [-40.9 %, -13.6 %]: 14.5 below
	 * the difference, 12.8 above: asymmetric, so both ends are printed, not "± 14.5 %" (whose
	 * span would claim an interval the test did not find) */
	ck_assert_str_eq(o.verdict, "Difference at 95% confidence: -26.4 % (interval -40.9 % to -13.6 %)");
	ck_assert(o.different && !o.unreliable);
	ck_assert_int_eq(stats_compare(b, 10, b, 10, 1, &o), 0);
	ck_assert_str_eq(o.verdict, "No difference proven at 95% confidence");
	ck_assert_int_eq(stats_compare(b, 5, a, 10, 1, &o), 0);
	ck_assert_str_eq(o.verdict + strlen(o.verdict) - strlen(" (unreliable: 5 and 10 rounds, 9+ recommended)"),
			 " (unreliable: 5 and 10 rounds, 9+ recommended)");
	ck_assert(o.unreliable);
	/* 3 and 3: the smallest two-sided p is 0.1, no 95 % interval exists */
	ck_assert_int_eq(stats_compare(b, 3, a, 3, 1, &o), 0);
	ck_assert(!o.ci_ok && !o.different && isnan(o.ci95_pct[0]));
	ck_assert_ptr_nonnull(strstr(o.verdict, "No difference proven at 95% confidence (too few rounds"));
}
END_TEST

START_TEST(bad_input_is_refused)
{
	double x[3] = { 1, 2, 3 }, bad[3] = { 1, NAN, 3 }, inf[2] = { 1, INFINITY }, p, lo, hi;
	double huge[2] = { 1, -1e101 }, big[2] = { 1e100, -1e100 };
	struct stats_cmp o;
	struct stats_summary s;

	errno = 0;
	ck_assert_int_eq(stats_compare(x, 0, x, 3, 1, &o), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(stats_compare(x, 3, bad, 3, 1, &o), -1);
	ck_assert_int_eq(stats_compare(inf, 2, x, 3, 1, &o), -1);
	ck_assert_int_eq(stats_compare(x, 3, huge, 2, 1, &o), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(stats_compare(big, 2, big, 2, 1, &o), 0);   /* the edge: everything finite */
	ck_assert(isfinite(o.hl_shift) && !!isfinite(o.ci95[0]) == o.ci_ok && isfinite(o.base.sd));
	ck_assert_int_eq(stats_compare(NULL, 3, x, 3, 1, &o), -1);
	ck_assert_int_eq(stats_compare(x, 3, x, 3, 1, NULL), -1);
	ck_assert_int_eq(stats_summary(x, 0, &s), -1);
	ck_assert_int_eq(stats_summary(bad, 3, &s), -1);
	ck_assert_int_eq(stats_p95_ci(x, 0, &p, &lo, &hi), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(isnan(stats_t_quantile(0, 5)) && isnan(stats_t_quantile(0.5 + 0.6, 5)) && isnan(stats_t_quantile(0.9, 0)));
	ck_assert_int_eq(stats_summary(x, 3, &s), 0);
	ck_assert(s.n == 3 && s.median == 2 && s.mean == 2 && s.sd == 1 && s.min == 1 && s.max == 3);
	ck_assert_int_eq(stats_summary(x, 1, &s), 0);
	ck_assert(isnan(s.sd));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, agrees_with_scipy_on_fixed_sets);
	tcase_add_test(tc, p95_interval_and_t_quantile_agree_with_scipy);
	tcase_add_test(tc, exact_distribution_is_the_counted_one);
	tcase_add_test(tc, properties_on_random_samples);
	tcase_add_test(tc, order_statistics_of_the_differences_are_the_sorted_ones);
	tcase_add_test(tc, the_95_percent_level_means_what_it_says);
	tcase_add_test(tc, the_95_percent_level_holds_with_ties);
	tcase_add_test(tc, verdict_in_ministats_words);
	tcase_add_test(tc, bad_input_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
