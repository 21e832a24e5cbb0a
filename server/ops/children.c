#include "server/ops/children.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/kernel/proc.h"
#include "server/kernel/spawn.h"
#include "server/ops/sample.h"
#include "server/priv/act.h"

struct children {
	const struct app *app;       /* borrowed */
	int stopfd;                  /* owned eventfd: readable once the daemon stops */
	pthread_mutex_t mu;
	pthread_cond_t idle;         /* signalled when a watcher ends */
	int slots;                   /* reserved + adopted */
	int threads;                 /* watchers running */
};

struct watcher {
	struct children *c;          /* borrowed */
	struct child_info ci;
};

static int64_t mono_ms(void)
{
	return clk_mono_ns() / 1000000;
}

struct children *children_open(const struct app *app, mp_err *e)
{
	struct children *c = calloc(1, sizeof *c);

	if (!c) {
		mp_nomem(e);
		return NULL;
	}
	c->app = app;
	if ((c->stopfd = eventfd(0, EFD_CLOEXEC)) < 0) {
		mp_fail(e, MPE_INTERNAL_ERROR, errno, "eventfd: %s", strerror(errno));
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->idle, NULL);
	return c;
}

void children_close(struct children *c)
{
	uint64_t one = 1;

	if (!c)
		return;
	if (write(c->stopfd, &one, sizeof one) < 0)
		log_error("children: waking the watchers: %s", strerror(errno));
	pthread_mutex_lock(&c->mu);
	while (c->threads > 0)
		pthread_cond_wait(&c->idle, &c->mu);
	pthread_mutex_unlock(&c->mu);
	close(c->stopfd);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int children_reserve(struct children *c, mp_err *e)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (c->slots >= CHILDREN_MAX)
		rc = mp_fail(e, MPE_PROCESS_TOO_MANY, 0, "the daemon already tracks %d launched processes", CHILDREN_MAX);
	else
		c->slots++;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void children_release(struct children *c)
{
	pthread_mutex_lock(&c->mu);
	c->slots--;
	pthread_mutex_unlock(&c->mu);
}

int children_count(struct children *c)
{
	int n;

	pthread_mutex_lock(&c->mu);
	n = c->slots;
	pthread_mutex_unlock(&c->mu);
	return n;
}

/* Returns true when the daemon is stopping. */
static bool wait_event(struct watcher *w, int pidfd, int timeout_ms, bool *exited)
{
	struct pollfd p[2] = { { .fd = w->c->stopfd, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
	int n;

	*exited = false;
	do
		n = poll(p, pidfd >= 0 ? 2 : 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n > 0 && p[0].revents)
		return true;
	*exited = n > 0 && p[1].revents;
	return false;
}

static void *watch_main(void *arg)
{
	struct watcher *w = arg;
	struct children *c = w->c;
	const struct child_info *ci = &w->ci;
	int pidfd = proc_pidfd(ci->pid), st = 0;
	int64_t next = mono_ms() + ci->interval_ms;
	unsigned seq = 0;
	bool exited = false, reaped = false;

	if (pidfd < 0)
		log_warn("pid %d: no pidfd (%s): reaping it without watching", (int)ci->pid, strerror(-pidfd));
	for (;;) {
		int timeout = -1;
		if (pidfd < 0) {
			/* Without a pidfd (before 5.3) only a blocking wait is left. */
			act_reap(ci->pid, &st, false);
			reaped = exited = true;
			break;
		}
		if (ci->interval_ms) {
			int64_t left = next - mono_ms();
			timeout = left < 0 ? 0 : (int)left;
		}
		if (wait_event(w, pidfd, timeout, &exited))
			break;
		if (exited) {
			/* The pidfd is readable once the child is a zombie; the helper's child is
			 * collected by the helper (spawn_reap asks it until it has the status). */
			act_reap(ci->pid, &st, false);
			reaped = true;
			break;
		}
		if (ci->interval_ms && mono_ms() >= next) {
			sample_record(c->app, ci, ++seq, NULL);
			next += ci->interval_ms;
			if (next < mono_ms())
				next = mono_ms() + ci->interval_ms;   /* a slow sample: no burst to catch up */
		}
	}
	if (reaped) {
		log_info("pid %d exited (%s %d)", (int)ci->pid, WIFSIGNALED(st) ? "signal" : "status",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		if (ci->interval_ms)
			sample_record(c->app, ci, ++seq, &st);
	}
	if (pidfd >= 0)
		close(pidfd);
	free(w);
	pthread_mutex_lock(&c->mu);
	c->slots--;
	c->threads--;
	pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

void children_adopt(struct children *c, const struct child_info *ci)
{
	struct watcher *w = malloc(sizeof *w);
	pthread_attr_t attr;
	pthread_t t;
	int rc = ENOMEM;

	if (w) {
		w->c = c;
		w->ci = *ci;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 1024 * 1024);
		pthread_mutex_lock(&c->mu);
		c->threads++;
		pthread_mutex_unlock(&c->mu);
		if ((rc = pthread_create(&t, &attr, watch_main, w)) != 0) {
			pthread_mutex_lock(&c->mu);
			c->threads--;
			pthread_mutex_unlock(&c->mu);
			free(w);
		}
		pthread_attr_destroy(&attr);
	}
	if (rc != 0) {
		log_error("pid %d: no watcher thread (%s): init reaps it once the daemon exits", (int)ci->pid,
			  strerror(rc));
		children_release(c);
	}
}
