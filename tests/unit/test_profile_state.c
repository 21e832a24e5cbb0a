/* The profile state (ops/profile_state.c), the object the drift watcher, the start-time apply and
 * the readers share: none until an install; reasons decide applied or degraded; drift reported on
 * a managed key degrades and clears; a yield unmanages a key and wakes changes_fd; a refusal of
 * the profile in force adds invalid_profile and leaves its keys; wait returns once the job ended. */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/ops/profile_state.h"
#include "tests/unit/check_main.h"

static struct ps_key *keys2(void)
{
	struct ps_key *k = calloc(2, sizeof *k);

	snprintf(k[0].k.id, sizeof k[0].k.id, "thp.defrag");
	snprintf(k[1].k.id, sizeof k[1].k.id, "hugepages.2M.node0");
	for (int i = 0; i < 2; i++)
		k[i].managed = k[i].supported = k[i].in_sync = true;
	return k;
}

/* Whether the eventfd is readable now, and re-armed after. */
static bool fired(struct profile_state *ps)
{
	struct pollfd p = { .fd = profile_state_changes_fd(ps), .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, 0) != 1)
		return false;
	ck_assert_int_eq(read(p.fd, &v, sizeof v), (int)sizeof v);
	return true;
}

static struct ps_snapshot snap(struct profile_state *ps)
{
	struct ps_snapshot s;

	ck_assert_int_eq(profile_state_snapshot(ps, &s), 0);
	return s;
}

START_TEST(none_until_an_install_then_reasons_decide)
{
	struct profile_state *ps = profile_state_new("db");
	struct ps_snapshot s = snap(ps);
	char name[PROF_NAME_MAX];

	ck_assert_str_eq(ps_state_name(s.state), "none");
	ck_assert_str_eq(s.name, "db");
	ck_assert(profile_state_name(ps, name, sizeof name) && !strcmp(name, "db"));
	ck_assert(!fired(ps));
	profile_state_install(ps, "web", keys2(), 2, 0, 11, 3, false);
	ck_assert(fired(ps));
	s = snap(ps);
	ck_assert_str_eq(s.name, "web");
	ck_assert_str_eq(ps_state_name(s.state), "applied");
	ck_assert_int_eq(s.n, 2);
	ck_assert_int_eq(s.operation_id, 11);
	ck_assert_int_eq(s.job_id, 3);
	ps_snapshot_free(&s);
	profile_state_install(ps, "web", keys2(), 2, PSR_PARTIAL_ALLOCATION, 12, 4, false);
	s = snap(ps);
	ck_assert_str_eq(ps_state_name(s.state), "degraded");
	ck_assert_uint_eq(s.reasons, PSR_PARTIAL_ALLOCATION);
	ps_snapshot_free(&s);
	profile_state_free(ps);
}
END_TEST

START_TEST(drift_degrades_and_clears_and_a_yield_unmanages)
{
	struct profile_state *ps = profile_state_new(NULL);
	struct ps_snapshot s;

	profile_state_install(ps, "db", keys2(), 2, 0, 1, 1, false);
	(void)fired(ps);
	ck_assert_int_eq(profile_state_set_drift(ps, "nope", true, "x"), -1);
	ck_assert_int_eq(profile_state_set_drift(ps, "thp.defrag", true, "never"), 0);
	ck_assert(!fired(ps));   /* drift changes no managed set */
	s = snap(ps);
	ck_assert_str_eq(ps_state_name(s.state), "degraded");
	ck_assert_uint_eq(s.reasons, PSR_DRIFT);
	ck_assert_str_eq(ps_key_verdict(&s.keys[0]), "drift");
	ck_assert_str_eq(s.keys[0].actual, "never");
	ps_snapshot_free(&s);
	ck_assert_int_eq(profile_state_set_drift(ps, "thp.defrag", false, "defer"), 0);
	s = snap(ps);
	ck_assert_str_eq(ps_state_name(s.state), "applied");
	ck_assert_str_eq(ps_key_verdict(&s.keys[0]), "in_sync");
	ps_snapshot_free(&s);
	/* a drifting key yielded: the admin's value wins, the drift reason goes */
	profile_state_set_drift(ps, "hugepages.2M.node0", true, "3");
	ck_assert_int_eq(profile_state_yield(ps, "hugepages.2M.node0"), 0);
	ck_assert(fired(ps));
	s = snap(ps);
	ck_assert_str_eq(ps_state_name(s.state), "applied");
	ck_assert_str_eq(ps_key_verdict(&s.keys[1]), "yielded");
	ps_snapshot_free(&s);
	ck_assert_int_eq(profile_state_yield(ps, "hugepages.2M.node0"), -1);   /* no longer managed */
	ck_assert_int_eq(profile_state_set_drift(ps, "hugepages.2M.node0", true, "1"), -1);
	profile_state_free(ps);
}
END_TEST

