#include "server/jobs/scheduler.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/jobs/cron.h"
#include "server/log.h"
#include "server/store/db.h"
#include "server/store/schedules.h"

#define NS 1000000000LL
/* The longest sleep: wall-clock jumps (NTP, an administrator's date) are noticed this soon. */
#define MAX_SLEEP_S 60
/* Counting missed occurrences stops here (a minutely schedule down for months); the record says so. */
#define MISSED_COUNT_CAP 100000

struct scheduler {
	const struct app *app;       /* borrowed */
	sched_fire_fn fire;
	pthread_t thread;
	pthread_mutex_t mu;          /* guards stop and kicked */
	pthread_cond_t cond;         /* signalled on kick and stop; CLOCK_REALTIME like the schedules */
	bool stop, kicked;
	/* Held for a whole pass and by scheduler_hold(), so a schedule deleted by the API is never
	 * fired after the DELETE has answered. */
	pthread_mutex_t pass_mu;
	unsigned begun, done;        /* atomic: passes begun and finished (scheduler_passes) */
};

void scheduler_kick(struct scheduler *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->kicked = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

void sched_misfire_plan(const struct cron *c, int32_t offset_s, int64_t due_s, int64_t now_s, int64_t grace_s,
			int64_t cap, int64_t *run_s, int64_t *missed, int64_t *last_missed_s)
{
	int64_t t, from = due_s > now_s - grace_s ? due_s : now_s - grace_s;

	*run_s = *missed = *last_missed_s = 0;
	/* The latest occurrence no older than the grace period, if any: it is the one that runs. */
	for (t = cron_next(c, offset_s, from - 1); t >= 0 && t <= now_s; t = cron_next(c, offset_s, t))
		*run_s = t;
	/* The occurrences from the due one up to now that do not run. */
	for (t = due_s; t >= 0 && t <= now_s && *missed < cap; t = cron_next(c, offset_s, t))
		if (t != *run_s) {
			(*missed)++;
			*last_missed_s = t;
		}
}

/* One due schedule: which occurrence runs, what was missed, when it is due next; then the
 * callback acts on it. */
static void fire_one(struct scheduler *s, const struct sched_due *d, int64_t now_ns)
{
	const struct app *app = s->app;
	struct sched_firing f = { .schedule = d, .now_ns = now_ns, .due_s = d->next_run_ns / NS };
	struct cron c;
	int32_t off;
	int64_t t;
	mp_err e = { 0 };

	if (cron_parse(d->cron, &c, NULL, &e) < 0 || cron_tz_parse(d->timezone, &off, &e) < 0) {
		/* Only a hand-edited database gets here: stop the schedule, say why. */
		log_error("schedule %lld: %s; disabling it", (long long)d->id, e.detail);
		struct sched_ran r = { .run_ns = now_ns, .due_ns = d->next_run_ns, .status = "failed",
				       .error = e.detail };
		sched_store_ran(app->store, d->id, &r, &e);
		return;
	}
	sched_misfire_plan(&c, off, f.due_s, now_ns / NS, d->misfire_grace_s, MISSED_COUNT_CAP, &f.run_s, &f.missed,
			   &f.last_missed_s);
	f.missed_capped = f.missed >= MISSED_COUNT_CAP;
	t = cron_next(&c, off, now_ns / NS);
	f.next_run_ns = t > 0 ? t * NS : 0;
	s->fire(app, &f);
}

/* One pass over the due schedules. Returns the next wake-up (ns), 0 when nothing is scheduled,
 * -1 on a store error. */
static int64_t pass(struct scheduler *s)
{
	struct sched_due *due;
	size_t n;
	int64_t now_ns = clk_wall_ns(), next;
	mp_err e = { 0 };

	__atomic_add_fetch(&s->begun, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&s->pass_mu);
	if (sched_store_due(s->app->store, now_ns, &due, &n, &e) < 0) {
		log_error("scheduler: %s", e.detail);
		pthread_mutex_unlock(&s->pass_mu);
		__atomic_add_fetch(&s->done, 1, __ATOMIC_RELEASE);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		fire_one(s, &due[i], now_ns);
	sched_due_free(due, n);
	next = sched_store_next_wake(s->app->store, &e);
	pthread_mutex_unlock(&s->pass_mu);
	__atomic_add_fetch(&s->done, 1, __ATOMIC_RELEASE);
	if (clk_is_test())
		log_info("test clock: scheduler pass at %lld done", (long long)now_ns);
	return next;
}

static void *thread_main(void *arg)
{
	struct scheduler *s = arg;

	for (;;) {
		int64_t next = pass(s), now = clk_wall_ns(), until = now + MAX_SLEEP_S * NS;

		if (next > 0 && next < until)
			until = next;
		pthread_mutex_lock(&s->mu);
		while (!s->stop && !s->kicked)
			if (clk_cond_wait_until(&s->cond, &s->mu, until) != 0)
				break;
		s->kicked = false;
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

struct scheduler *scheduler_start(const struct app *app, sched_fire_fn fire, mp_err *e)
{
	struct scheduler *s = calloc(1, sizeof *s);

	if (!s) {
		mp_nomem(e);
		return NULL;
	}
	s->app = app;
	s->fire = fire;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->pass_mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&s->thread, NULL, thread_main, s) != 0) {
		mp_fail(e, MPE_SCHEDULE_THREAD, 0, "cannot start the scheduler thread");
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->pass_mu);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return NULL;
	}
	return s;
}

void scheduler_stop(struct scheduler *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->pass_mu);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void scheduler_passes(struct scheduler *s, unsigned *begun, unsigned *done)
{
	*done = __atomic_load_n(&s->done, __ATOMIC_ACQUIRE);
	*begun = __atomic_load_n(&s->begun, __ATOMIC_ACQUIRE);
}

void scheduler_hold(struct scheduler *s)
{
	if (s)
		pthread_mutex_lock(&s->pass_mu);
}

void scheduler_release(struct scheduler *s)
{
	if (s)
		pthread_mutex_unlock(&s->pass_mu);
}
