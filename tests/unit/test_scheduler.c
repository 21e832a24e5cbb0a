/* The missed-run policy (sched_misfire_plan): which occurrence runs after downtime, how many are
 * skipped. The e2e test checks one missed run for real; these check the arithmetic of many. */
#include <time.h>

#include "server/jobs/cron.h"
#include "server/jobs/scheduler.h"
#include "tests/unit/check_main.h"

static int64_t utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi };
	return (int64_t)timegm(&tm);
}

static struct cron cr(const char *text)
{
	struct cron c;
	mp_err e = { 0 };
	ck_assert_msg(cron_parse(text, &c, NULL, &e) == 0, "%s", e.detail);
	return c;
}

struct plan {
	int64_t run, missed, last;
};

static struct plan plan(const char *text, int32_t off, int64_t due, int64_t now, int64_t grace)
{
	struct cron c = cr(text);
	struct plan p;
	sched_misfire_plan(&c, off, due, now, grace, 100000, &p.run, &p.missed, &p.last);
	return p;
}

START_TEST(on_time_runs_and_skips_nothing)
{
	int64_t due = utc(2024, 6, 1, 2, 0);
	struct plan p = plan("0 2 * * *", 0, due, due, 3600);
	ck_assert(p.run == due && p.missed == 0 && p.last == 0);
	/* A few seconds late (a busy machine) is still on time. */
	p = plan("0 2 * * *", 0, due, due + 3, 5);
	ck_assert(p.run == due && p.missed == 0);
}
END_TEST

START_TEST(one_missed_within_grace_runs)
{
	int64_t due = utc(2024, 6, 1, 2, 0);
	struct plan p = plan("0 2 * * *", 0, due, due + 3599, 3600);
	ck_assert(p.run == due && p.missed == 0);
	p = plan("0 2 * * *", 0, due, due + 3600, 3600);   /* exactly the grace: still runs */
	ck_assert(p.run == due && p.missed == 0);
}
END_TEST

START_TEST(one_missed_past_grace_is_skipped)
{
	int64_t due = utc(2024, 6, 1, 2, 0);
	struct plan p = plan("0 2 * * *", 0, due, due + 3601, 3600);
	ck_assert(p.run == 0 && p.missed == 1 && p.last == due);
}
END_TEST

/* Down five and a half hours with an hourly schedule and 1 h grace: the latest (07:00) runs once,
 * the five before it are skipped. */
START_TEST(many_missed_coalesce_into_one_run)
{
	int64_t due = utc(2024, 6, 1, 2, 0), now = utc(2024, 6, 1, 7, 30);
	struct plan p = plan("0 * * * *", 0, due, now, 3600);
	ck_assert(p.run == utc(2024, 6, 1, 7, 0));
	ck_assert_int_eq(p.missed, 5);
	ck_assert(p.last == utc(2024, 6, 1, 6, 0));
	/* With a 10 minute grace nothing is recent enough: all six are skipped. */
	p = plan("0 * * * *", 0, due, now, 600);
	ck_assert(p.run == 0 && p.missed == 6 && p.last == utc(2024, 6, 1, 7, 0));
}
END_TEST

/* Down for three days with a daily job and a 1 h grace: the three are skipped (none is recent). */
START_TEST(days_down)
{
	int64_t due = utc(2024, 2, 28, 2, 0), now = utc(2024, 3, 1, 12, 0);
	struct plan p = plan("0 2 * * *", 0, due, now, 3600);
	ck_assert(p.run == 0 && p.missed == 3 && p.last == utc(2024, 3, 1, 2, 0));   /* Feb 29 counted */
	p = plan("0 2 * * *", 3600, due - 3600, now, 12 * 3600);   /* at +01:00 (02:00 local is 01:00 UTC), a 12 h grace reaches back to it */
	ck_assert(p.run == utc(2024, 3, 1, 1, 0));
	ck_assert_int_eq(p.missed, 2);
}
END_TEST

START_TEST(count_is_capped)
{
	struct cron c = cr("* * * * *");
	int64_t due = utc(2024, 1, 1, 0, 0), run, missed, last;
	sched_misfire_plan(&c, 0, due, due + 86400 * 365, 60, 1000, &run, &missed, &last);
	ck_assert_int_eq(missed, 1000);
	ck_assert(run == due + 86400 * 365);
}
END_TEST

static Suite *sched_suite(void)
{
	Suite *s = suite_create("scheduler");
	TCase *t = tcase_create("misfire");
	tcase_add_test(t, on_time_runs_and_skips_nothing);
	tcase_add_test(t, one_missed_within_grace_runs);
	tcase_add_test(t, one_missed_past_grace_is_skipped);
	tcase_add_test(t, many_missed_coalesce_into_one_run);
	tcase_add_test(t, days_down);
	tcase_add_test(t, count_is_capped);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(sched_suite)
