/* The profile in force (see profile_state.h). One mutex guards everything; readers copy. */
#include "server/ops/profile_state.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "server/clock.h"

struct profile_state {
	pthread_mutex_t lock;
	pthread_cond_t ended;        /* an apply ended (applying_job went back to 0) */
	int efd;                     /* owned: the changes eventfd */
	int64_t last_ended;          /* the newest profile.apply job that ended */
	struct ps_snapshot s;        /* the state itself; s.keys owned */
};

static const char *const state_names[] = { "none", "applied", "degraded" };
static const char *const reason_names[PS_NREASONS] = {
	"drift", "partial_allocation", "unsupported_required", "apply_failed", "invalid_profile",
};

const char *ps_state_name(enum ps_state s)
{
	return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "none";
}

const char *ps_reason_name(int bit)
{
	return bit >= 0 && bit < PS_NREASONS ? reason_names[bit] : "";
}

const char *ps_key_verdict(const struct ps_key *k)
{
	if (!k->supported)
		return "unsupported";
	if (!k->managed)
		return "yielded";
	if (k->drifting)
		return "drift";
	return k->in_sync ? "in_sync" : "differs";
}

struct profile_state *profile_state_new(const char *name)
{
	struct profile_state *ps = calloc(1, sizeof *ps);

	if (!ps)
		return NULL;
	if ((ps->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		free(ps);
		return NULL;
	}
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->ended, NULL);
	snprintf(ps->s.name, sizeof ps->s.name, "%s", name ? name : "");
	return ps;
}

void profile_state_free(struct profile_state *ps)
{
	if (!ps)
		return;
	close(ps->efd);
	free(ps->s.keys);
	pthread_cond_destroy(&ps->ended);
	pthread_mutex_destroy(&ps->lock);
	free(ps);
}

void ps_snapshot_free(struct ps_snapshot *s)
{
	free(s->keys);
	s->keys = NULL;
	s->n = 0;
}

int profile_state_snapshot(struct profile_state *ps, struct ps_snapshot *out)
{
	int rc = 0;

	pthread_mutex_lock(&ps->lock);
	*out = ps->s;
	out->keys = NULL;
	if (ps->s.n && !(out->keys = malloc(ps->s.n * sizeof *out->keys))) {
		out->n = 0;
		rc = -1;
	} else if (ps->s.n) {
		memcpy(out->keys, ps->s.keys, ps->s.n * sizeof *out->keys);
	}
	pthread_mutex_unlock(&ps->lock);
	return rc;
}

bool profile_state_name(struct profile_state *ps, char *buf, size_t len)
{
	pthread_mutex_lock(&ps->lock);
	snprintf(buf, len, "%s", ps->s.name);
	pthread_mutex_unlock(&ps->lock);
	return buf[0] != '\0';
}

int profile_state_changes_fd(struct profile_state *ps)
{
	return ps->efd;
}

/* Under the lock: the managed set changed. */
static void changed(struct profile_state *ps)
{
	uint64_t one = 1;

	ps->s.generation++;
	/* EAGAIN: the counter is full, so the fd is readable already. */
	if (write(ps->efd, &one, sizeof one) < 0 && errno != EAGAIN)
		return;
}

/* Under the lock: state from reasons, once something was applied. */
static void settle(struct profile_state *ps)
{
	if (!ps->s.job_id)
		return;
	ps->s.state = ps->s.reasons ? PS_DEGRADED : PS_APPLIED;
}

/* Under the lock: the drift reason follows the keys. */
static void drift_reason(struct profile_state *ps)
{
	bool any = false;

	for (size_t i = 0; i < ps->s.n; i++)
		any |= ps->s.keys[i].managed && ps->s.keys[i].drifting;
	if (any)
		ps->s.reasons |= PSR_DRIFT;
	else
		ps->s.reasons &= ~(unsigned)PSR_DRIFT;
	settle(ps);
}

static struct ps_key *find(struct profile_state *ps, const char *id)
{
	for (size_t i = 0; i < ps->s.n; i++)
		if (ps->s.keys[i].managed && !strcmp(ps->s.keys[i].k.id, id))
			return &ps->s.keys[i];
	return NULL;
}