START_TEST(a_refusal_keeps_the_profile_in_force)
{
	struct profile_state *ps = profile_state_new(NULL);
	struct prof_loc loc = { "db.conf", 7, 3 };
	struct ps_snapshot s;

	profile_state_reject(ps, "other", "profile.syntax", "other.conf:1:1: ...", NULL, 0);
	s = snap(ps);
	ck_assert_str_eq(ps_state_name(s.state), "none");   /* nothing in force: nothing degraded */
	ck_assert(s.error.set);
	ck_assert_str_eq(s.error.profile, "other");
	ps_snapshot_free(&s);
	profile_state_install(ps, "db", keys2(), 2, 0, 1, 1, false);
	profile_state_reject(ps, "other", "profile.syntax", "other.conf:1:1: ...", NULL, 0);
	s = snap(ps);
	ck_assert_str_eq(ps_state_name(s.state), "applied");   /* another profile's error */
	ps_snapshot_free(&s);
	profile_state_reject(ps, "db", "profile.bad_value", "db.conf:7:3: ...", &loc, 0);
	s = snap(ps);
	ck_assert_str_eq(s.name, "db");
	ck_assert_int_eq(s.n, 2);
	ck_assert_uint_eq(s.reasons, PSR_INVALID_PROFILE);
	ck_assert_int_eq(s.error.loc.line, 7);
	ps_snapshot_free(&s);
	profile_state_install(ps, "db", keys2(), 2, 0, 2, 2, false);   /* an apply that succeeds clears it */
	s = snap(ps);
	ck_assert_uint_eq(s.reasons, 0);
	ck_assert(!s.error.set);
	ps_snapshot_free(&s);
	profile_state_free(ps);
}
END_TEST

static void *install_later(void *arg)
{
	struct profile_state *ps = arg;
	struct timespec t = { 0, 20 * 1000000L };

	nanosleep(&t, NULL);
	profile_state_install(ps, "db", keys2(), 2, 0, 9, 5, false);
	return NULL;
}

START_TEST(wait_returns_once_the_job_ended)
{
	struct profile_state *ps = profile_state_new(NULL);
	struct ps_snapshot s;
	pthread_t th;

	ck_assert(!profile_state_wait(ps, 5, 0));   /* not ended: a zero wait says so */
	profile_state_applying(ps, 5);
	s = snap(ps);
	ck_assert_int_eq(s.applying_job, 5);
	ps_snapshot_free(&s);
	ck_assert_int_eq(pthread_create(&th, NULL, install_later, ps), 0);
	ck_assert(profile_state_wait(ps, 5, 10000));
	pthread_join(th, NULL);
	s = snap(ps);
	ck_assert_int_eq(s.applying_job, 0);
	ck_assert_int_eq(s.job_id, 5);
	ps_snapshot_free(&s);
	ck_assert(profile_state_wait(ps, 4, 0));   /* an older job: over already */
	profile_state_applying(ps, 4);              /* a late start of an ended job changes nothing */
	s = snap(ps);
	ck_assert_int_eq(s.applying_job, 0);
	ps_snapshot_free(&s);
	profile_state_free(ps);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("profile_state");
	TCase *t = tcase_create("core");

	tcase_add_test(t, none_until_an_install_then_reasons_decide);
	tcase_add_test(t, drift_degrades_and_clears_and_a_yield_unmanages);
	tcase_add_test(t, a_refusal_keeps_the_profile_in_force);
	tcase_add_test(t, wait_returns_once_the_job_ended);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
