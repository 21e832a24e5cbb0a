#include "server/jobs/maint.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "server/clock.h"
#include "server/log.h"

/* One transaction per step, then a pause. The writer's mutex is not fair: a thread that unlocks
 * and locks again at once keeps it while a waiting request's thread is still waking, so several
 * transactions back to back made a knob change wait for all of them (p99 107 ms while a million
 * batches were removed). With a pause after every transaction, a change waits for one at most. */
#define STEP_TX 1
#define STEP_PAUSE_NS 5000000LL

struct maint {
	struct store *st;            /* borrowed */
	struct retention rule;
	pthread_t thread;
	pthread_mutex_t mu;          /* guards stop and kicked */
	pthread_cond_t cond;
	bool stop, kicked;
};

/* Waits MAINT_INTERVAL_S on the daemon's wall clock (with the test clock: until it moves, see
 * server/clock.h), or until kicked or stopped; true when stopping. */
static bool wait_next(struct maint *m)
{
	int64_t until = clk_wall_ns() + MAINT_INTERVAL_S * CLK_NS;
	bool stop;

	pthread_mutex_lock(&m->mu);
	while (!m->stop && !m->kicked)
		if (clk_cond_wait_until(&m->cond, &m->mu, until) != 0)
			break;
	m->kicked = false;
	stop = m->stop;
	pthread_mutex_unlock(&m->mu);
	return stop;
}

/* The pause between two bursts is real time given to the writers, not an event on the wall
 * clock (which a test clock stands still): a plain sleep. */
static bool pause_step(struct maint *m)
{
	struct timespec ts = { 0, STEP_PAUSE_NS };
	bool stop;

	nanosleep(&ts, NULL);
	pthread_mutex_lock(&m->mu);
	stop = m->stop;
	pthread_mutex_unlock(&m->mu);
	return stop;
}

/* A count cap of at most n (0: none) tightened to n. */
static void cap_to(int64_t *cap, int64_t n)
{
	if (n >= 0 && (*cap == 0 || n < *cap))
		*cap = n;
}

/* The pass's rule: the options' bounds and, when the database is over retain-bytes, the counts
 * that would bring it under (store_size_caps), measured once per pass and not per step: each step
 * then removes by count as the other bounds do, and the next pass measures again what it freed. */
static struct retention pass_rule(struct maint *m)
{
	struct retention r = m->rule;
	int64_t ops, jobs, used = 0;
	mp_err e = { 0 };

	if (r.max_bytes <= 0)
		return r;
	if (store_size_caps(m->st, r.max_bytes, &ops, &jobs, &used, &e) < 0) {
		log_warn("retention: %s", e.detail);
		return r;
	}
	if (ops >= 0 || jobs >= 0) {
		log_info("retention: %lld bytes in use, over retain-bytes %lld: keeping the newest %lld operation(s) and "
			 "%lld job(s)", (long long)used, (long long)r.max_bytes, (long long)ops, (long long)jobs);
		cap_to(&r.max_operations, ops);
		cap_to(&r.max_jobs, jobs);
	}
	return r;
}

static bool pass(struct maint *m)
{
	struct retain_counts n = { 0 };
	mp_err e = { 0 };
	int rc;
	int64_t now = clk_wall_ns();
	struct retention rule = pass_rule(m);

	do {
		rc = store_prune(m->st, &rule, now, STEP_TX, &n, &e);
		if (rc < 0) {
			/* A full disk or a busy database: the next pass tries again. */
			log_warn("retention: %s", e.detail);
			break;
		}
		if (rc > 0 && pause_step(m))
			return true;
	} while (rc > 0);
	if (n.operations || n.batches || n.jobs)
		log_info("retention: removed %lld operation(s), %lld batch(es), %lld job(s)", (long long)n.operations,
			 (long long)n.batches, (long long)n.jobs);
	/* What a test waits for (the test clock's time of the pass: tests/e2e/test_retention.py). */
	log_debug("retention: pass at %lld done", (long long)now);
	return false;
}

static void *thread_main(void *arg)
{
	struct maint *m = arg;

	while (!pass(m) && !wait_next(m))
		;
	return NULL;
}

struct maint *maint_start(struct store *st, const struct retention *r, mp_err *e)
{
	struct maint *m = calloc(1, sizeof *m);

	if (!m) {
		mp_nomem(e);
		return NULL;
	}
	m->st = st;
	m->rule = *r;
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cond, NULL);
	if (pthread_create(&m->thread, NULL, thread_main, m) != 0) {
		mp_fail(e, MPE_MAINT_THREAD, 0, "cannot start the maintenance thread");
		pthread_cond_destroy(&m->cond);
		pthread_mutex_destroy(&m->mu);
		free(m);
		return NULL;
	}
	return m;
}

void maint_kick(struct maint *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->kicked = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->mu);
}

void maint_stop(struct maint *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->thread, NULL);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
