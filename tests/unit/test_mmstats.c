/* Latency statistics the mmtests way (kernel-interfaces.md §9.2), and the store query that feeds
 * them from the batches table. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/mmstats.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/internal.h"
#include "server/store/jobs.h"
#include "server/store/stats.h"
#include "tests/unit/check_main.h"

START_TEST(quartiles_are_floor_nearest_rank)
{
	double v[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct mmstats s;

	mmstats_sorted(v, 10, &s);
	ck_assert_uint_eq(s.count, 10);
	ck_assert_double_eq(s.min, 1);
	ck_assert_double_eq(s.q1, 2);     /* int(10 * 25 / 100) = 2 -> sorted[1] */
	ck_assert_double_eq(s.q2, 5);     /* int(5) = 5 -> sorted[4], no interpolation (not 5.5) */
	ck_assert_double_eq(s.q3, 7);     /* int(7.5) = 7 -> sorted[6] (not 8) */
	ck_assert_double_eq(s.p90, 9);
	ck_assert_double_eq(s.p95, 9);    /* int(9.5) = 9 */
	ck_assert_double_eq(s.p99, 9);
	ck_assert_double_eq(s.max, 10);
	ck_assert_double_eq(s.amean, 5.5);
	ck_assert_double_eq_tol(s.stddev, 3.0276503540974917, 1e-12);   /* sample, n - 1 */
}
END_TEST

START_TEST(few_samples_collapse_onto_the_minimum)
{
	double three[3] = { 10, 20, 30 }, one[1] = { 42 };
	struct mmstats s;

	mmstats_sorted(three, 3, &s);
	ck_assert_double_eq(s.q1, 10);    /* int(0.75) = 0 -> at least 1 */
	ck_assert_double_eq(s.q2, 10);    /* int(1.5) = 1 */
	ck_assert_double_eq(s.q3, 20);    /* int(2.25) = 2 */
	ck_assert_double_eq(s.stddev, 10);
	mmstats_sorted(one, 1, &s);
	ck_assert_double_eq(s.min, 42);
	ck_assert_double_eq(s.q3, 42);
	ck_assert_double_eq(s.max, 42);
	ck_assert(isnan(s.stddev));       /* n - 1 = 0 */
	mmstats_sorted(NULL, 0, &s);
	ck_assert_uint_eq(s.count, 0);
	ck_assert(isnan(s.min) && isnan(s.amean));
}
END_TEST

