#include "server/api/slow.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/testhold.h"
#include "server/log.h"

struct item {
	struct MHD_Connection *conn;  /* borrowed: suspended until fn has run */
	void (*fn)(void *arg);
	void *arg;                    /* borrowed: the request's state */
	struct item *next;
};

struct slow {
	pthread_t thread[SLOW_MAX_THREADS];
	unsigned nthreads;            /* started */
	enum slow_prio prio;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct item *head, *tail;     /* owned */
	void (*resume)(struct MHD_Connection *conn);
	bool stopping;
};

/* Test builds only (common/testhold.h): with MEMPOLICYD_TEST_HOLD_SLOW naming a FIFO, each handler
 * run here (a scan or a read) waits before it runs until a test has opened and closed the FIFO. */
static void test_hold(void)
{
	test_hold_fifo("MEMPOLICYD_TEST_HOLD_SLOW");
}

/* The calling thread's priority, lowered once for good: an unprivileged thread may lower its own
 * but not raise it again (RLIMIT_NICE is 0 by default), so these threads do nothing else. */
static void lower_priority(enum slow_prio prio)
{
	struct sched_param none = { 0 };

	if (prio == SLOW_IDLE) {
		if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &none))
			log_warn("slow handlers: cannot run at SCHED_IDLE; they run at normal priority");
		return;
	}
	/* On Linux a nice value is a thread's own: PRIO_PROCESS with a thread id sets that thread's. */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), SLOW_READ_NICE) < 0)
		log_warn("read handlers: cannot lower their priority to nice %d (%s); they run at normal priority",
			 SLOW_READ_NICE, strerror(errno));
}

static void *worker(void *p)
{
	struct slow *sl = p;

	lower_priority(sl->prio);
	pthread_mutex_lock(&sl->lock);
	for (;;) {
		struct item *it = sl->head;
		if (!it) {
			if (sl->stopping)
				break;
			pthread_cond_wait(&sl->cond, &sl->lock);
			continue;
		}
		sl->head = it->next;
		if (!sl->head)
			sl->tail = NULL;
		pthread_mutex_unlock(&sl->lock);
		test_hold();
		it->fn(it->arg);
		sl->resume(it->conn);
		free(it);
		pthread_mutex_lock(&sl->lock);
	}
	pthread_mutex_unlock(&sl->lock);
	return NULL;
}

struct slow *slow_start(void (*resume)(struct MHD_Connection *conn), unsigned nthreads, enum slow_prio prio,
			mp_err *e)
{
	struct slow *sl;

	if (nthreads < 1 || nthreads > SLOW_MAX_THREADS) {
		mp_fail(e, MPE_HTTP_START, 0, "handler threads: %u asked for, 1 to %d allowed", nthreads, SLOW_MAX_THREADS);
		return NULL;
	}
	if (!(sl = calloc(1, sizeof *sl))) {
		mp_nomem(e);
		return NULL;
	}
	sl->resume = resume;
	sl->prio = prio;
	pthread_mutex_init(&sl->lock, NULL);
	pthread_cond_init(&sl->cond, NULL);
	for (; sl->nthreads < nthreads; sl->nthreads++)
		if (pthread_create(&sl->thread[sl->nthreads], NULL, worker, sl)) {
			mp_fail(e, MPE_HTTP_START, 0, "cannot start the threads for %s handlers",
				prio == SLOW_IDLE ? "slow" : "read");
			slow_stop(sl);   /* those started end: nothing is queued yet */
			return NULL;
		}
	return sl;
}

int slow_submit(struct slow *sl, struct MHD_Connection *conn, void (*fn)(void *arg), void *arg)
{
	struct item *it = calloc(1, sizeof *it);

	if (!it)
		return -1;
	it->conn = conn;
	it->fn = fn;
	it->arg = arg;
	pthread_mutex_lock(&sl->lock);
	if (sl->tail)
		sl->tail->next = it;
	else
		sl->head = it;
	sl->tail = it;
	pthread_cond_signal(&sl->cond);
	pthread_mutex_unlock(&sl->lock);
	return 0;
}

void slow_hurry(struct slow *sl)
{
	struct sched_param none = { 0 };
	int rc;

	/* Allowed unprivileged: leaving SCHED_IDLE for SCHED_OTHER at the thread's own nice value.
	 * Read handlers run at a nice value, which always gets some CPU: nothing to hurry. */
	if (!sl || sl->prio != SLOW_IDLE)
		return;
	for (unsigned i = 0; i < sl->nthreads; i++)
		if ((rc = pthread_setschedparam(sl->thread[i], SCHED_OTHER, &none)) != 0)
			log_warn("slow handlers: cannot leave SCHED_IDLE at stop (%s); a scan in flight may be cut off",
				 strerror(rc));
}

void slow_stop(struct slow *sl)
{
	if (!sl)
		return;
	pthread_mutex_lock(&sl->lock);
	sl->stopping = true;
	pthread_cond_broadcast(&sl->cond);
	pthread_mutex_unlock(&sl->lock);
	for (unsigned i = 0; i < sl->nthreads; i++)
		pthread_join(sl->thread[i], NULL);
	pthread_cond_destroy(&sl->cond);
	pthread_mutex_destroy(&sl->lock);
	free(sl);
}
