/* An experiment's comparisons from its raw samples (ops/exp_stats.c): warm-ups left out, a
 * counter missing from a run's deltas counted as 0 (it did not move), a metric one arm lacks not
 * compared, and every comparison common/stats.h's own on the same values; and which metrics
 * advice may take as evidence. */
#include <math.h>
#include <string.h>

#include "common/stats.h"
#include "server/ops/exp.h"
#include "tests/unit/check_main.h"

static void add(json_t *samples, const char *arm, int round, bool warmup, const char *metric, double v)
{
	json_array_append_new(samples, json_pack("{s:i, s:b, s:i, s:s, s:s, s:f}", "round", round, "warmup", warmup,
						 "seq", (int)json_array_size(samples), "arm", arm, "metric", metric,
						 "value", v));
}

static const json_t *find(const json_t *cmps, const char *metric)
{
	const json_t *c;
	size_t i;

	json_array_foreach(cmps, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "metric")), metric))
			return c;
	return NULL;
}

START_TEST(comparisons_come_from_the_measured_rounds)
{
	json_t *s = json_array(), *names = json_pack("[s, s]", "a", "b"), *out;
	double wa[10], wb[10], cb[10];
	struct stats_cmp want;
	const json_t *c;

	/* a warm-up far off: it must change nothing */
	add(s, "a", 1, true, "wall_s", 1000);
	add(s, "b", 1, true, "wall_s", 1000);
	for (int r = 1; r <= 10; r++) {
		wa[r - 1] = 1.0 + 0.01 * r;
		wb[r - 1] = 0.8 + 0.013 * ((r * 7) % 10);
		cb[r - 1] = r % 3 ? 0 : 5;   /* the counter moved in every third round only */
		add(s, "a", r, false, "wall_s", wa[r - 1]);
		add(s, "a", r, false, "only_a", 1);
		add(s, "b", r, false, "wall_s", wb[r - 1]);
		if (cb[r - 1])
			add(s, "b", r, false, "vmstat.thp_fault_alloc", cb[r - 1]);
	}
	ck_assert_ptr_nonnull(out = exp_compare(s, names, 7));
	const json_t *cmps = json_object_get(out, "comparisons");

	ck_assert_ptr_nonnull(c = find(cmps, "wall_s"));
	ck_assert_int_eq(stats_compare(wa, 10, wb, 10, 7, &want), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "baseline")), "a");
	ck_assert_str_eq(json_string_value(json_object_get(c, "arm")), "b");
	ck_assert_double_eq_tol(json_number_value(json_object_get(c, "median_diff_pct")), want.median_diff_pct, 1e-12);
	ck_assert_double_eq_tol(json_number_value(json_object_get(c, "p_value")), want.p_value, 1e-15);
	ck_assert_str_eq(json_string_value(json_object_get(c, "verdict")), want.verdict);
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(c, "n"), 0)), 10);
	/* a's counter never moved (absent everywhere: 0), b's moved in 3 of 10 rounds */
	ck_assert_ptr_nonnull(c = find(cmps, "vmstat.thp_fault_alloc"));
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(c, "n"), 0)), 10);
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(c, "n"), 1)), 10);
	/* a metric of one arm only is summarised, not compared */
	ck_assert_ptr_null(find(cmps, "only_a"));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(json_object_get(out,
			 "summary"), "a"), "only_a"), "n")), 10);
	ck_assert_double_eq_tol(json_number_value(json_object_get(json_object_get(json_object_get(json_object_get(out,
				"summary"), "b"), "wall_s"), "max")), 0.8 + 0.013 * 9, 1e-12);
	json_decref(out);
	json_decref(names);
	json_decref(s);
}
END_TEST

START_TEST(only_times_and_rates_are_evidence)
{
	static const struct { const char *metric; int dir; bool primary; } t[] = {
		{ "wall_s", -1, true }, { "s_loop_mean", -1, true }, { "ms_page_mean", -1, true },
		{ "latency_ns.q2", -1, true }, { "mib_s_median", 1, true }, { "mib_per_s", 1, true },
		{ "page_faults", -1, false }, { "major_faults", -1, false }, { "max_rss_kb", -1, false },
		{ "vmstat.thp_fault_alloc", 0, false }, { "numastat.1.numa_hit", 0, false }, { "anon_huge_kb", 0, false },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		bool primary = !t[i].primary;
		ck_assert_msg(exp_metric_direction(t[i].metric, &primary) == t[i].dir, "%s", t[i].metric);
		ck_assert_msg(primary == t[i].primary, "%s primary", t[i].metric);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("experiments");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, comparisons_come_from_the_measured_rounds);
	tcase_add_test(tc, only_times_and_rates_are_evidence);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