START_TEST(seed_003_shape_on_large_values)
{
	/* ns values like the daemon stores: the mean of 1e9 + k keeps its precision. */
	double v[4] = { 1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4 };
	struct mmstats s;

	mmstats_sorted(v, 4, &s);
	ck_assert_double_eq(s.amean, 1e9 + 2.5);
	ck_assert_double_eq_tol(s.stddev, 1.2909944487358056, 1e-6);
	ck_assert_double_eq(s.q1, 1e9 + 1);
	ck_assert_double_eq(s.q3, 1e9 + 3);
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The streaming walk (what the store uses) and the array version agree: percentiles and extremes
 * exactly, the mean and deviation to rounding. */
static void assert_same(const struct mmstats *a, const struct mmstats *b)
{
	ck_assert_uint_eq(a->count, b->count);
	ck_assert_double_eq(a->min, b->min);
	ck_assert_double_eq(a->q1, b->q1);
	ck_assert_double_eq(a->q2, b->q2);
	ck_assert_double_eq(a->q3, b->q3);
	ck_assert_double_eq(a->p90, b->p90);
	ck_assert_double_eq(a->p95, b->p95);
	ck_assert_double_eq(a->p99, b->p99);
	ck_assert_double_eq(a->max, b->max);
	ck_assert_double_eq_tol(a->amean, b->amean, 1e-9 * b->amean);
	if (b->count > 1)
		ck_assert_double_eq_tol(a->stddev, b->stddev, 1e-9 * b->stddev + 1e-9);
	else
		ck_assert(isnan(a->stddev));
}

START_TEST(walk_matches_the_array_for_every_count)
{
	double v[300];
	unsigned seed = 7;

	for (size_t n = 1; n <= 300; n++) {
		struct mmstats a, b;
		struct mmstats_walk w;
		double sum = 0;
		for (size_t i = 0; i < n; i++)
			sum += v[i] = (double)(1000 + rand_r(&seed) % 100000);
		qsort(v, n, sizeof *v, cmp_double);
		mmstats_sorted(v, n, &b);
		mmstats_walk_begin(&w, n, sum / (double)n, &a);
		for (size_t i = 0; i < n; i++)
			mmstats_walk_add(&w, v[i]);
		mmstats_walk_end(&w);
		assert_same(&a, &b);
	}
}
END_TEST

START_TEST(store_query_filters_and_sorts)
{
	char path[] = "/tmp/mpd-mmstats-XXXXXX";
	int fd = mkstemp(path);
	struct store *st;
	struct batch_row rows[6];
	struct stats_filter f = { .kind = "hugepages.resize", .grow = true, .node = -1 };
	struct op_record op = { .kind = "hugepages.resize", .started_ns = 1, .status = "ok" };
	struct mmstats s;
	mp_err e = { 0 };

	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path);
	st = store_open(path, &e);
	ck_assert_msg(st != NULL, "%s", e.detail);
	ck_assert_int_gt(history_insert(st, &op, &e), 0);
	for (int i = 0; i < 6; i++)
		rows[i] = (struct batch_row){ .op_id = 1, .seq = i + 1, .kind = "hugepages.resize", .size_kb = 2048,
					      .node = i % 2, .grow = i < 5, .started_ns = 100 + i, .requested = 1,
					      .achieved = 1, .elapsed_ns = 50 - i, .latency_ns = 50 - i };
	rows[4].size_kb = 1048576;
	ck_assert_int_eq(batches_db_insert(st, rows, 6, &e), 0);

	ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
	ck_assert_uint_eq(s.count, 5);              /* the shrink batch is not a sample */
	ck_assert_double_eq(s.min, 46);
	ck_assert_double_eq(s.max, 50);
	f.size_kb = 2048;
	ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
	ck_assert_uint_eq(s.count, 4);
	ck_assert_double_eq(s.min, 47);
	f.node = 1;
	ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
	ck_assert_uint_eq(s.count, 2);              /* seq 2 and 4: latency 49, 47 */
	ck_assert_double_eq(s.min, 47);
	ck_assert_double_eq(s.max, 49);
	f.node = -1;
	f.since_ns = 102;
	f.until_ns = 104;
	ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
	ck_assert_uint_eq(s.count, 2);
	f.since_ns = 1000;   /* nothing matches: count 0, NaN (null in the API) everywhere else */
	f.until_ns = 0;
	ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
	ck_assert_uint_eq(s.count, 0);
	ck_assert(isnan(s.min) && isnan(s.q2) && isnan(s.max) && isnan(s.amean) && isnan(s.stddev));

	/* many rows in random order: the store's walk agrees with sorting them all in memory */
	{
		static struct batch_row many[1000];
		static double lat[1000];
		unsigned seed = 3;
		struct mmstats want;
		for (int i = 0; i < 1000; i++) {
			lat[i] = (double)(1000 + rand_r(&seed) % 5000000);
			many[i] = (struct batch_row){ .op_id = 1, .seq = 100 + i, .kind = "hugepages.resize",
						      .size_kb = 4, .node = 3, .grow = true, .started_ns = 500 + i,
						      .requested = 1, .achieved = 1, .latency_ns = (int64_t)lat[i] };
		}
		ck_assert_int_eq(batches_db_insert(st, many, 1000, &e), 0);
		qsort(lat, 1000, sizeof *lat, cmp_double);
		mmstats_sorted(lat, 1000, &want);
		f = (struct stats_filter){ .kind = "hugepages.resize", .grow = true, .size_kb = 4, .node = -1 };
		ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
		assert_same(&s, &want);
		/* the same when the population is larger than the buffer: counted, then walked */
		stats_buf_samples = 100;
		ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
		assert_same(&s, &want);
		f.since_ns = 1000;   /* 500 samples: still more than the buffer */
		ck_assert_int_eq(stats_latency(st, &f, &s, &e), 0);
		ck_assert_uint_eq(s.count, 500);
		stats_buf_samples = (size_t)1 << 20;
	}
	store_close(st);
	unlink(path);
}
END_TEST

struct committer {
	struct store *st;
	int stop;                 /* atomic */
	int n;
};

