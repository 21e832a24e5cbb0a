/* Held answers (server/api/waits.c) alone: each waiter is resumed exactly once, by its job's end
 * (only the waiters of that job), by its deadline (not before it, and not much after), or at stop;
 * after stop nothing is taken. The connections are tokens here: the module only hands them back
 * to the resume function, which records them. An absence (nobody else resumed, nobody resumed
 * twice) is shown by an event, never by sleeping: the count the list keeps under its lock, or the
 * thread's end in waits_stop, after which it resumes nobody. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/api/waits.h"
#include "server/clock.h"
#include "tests/unit/check_main.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int tokens[16];
static int resumed[16];      /* times each token was resumed */
static int64_t at_ns[16];    /* when (clk_mono_ns) */

static struct MHD_Connection *conn(int i)
{
	return (struct MHD_Connection *)&tokens[i];
}

static void record(struct MHD_Connection *c)
{
	int i = (int)((int *)c - tokens);

	pthread_mutex_lock(&mu);
	resumed[i]++;
	at_ns[i] = clk_mono_ns();
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static int times(int i)
{
	int n;

	pthread_mutex_lock(&mu);
	n = resumed[i];
	pthread_mutex_unlock(&mu);
	return n;
}

/* Waits up to ms for token i to be resumed; its count then. */
static int wait_resumed(int i, int ms)
{
	struct timespec until;
	int n;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&mu);
	while (!resumed[i] && pthread_cond_timedwait(&cv, &mu, &until) == 0)
		;
	n = resumed[i];
	pthread_mutex_unlock(&mu);
	return n;
}

static struct waits *w;

static void setup(void)
{
	mp_err e = { 0 };

	memset(resumed, 0, sizeof resumed);
	w = waits_start(record, &e);
	ck_assert_msg(w != NULL, "%s", e.detail);
}

static void teardown(void)
{
	waits_free(w);
}

START_TEST(a_job_end_resumes_only_its_waiters)
{
	ck_assert_int_eq(waits_add(w, conn(0), 7, 10000), 0);
	ck_assert_int_eq(waits_add(w, conn(1), 7, 10000), 0);
	ck_assert_int_eq(waits_add(w, conn(2), 8, 10000), 0);
	ck_assert_int_eq(waits_count(w), 3);
	waits_job_ended(w, 7);
	ck_assert_int_eq(wait_resumed(0, 10000), 1);
	ck_assert_int_eq(wait_resumed(1, 10000), 1);
	/* The pass that took 0 and 1 off the list took whatever was due with them, under the lock
	 * the count is kept under: one left is 2 still held, not resumed late. */
	ck_assert_int_eq(waits_count(w), 1);
	ck_assert_int_eq(times(2), 0);
	/* a second end of the same job finds nobody; the resumed ones stay resumed once */
	waits_job_ended(w, 7);
	waits_job_ended(w, 9);
	waits_job_ended(w, 8);
	ck_assert_int_eq(wait_resumed(2, 10000), 1);
	ck_assert_int_eq(waits_count(w), 0);
	/* Stopped, the thread has made every resume it ever will (and finds nobody left): the
	 * counts are final. */
	waits_stop(w);
	ck_assert_int_eq(times(0), 1);
	ck_assert_int_eq(times(1), 1);
	ck_assert_int_eq(times(2), 1);
}
END_TEST

START_TEST(deadlines_are_met_in_their_order)
{
	int64_t t0 = clk_mono_ns();

	/* Added out of order: the nearer deadline, added last, still wakes the thread first, and
	 * each is met on time. The times are what this measures, read from when each was resumed
	 * (not from when this thread got to look): never early, and late by at most a loaded
	 * machine's scheduling slack (1 s) - less than the 2 s between them, so a thread that slept
	 * on to the deadline it knew first fails the first bound. */
	ck_assert_int_eq(waits_add(w, conn(0), 1, 2200), 0);
	ck_assert_int_eq(waits_add(w, conn(1), 2, 200), 0);
	ck_assert_int_eq(wait_resumed(1, 10000), 1);
	ck_assert_int_eq(wait_resumed(0, 10000), 1);
	pthread_mutex_lock(&mu);
	ck_assert_msg(at_ns[1] - t0 >= 200000000 && at_ns[1] - t0 < 1200000000, "%lld ns", (long long)(at_ns[1] - t0));
	ck_assert_msg(at_ns[0] - t0 >= 2200000000 && at_ns[0] - t0 < 3200000000, "%lld ns", (long long)(at_ns[0] - t0));
	ck_assert(at_ns[1] < at_ns[0]);
	pthread_mutex_unlock(&mu);
	/* a waiter whose job ends after its deadline was resumed once, at the deadline: final
	 * once the thread has stopped */
	waits_job_ended(w, 1);
	waits_stop(w);
	ck_assert_int_eq(times(0), 1);
	ck_assert_int_eq(times(1), 1);
}
END_TEST

START_TEST(stop_resumes_everyone_and_takes_no_more)
{
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(waits_add(w, conn(i), 100 + i % 3, 30000), 0);
	ck_assert_int_eq(waits_count(w), 16);
	waits_stop(w);
	/* resumed before waits_stop returned */
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(times(i), 1);
	ck_assert_int_eq(waits_count(w), 0);
	ck_assert_int_eq(waits_add(w, conn(0), 100, 1000), -1);
	waits_job_ended(w, 100);
	ck_assert_int_eq(times(0), 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("waits");
	TCase *t = tcase_create("waits");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 20);
	tcase_add_test(t, a_job_end_resumes_only_its_waiters);
	tcase_add_test(t, deadlines_are_met_in_their_order);
	tcase_add_test(t, stop_resumes_everyone_and_takes_no_more);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