int profile_state_set_drift(struct profile_state *ps, const char *key_id, bool drifting, const char *actual)
{
	struct ps_key *k;
	int rc = -1;

	pthread_mutex_lock(&ps->lock);
	if ((k = find(ps, key_id))) {
		k->drifting = drifting;
		k->in_sync = !drifting;
		if (actual) {
			k->have_actual = true;
			snprintf(k->actual, sizeof k->actual, "%s", actual);
		}
		drift_reason(ps);
		rc = 0;
	}
	pthread_mutex_unlock(&ps->lock);
	return rc;
}

int profile_state_yield(struct profile_state *ps, const char *key_id)
{
	struct ps_key *k;
	int rc = -1;

	pthread_mutex_lock(&ps->lock);
	if ((k = find(ps, key_id))) {
		k->managed = false;
		k->drifting = false;
		drift_reason(ps);
		changed(ps);
		rc = 0;
	}
	pthread_mutex_unlock(&ps->lock);
	return rc;
}

void profile_state_applying(struct profile_state *ps, int64_t job_id)
{
	pthread_mutex_lock(&ps->lock);
	if (job_id > ps->last_ended)
		ps->s.applying_job = job_id;
	pthread_mutex_unlock(&ps->lock);
}

/* Under the lock: the apply of job_id is over. */
static void apply_ended(struct profile_state *ps, int64_t job_id)
{
	if (job_id > ps->last_ended)
		ps->last_ended = job_id;
	if (ps->s.applying_job <= ps->last_ended)
		ps->s.applying_job = 0;
	pthread_cond_broadcast(&ps->ended);
}

void profile_state_install(struct profile_state *ps, const char *name, struct ps_key *keys, size_t n,
			   unsigned reasons, int64_t operation_id, int64_t job_id, bool stale)
{
	pthread_mutex_lock(&ps->lock);
	free(ps->s.keys);
	ps->s.keys = keys;
	ps->s.n = n;
	snprintf(ps->s.name, sizeof ps->s.name, "%s", name);
	ps->s.reasons = reasons & ~(unsigned)PSR_DRIFT;
	ps->s.operation_id = operation_id;
	ps->s.job_id = job_id;
	ps->s.applied_ns = clk_wall_ns();
	ps->s.stale = stale;
	memset(&ps->s.error, 0, sizeof ps->s.error);
	drift_reason(ps);
	changed(ps);
	apply_ended(ps, job_id);
	pthread_mutex_unlock(&ps->lock);
}

void profile_state_reject(struct profile_state *ps, const char *name, const char *code, const char *detail,
			  const struct prof_loc *loc, int64_t job_id)
{
	struct ps_error *er = &ps->s.error;

	pthread_mutex_lock(&ps->lock);
	memset(er, 0, sizeof *er);
	er->set = true;
	snprintf(er->profile, sizeof er->profile, "%s", name);
	snprintf(er->code, sizeof er->code, "%s", code);
	snprintf(er->detail, sizeof er->detail, "%s", detail);
	if (loc)
		er->loc = *loc;
	er->at_ns = clk_wall_ns();
	/* The files of the profile in force fail now: it stays in force, degraded, until they apply. */
	if (ps->s.job_id && !strcmp(ps->s.name, name)) {
		ps->s.reasons |= PSR_INVALID_PROFILE;
		settle(ps);
	}
	apply_ended(ps, job_id);
	pthread_mutex_unlock(&ps->lock);
}

bool profile_state_wait(struct profile_state *ps, int64_t job_id, int64_t timeout_ms)
{
	struct timespec until;
	bool done;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout_ms >= 0) {
		until.tv_sec += (time_t)(timeout_ms / 1000);
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&ps->lock);
	while (!(done = job_id ? ps->last_ended >= job_id : !ps->s.applying_job) && rc != ETIMEDOUT)
		rc = timeout_ms < 0 ? pthread_cond_wait(&ps->ended, &ps->lock)
				    : pthread_cond_timedwait(&ps->ended, &ps->lock, &until);
	pthread_mutex_unlock(&ps->lock);
	return done;
}