static void *commit_loop(void *arg)
{
	struct committer *c = arg;
	mp_err e = { 0 };

	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		struct op_record op = { .kind = "knob.set", .source = "api", .started_ns = 1, .status = "ok" };
		if (history_insert(c->st, &op, &e) > 0)
			__atomic_add_fetch(&c->n, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

START_TEST(a_walk_paced_by_writers_stays_exact)
{
	/* While writers commit, the walk pauses every 8192 rows (stats.c); the answer must be the one
	 * it gives on a quiet store, buffered or counted, and without writers it never pauses. */
	enum { N = 40000 };
	char path[] = "/tmp/mpd-mmstats-XXXXXX";
	int fd = mkstemp(path);
	static struct batch_row rows[N];
	static double lat[N];
	struct stats_filter f = { .kind = "hugepages.resize", .grow = true, .node = -1 };
	struct op_record op = { .kind = "hugepages.resize", .started_ns = 1, .status = "ok" };
	struct mmstats s, want;
	struct committer c = { 0 };
	unsigned seed = 7, before;
	pthread_t th;
	mp_err e = { 0 };

	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path);
	c.st = store_open(path, &e);
	ck_assert_msg(c.st != NULL, "%s", e.detail);
	ck_assert_int_gt(history_insert(c.st, &op, &e), 0);
	for (int i = 0; i < N; i++) {
		lat[i] = (double)(1000 + rand_r(&seed) % 5000000);
		rows[i] = (struct batch_row){ .op_id = 1, .seq = i + 1, .kind = "hugepages.resize", .size_kb = 2048,
					      .node = 0, .grow = true, .started_ns = 100 + i, .requested = 1,
					      .achieved = 1, .latency_ns = (int64_t)lat[i] };
	}
	ck_assert_int_eq(batches_db_insert(c.st, rows, N, &e), 0);
	qsort(lat, N, sizeof *lat, cmp_double);
	mmstats_sorted(lat, N, &want);

	before = __atomic_load_n(&stats_pauses, __ATOMIC_RELAXED);
	ck_assert_int_eq(stats_latency(c.st, &f, &s, &e), 0);
	assert_same(&s, &want);
	ck_assert_uint_eq(__atomic_load_n(&stats_pauses, __ATOMIC_RELAXED), before);   /* nobody wrote */

	ck_assert_int_eq(pthread_create(&th, NULL, commit_loop, &c), 0);
	while (__atomic_load_n(&c.n, __ATOMIC_RELAXED) < 1)   /* the writer is committing */
		usleep(1000);
	/* Buffered, then counted and walked, each at least once and until a walk has paused: on a
	 * loaded machine the writer may get no CPU during a whole walk, which then rightly does not
	 * pause. The pause is the counter's event, not a time; MAX_PASSES only ends a broken loop. */
	enum { MAX_PASSES = 200 };
	int pass;
	for (pass = 0; pass < MAX_PASSES && (pass < 2 || __atomic_load_n(&stats_pauses, __ATOMIC_RELAXED) == before);
	     pass++) {
		stats_buf_samples = pass % 2 ? 100 : (size_t)1 << 20;
		ck_assert_int_eq(stats_latency(c.st, &f, &s, &e), 0);
		assert_same(&s, &want);
	}
	stats_buf_samples = (size_t)1 << 20;
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	ck_assert_msg(__atomic_load_n(&stats_pauses, __ATOMIC_RELAXED) > before,
		      "the walk never paused in %d walks while %d operations were committed", pass,
		      __atomic_load_n(&c.n, __ATOMIC_RELAXED));
	store_close(c.st);
	unlink(path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mmstats");
	TCase *tc = tcase_create("core");

	/* No verdict here is a time: the limit only ends a hung test. Check's 4 s default is less
	 * than the paced walk takes under ASan beside two busy processes (4.6 s measured). */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, quartiles_are_floor_nearest_rank);
	tcase_add_test(tc, few_samples_collapse_onto_the_minimum);
	tcase_add_test(tc, seed_003_shape_on_large_values);
	tcase_add_test(tc, walk_matches_the_array_for_every_count);
	tcase_add_test(tc, store_query_filters_and_sorts);
	tcase_add_test(tc, a_walk_paced_by_writers_stays_exact);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
