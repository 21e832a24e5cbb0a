/* Held answers (see waits.h for the why). A short unsorted list: a waiter is a connection, so
 * there are at most max-connections of them, and each pass of the thread is one walk. */
#include "server/api/waits.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "server/clock.h"
#include "server/log.h"

struct waiter {
	struct MHD_Connection *conn;  /* borrowed: suspended until this module resumes it */
	int64_t job_id;
	int64_t due_ns;               /* CLOCK_MONOTONIC; 0: due now (its job ended, or stopping) */
	struct waiter *next;
};

struct waits {
	void (*resume)(struct MHD_Connection *conn);
	pthread_t thread;
	bool have_thread;
	pthread_mutex_t lock;         /* guards everything below */
	pthread_cond_t wake;          /* on CLOCK_MONOTONIC: a waiter's deadline, a job's end, a stop */
	struct waiter *head;          /* owned */
	int count;
	bool stopping;
};

/* Takes the due waiters off the list (all of them when stopping) into *due; returns the nearest
 * deadline left, 0 for none. Under w->lock. */
static int64_t take_due(struct waits *w, int64_t now, struct waiter **due)
{
	int64_t next = 0;

	for (struct waiter **p = &w->head; *p;) {
		struct waiter *x = *p;
		if (w->stopping || x->due_ns <= now) {
			*p = x->next;
			x->next = *due;
			*due = x;
			w->count--;
			continue;
		}
		if (!next || x->due_ns < next)
			next = x->due_ns;
		p = &x->next;
	}
	return next;
}

static void *run(void *arg)
{
	struct waits *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct waiter *due = NULL;
		int64_t next = take_due(w, clk_mono_ns(), &due);
		bool stop = w->stopping;

		if (due) {
			/* Resumed with the lock released: MHD_resume_connection takes libmicrohttpd's own
			 * lock, and waits_add is called by its workers. */
			pthread_mutex_unlock(&w->lock);
			while (due) {
				struct waiter *x = due;
				due = x->next;
				w->resume(x->conn);
				free(x);
			}
			pthread_mutex_lock(&w->lock);
			continue;   /* the list may have changed meanwhile */
		}
		if (stop)
			break;
		if (!next) {
			pthread_cond_wait(&w->wake, &w->lock);
		} else {
			struct timespec ts = { (time_t)(next / 1000000000), (long)(next % 1000000000) };
			pthread_cond_timedwait(&w->wake, &w->lock, &ts);
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct waits *waits_start(void (*resume)(struct MHD_Connection *conn), mp_err *e)
{
	struct waits *w = calloc(1, sizeof *w);
	pthread_condattr_t ca;

	if (!w) {
		mp_nomem(e);
		return NULL;
	}
	w->resume = resume;
	pthread_mutex_init(&w->lock, NULL);
	/* The deadlines are clk_mono_ns()'s: the kernel's monotonic clock even under the test clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->thread, NULL, run, w)) {
		mp_fail(e, MPE_HTTP_START, errno, "cannot start the thread for held answers");
		waits_free(w);
		return NULL;
	}
	w->have_thread = true;
	return w;
}

int waits_add(struct waits *w, struct MHD_Connection *conn, int64_t job_id, int64_t timeout_ms)
{
	struct waiter *x = calloc(1, sizeof *x);

	if (!x)
		return -1;
	x->conn = conn;
	x->job_id = job_id;
	x->due_ns = clk_mono_ns() + timeout_ms * 1000000;
	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		pthread_mutex_unlock(&w->lock);
		free(x);
		return -1;
	}
	x->next = w->head;
	w->head = x;
	w->count++;
	pthread_cond_signal(&w->wake);   /* its deadline may be the nearest */
	pthread_mutex_unlock(&w->lock);
	return 0;
}

void waits_job_ended(struct waits *w, int64_t job_id)
{
	bool any = false;

	pthread_mutex_lock(&w->lock);
	for (struct waiter *x = w->head; x; x = x->next)
		if (x->job_id == job_id) {
			x->due_ns = 0;
			any = true;
		}
	if (any)
		pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

int waits_count(struct waits *w)
{
	int n;

	pthread_mutex_lock(&w->lock);
	n = w->count;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void waits_stop(struct waits *w)
{
	if (!w || !w->have_thread)
		return;
	pthread_mutex_lock(&w->lock);
	if (w->count)
		log_info("stopping: answering %d held request%s now", w->count, w->count == 1 ? "" : "s");
	w->stopping = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	/* The thread resumes every waiter left before it ends. */
	pthread_join(w->thread, NULL);
	w->have_thread = false;
}

void waits_free(struct waits *w)
{
	if (!w)
		return;
	waits_stop(w);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
