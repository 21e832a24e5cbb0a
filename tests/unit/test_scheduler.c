/* The missed-run policy (sched_misfire_plan): which occurrence runs after downtime, how many are
 * skipped. The e2e test checks one missed run for real; these check the arithmetic of many.
 * And the scheduler thread on its own, on a real SQLite file: it fires a due schedule through the
 * callback it was started with (this program links no ops/ code: schedules.c's use cases and the
 * resize are not in it), and fires nothing while held. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/jobs/cron.h"
#include "server/jobs/job_ctx.h"
#include "server/jobs/scheduler.h"
#include "server/store/db.h"
#include "server/store/schedules.h"
#include "tests/unit/check_main.h"

/* Weak: resolved only if an object defining them was linked in, i.e. the scheduler pulled in ops/
 * (the old scheduler called resize_submit, which pulled in resize.o and pools.o). */
extern json_t *pools_get(const struct app *app, uint64_t size_kb, mp_err *e) __attribute__((weak));
extern const struct job_kind resize_job __attribute__((weak));
extern void schedule_fire(const struct app *app, const struct sched_firing *f) __attribute__((weak));

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

#define NS 1000000000LL

static char dir[64];
static struct app app;
static pthread_mutex_t fired_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fired_cond = PTHREAD_COND_INITIALIZER;
static int nfired;
static struct sched_firing last;
static int64_t last_id;

/* What ops/schedules.c does, minus the action: note the firing, move next_run. */
static void test_fire(const struct app *a, const struct sched_firing *f)
{
	struct sched_ran r = { .run_ns = f->now_ns, .due_ns = f->run_s * NS, .status = "submitted",
			       .next_run_ns = f->next_run_ns };
	mp_err e = { 0 };

	ck_assert_ptr_eq(a, &app);
	ck_assert_msg(sched_store_ran(a->store, f->schedule->id, &r, &e) == 0, "%s", e.detail);
	pthread_mutex_lock(&fired_lock);
	nfired++;
	last = *f;
	last_id = f->schedule->id;
	last.schedule = NULL;        /* borrowed for the call only */
	pthread_cond_broadcast(&fired_cond);
	pthread_mutex_unlock(&fired_lock);
}

static void store_setup(void)
{
	char path[96];
	mp_err e = { 0 };

	snprintf(dir, sizeof dir, "/tmp/mpd-sched-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/s.db", dir);
	memset(&app, 0, sizeof app);
	app.store = store_open(path, &e);
	ck_assert_msg(app.store != NULL, "%s", e.detail);
	nfired = 0;
	last_id = 0;
}

static void store_teardown(void)
{
	char cmd[128];

	store_close(app.store);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A minutely schedule whose next run was due_ns. */
static int64_t add_due(int64_t due_ns)
{
	json_t *action = json_pack("{s:{s:s, s:i}}", "test", "size", "2M", "total", 1);
	struct schedule_new n = { .cron = "* * * * *", .timezone = "UTC", .action = action, .enabled = true,
				  .misfire_grace_s = 3600, .created_ns = clk_wall_ns(), .next_run_ns = due_ns,
				  .max_schedules = 1000 };
	mp_err e = { 0 };
	int64_t id = sched_store_insert(app.store, &n, &e);

	ck_assert_msg(id > 0, "%s", e.detail);
	json_decref(action);
	return id;
}

/* Waits up to 10 s for n firings in all. */
static bool wait_fired(int n)
{
	struct timespec until;
	bool ok = true;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&fired_lock);
	while (nfired < n && ok)
		ok = pthread_cond_timedwait(&fired_cond, &fired_lock, &until) == 0;
	ok = nfired >= n;
	pthread_mutex_unlock(&fired_lock);
	return ok;
}

/* Waits up to 10 s until at least `begun` passes have begun and `done` have finished. */
static bool wait_passes(struct scheduler *s, unsigned begun, unsigned done)
{
	unsigned b, d;

	for (int i = 0; i < 10000; i++) {
		scheduler_passes(s, &b, &d);
		if (b >= begun && d >= done)
			return true;
		usleep(1000);
	}
	return false;
}

START_TEST(no_ops_code_is_linked)
{
	ck_assert_msg(pools_get == NULL, "ops/pools.c is linked into a program using only the scheduler");
	ck_assert_msg(&resize_job == NULL, "ops/resize.c is linked into a program using only the scheduler");
	ck_assert_msg(schedule_fire == NULL, "ops/schedules.c is linked into a program using only the scheduler");
}
END_TEST

/* Due a minute and a half ago, within the grace: it fires once, through the callback, naming the
 * latest due minute; next_run moves past now and it does not fire again. */
START_TEST(a_due_schedule_fires_the_callback)
{
	int64_t now = clk_wall_ns(), due = (now / NS / 60 - 1) * 60 * NS, id = add_due(due);
	mp_err e = { 0 };
	struct scheduler *s = scheduler_start(&app, test_fire, &e);
	unsigned begun, done;

	ck_assert_msg(s != NULL, "%s", e.detail);
	ck_assert_msg(wait_fired(1), "the due schedule never fired");
	pthread_mutex_lock(&fired_lock);
	ck_assert_int_eq(last_id, id);
	ck_assert_int_eq(last.due_s, due / NS);
	ck_assert(last.run_s >= due / NS && last.run_s <= last.now_ns / NS && last.run_s % 60 == 0);
	ck_assert(last.next_run_ns > last.now_ns && last.next_run_ns - last.now_ns <= 60 * NS);
	ck_assert_int_eq(last.missed, last.run_s == due / NS ? 0 : 1);
	pthread_mutex_unlock(&fired_lock);
	/* a whole pass begun after that firing finds nothing due */
	scheduler_passes(s, &begun, &done);
	scheduler_kick(s);
	ck_assert_msg(wait_passes(s, 0, begun + 1), "no pass after the kick");
	pthread_mutex_lock(&fired_lock);
	ck_assert_int_eq(nfired, 1);
	pthread_mutex_unlock(&fired_lock);
	scheduler_stop(s);
}
END_TEST

/* While held (as schedule_delete holds it), a due schedule does not fire; released, it does. */
START_TEST(nothing_fires_while_held)
{
	mp_err e = { 0 };
	struct scheduler *s = scheduler_start(&app, test_fire, &e);
	unsigned begun, done;

	ck_assert_msg(s != NULL, "%s", e.detail);
	ck_assert_msg(wait_passes(s, 0, 1), "no first pass");   /* it found nothing */
	scheduler_hold(s);
	scheduler_passes(s, &begun, &done);
	add_due(clk_wall_ns() - NS);
	scheduler_kick(s);
	/* The thread has begun the pass the kick asked for, and cannot finish it: nothing fired. */
	ck_assert_msg(wait_passes(s, begun + 1, 0), "the kick began no pass");
	scheduler_passes(s, &begun, &done);
	pthread_mutex_lock(&fired_lock);
	ck_assert_int_eq(nfired, 0);
	pthread_mutex_unlock(&fired_lock);
	ck_assert_uint_eq(done, begun - 1);
	scheduler_release(s);
	ck_assert_msg(wait_fired(1), "the schedule never fired after the release");
	scheduler_stop(s);
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
	t = tcase_create("thread");
	tcase_add_checked_fixture(t, store_setup, store_teardown);
	tcase_set_timeout(t, 30);
	tcase_add_test(t, no_ops_code_is_linked);
	tcase_add_test(t, a_due_schedule_fires_the_callback);
	tcase_add_test(t, nothing_fires_while_held);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(sched_suite)
