/* The job runner: an in-memory list of queued and running jobs (progress, cancel flags) in front
 * of the jobs table, and a few worker threads. Each store call takes the store's lock itself; the
 * runner's mutex may be held around one (submit, cancel), never the other way round. */
#include "server/jobs/jobs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/jobs.h"

#define MAX_WORKERS 8
#define MAX_KINDS   32

struct job_ctx {
	struct jobs *runner;         /* borrowed */
	struct job_ctx *next;        /* the active list */
	int64_t id, op_id;
	int64_t with_op_id;          /* the submission's with_op, inserted with the job; 0: none */
	const struct job_kind *kind; /* borrowed: registered */
	char conflict_key[128];      /* "" for none */
	char held_key[128];          /* a second key the running job holds for a while (job_hold_key), "" for none */
	bool running;                /* false: queued */
	bool cancel;
	char ended[24];              /* "" until the worker decides the outcome (under lock): then its
				      * final status, while the job is still on the active list until
				      * recorded; a cancel from then on is too late (job.finished) */
	json_t *progress;            /* owned, under runner->lock */
	void *arg;                   /* owned, released with kind->free_arg */
	int64_t deadline_ms;         /* 0: none */
	bool measures_itself;        /* the submission's: no jobs_measure around run() */
	int64_t deadline_mono_ns;    /* set when run() starts; read by the job's own thread only */
};

struct jobs {
	const struct app *app;       /* borrowed */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	bool started;                /* jobs_start() has run: recovery is done, submissions welcome */
	struct job_ctx *active;      /* queued and running jobs, oldest first */
	int nworkers;
	int inline_running;          /* jobs_run_now calls running in their callers' threads */
	pthread_t workers[MAX_WORKERS];
	const struct job_kind *kinds[MAX_KINDS]; /* borrowed: registered before jobs_start() */
	const struct job_measure *measure;       /* static, or NULL: what is measured around each run */
	int nkinds;
	/* Told, under lock, of each job that left the active list ended (jobs_on_end): api/waits.c. */
	void (*on_end)(void *cls, int64_t job_id);
	void *on_end_cls;                        /* borrowed */
#ifdef MPD_TEST_HOOKS
	void (*test_recorded)(void *cls, int64_t job_id);   /* jobs_test_on_recorded */
	void *test_recorded_cls;
#endif
};

static void ctx_free(struct job_ctx *c)
{
	if (!c)
		return;
	if (c->kind->free_arg && c->arg)
		c->kind->free_arg(c->arg);
	json_decref(c->progress);
	free(c);
}

struct jobs *jobs_open(const struct app *app, mp_err *e)
{
	struct jobs *j = calloc(1, sizeof *j);

	if (!j) {
		mp_nomem(e);
		return NULL;
	}
	j->app = app;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->wake, NULL);
	return j;
}

static const struct job_kind *kind_named(const struct jobs *j, const char *name)
{
	for (int i = 0; name && i < j->nkinds; i++)
		if (!strcmp(j->kinds[i]->name, name))
			return j->kinds[i];
	return NULL;
}

int jobs_register(struct jobs *j, const struct job_kind *kind, mp_err *e)
{
	/* Start-up wiring, not requests: a failure here is a bug the daemon refuses to start with. */
	if (j->started || !kind->name || !kind->run || kind_named(j, kind->name) || j->nkinds == MAX_KINDS)
		return mp_fail(e, MPE_INTERNAL_ERROR, 0, "cannot register job kind '%s' (%s)",
			       kind->name ? kind->name : "", j->started ? "the runner has started" :
			       !kind->run ? "no run function" : kind_named(j, kind->name) ? "registered twice" :
			       j->nkinds == MAX_KINDS ? "too many kinds" : "no name");
	j->kinds[j->nkinds++] = kind;
	return 0;
}

void jobs_measure(struct jobs *j, const struct job_measure *m)
{
	j->measure = m;
}

/* Marks what a previous daemon left queued or running as "interrupted". */
static int recover(struct jobs *j, mp_err *e)
{
	struct store *st = j->app->store;
	int64_t ids[256], ops[256];
	int n;

again:
	n = jobs_db_active(st, ids, ops, 256, e);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		json_t *job, *result = NULL;
		const struct job_kind *k;
		int64_t now = clk_wall_ns();
		mp_err ignore = { 0 };

		job = jobs_db_get(st, ids[i], &ignore);
		k = job ? kind_named(j, json_string_value(json_object_get(job, "kind"))) : NULL;
		if (k && k->interrupted)
			result = k->interrupted(j->app, ids[i], json_object_get(job, "request"));
		struct job_end end = { .tx = "job_recover", .job_id = ids[i], .op_id = ops[i], .status = "interrupted",
				       .finished_ns = now, .reason = job_reason_name(JR_RESTART),
				       .error = "the daemon stopped while the job ran",
				       .op_error = "the daemon stopped while the job ran", .result = result };
		if (store_job_finish(st, &end, e) < 0) {
			json_decref(job);
			json_decref(result);
			return -1;
		}
		log_warn("job %lld was left unfinished by the previous daemon: marked interrupted", (long long)ids[i]);
		json_decref(job);
		json_decref(result);
	}
	/* Each pass marks what it read, so the next one sees the rest. */
	if (n == 256)
		goto again;
	return 0;
}

/* Whether o stands on key: its own conflict key, or one it holds now. */
static bool holds(const struct job_ctx *o, const char *key)
{
	return key[0] && (!strcmp(o->conflict_key, key) || !strcmp(o->held_key, key));
}

/* The job right ahead of c with c's conflict key (running, or queued ahead), or a running job that
 * holds it (job_hold_key: submitted later, it may run while c waits), which c waits for; NULL
 * when c may run. */
static const struct job_ctx *blocker(const struct jobs *j, const struct job_ctx *c)
{
	const struct job_ctx *ahead = NULL;

	for (const struct job_ctx *o = j->active; c->conflict_key[0] && o != c; o = o->next)
		if (holds(o, c->conflict_key))
			ahead = o;
	for (const struct job_ctx *o = c->next; c->conflict_key[0] && !ahead && o; o = o->next)
		if (o->running && !strcmp(o->held_key, c->conflict_key))
			ahead = o;
	return ahead;
}

static struct job_ctx *next_queued(struct jobs *j)
{
	for (struct job_ctx *c = j->active; c; c = c->next)
		if (!c->running && !blocker(j, c))
			return c;
	return NULL;
}

static void unlink_active(struct jobs *j, struct job_ctx *c)
{
	for (struct job_ctx **p = &j->active; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			return;
		}
}

/* A job left the active list with its final status recorded: whoever waits for it is told. Under
 * j->lock, so that jobs_active() and this agree (see jobs_on_end). */
static void ended(struct jobs *j, int64_t id)
{
	if (j->on_end)
		j->on_end(j->on_end_cls, id);
}

/* Records c's end. row: the job as submit() stored it (jobs_run_now), or NULL; then *answer is
 * the job as GET shows it now, built from row and the end (NULL when the end was not recorded). */
static void finish(struct jobs *j, struct job_ctx *c, struct job_outcome *out, const struct job_row *row,
		   json_t **answer)
{
	struct store *st = j->app->store;
	int64_t now = clk_wall_ns();
	json_t *progress;
	mp_err e = { 0 };
	int rc;

	pthread_mutex_lock(&j->lock);
	progress = json_incref(c->progress);
	pthread_mutex_unlock(&j->lock);
	struct job_end end = { .job_id = c->id, .op_id = c->op_id, .status = out->status, .finished_ns = now,
			       .reason = job_reason_name(out->reason), .err_no = out->err_no, .error = out->error,
			       .op_error = out->error[0] ? out->error : job_reason_name(out->reason), .progress = progress,
			       .result = out->result, .knobs = out->knobs };
	rc = store_job_finish(st, &end, &e);
	if (rc < 0 && out->knobs && c->kind->unrecorded) {
		/* Its change could not be recorded: the kind undoes it and says so, and that end,
		 * without the change's rows, is recorded instead (the change's operation stays
		 * "running": the evidence of the attempt). */
		log_error("job %lld: recording the outcome failed: %s", (long long)c->id, e.detail);
		c->kind->unrecorded(c, c->arg, out, &e);
		if (!out->status)
			out->status = "failed";
		pthread_mutex_lock(&j->lock);
		snprintf(c->ended, sizeof c->ended, "%s", out->status);
		pthread_mutex_unlock(&j->lock);
		end.status = out->status;
		end.reason = job_reason_name(out->reason);
		end.err_no = out->err_no;
		end.op_error = out->error[0] ? out->error : job_reason_name(out->reason);
		end.result = out->result;
		end.knobs = NULL;
		mp_err_clear(&e);
		rc = store_job_finish(st, &end, &e);
	}
	if (rc < 0)
		log_error("job %lld: recording the outcome failed: %s", (long long)c->id, e.detail);
	if (c->kind->settled)
		c->kind->settled(c, c->arg);
	if (answer)
		*answer = rc == 0 ? jobs_db_view(row, c->id, c->op_id, &end) : NULL;
	json_decref(progress);
	log_info("job %lld (%s) finished: %s%s%s", (long long)c->id, c->kind->name, out->status,
		 out->reason ? ", " : "", out->reason ? job_reason_name(out->reason) : "");
}

/* Runs c (marked running, on the active list) in this thread, records its end, takes it off the
 * list and frees it. row: its row as stored "running" already (jobs_run_now's one transaction),
 * whose end *answer receives as finish() builds it; NULL for a worker's job. */
static void run_job(struct jobs *j, struct job_ctx *c, const struct job_row *row, json_t **answer)
{
	struct job_outcome out;
	mp_err e = { 0 };

	if (!row && store_job_start(j->app->store, c->id, clk_wall_ns(), &e) < 0)
		log_error("job %lld: %s", (long long)c->id, e.detail);
	memset(&out, 0, sizeof out);
	if (c->deadline_ms > 0)
		c->deadline_mono_ns = clk_mono_ns() + c->deadline_ms * 1000000;
	bool measure = j->measure && !c->measures_itself;
	void *snap = measure ? j->measure->begin(j->app) : NULL;
	c->kind->run(c, c->arg, &out);
	if (measure)
		j->measure->end(j->app, snap, &out);
	if (!out.status)
		out.status = "failed";
	pthread_mutex_lock(&j->lock);
	if (!strcmp(out.status, "cancelled") && !out.reason)
		out.reason = j->stopping ? JR_DAEMON_STOPPING : JR_CANCEL_REQUESTED;
	/* The job is done with the kernel: free its conflict key before its final status is
	 * visible, so a client that sees it finished and resubmits at once gets no 409. */
	c->conflict_key[0] = '\0';
	snprintf(c->ended, sizeof c->ended, "%s", out.status);
#ifdef MPD_TEST_HOOKS
	void (*recorded)(void *, int64_t) = j->test_recorded;
	void *recorded_cls = j->test_recorded_cls;
#endif
	pthread_cond_broadcast(&j->wake);   /* a job queued behind this one may start */
	pthread_mutex_unlock(&j->lock);
	finish(j, c, &out, row, answer);
	json_decref(out.result);
#ifdef MPD_TEST_HOOKS
	if (recorded)
		recorded(recorded_cls, c->id);   /* recorded, still on the active list */
#endif

	pthread_mutex_lock(&j->lock);
	unlink_active(j, c);
	ended(j, c->id);
	pthread_mutex_unlock(&j->lock);
	ctx_free(c);
}

static void *worker(void *arg)
{
	struct jobs *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct job_ctx *c = NULL;

		while (!j->stopping && !(c = next_queued(j)))
			pthread_cond_wait(&j->wake, &j->lock);
		if (j->stopping)
			break;
		c->running = true;
		pthread_mutex_unlock(&j->lock);
		run_job(j, c, NULL, NULL);
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

int jobs_start(struct jobs *j, int nworkers, mp_err *e)
{
	if (recover(j, e) < 0)
		return -1;
	if (nworkers < 1)
		nworkers = 1;
	if (nworkers > MAX_WORKERS)
		nworkers = MAX_WORKERS;
	for (int i = 0; i < nworkers; i++) {
		if (pthread_create(&j->workers[i], NULL, worker, j) != 0)
			return mp_fail(e, MPE_JOB_THREAD, 0, "cannot start a job worker");
		j->nworkers++;
	}
	pthread_mutex_lock(&j->lock);
	j->started = true;
	pthread_mutex_unlock(&j->lock);
	return 0;
}

void jobs_close(struct jobs *j)
{
	int running = 0;

	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stopping = true;
	for (struct job_ctx *c = j->active; c; c = c->next) {
		c->cancel = true;
		running += c->running;
	}
	pthread_cond_broadcast(&j->wake);
	pthread_mutex_unlock(&j->lock);
	if (running)
		log_info("stopping: %d running job%s cancelled, waiting for %s to reach a batch boundary", running,
			 running == 1 ? "" : "s", running == 1 ? "it" : "them");
	for (int i = 0; i < j->nworkers; i++)
		pthread_join(j->workers[i], NULL);
	/* A job running in a caller's thread ends on its own (cancelled above): it frees its ctx. */
	pthread_mutex_lock(&j->lock);
	while (j->inline_running)
		pthread_cond_wait(&j->wake, &j->lock);
	pthread_mutex_unlock(&j->lock);
	/* Jobs still queued stay "queued" in the table and read "interrupted" after the next start. */
	while (j->active) {
		struct job_ctx *c = j->active;
		j->active = c->next;
		ctx_free(c);
	}
	pthread_cond_destroy(&j->wake);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* jobs_submit and jobs_run_now: the job's rows and its place on the active list. now: it runs in
 * the caller's thread (jobs_run_now), so it is stored "running" in the same transaction, marked
 * running for the workers to leave alone, and any holder of its key is a conflict. */
static json_t *submit(struct jobs *j, const struct job_spec *spec, bool now_here, int64_t *conflict_id, mp_err *e)
{
	const struct job_kind *k = spec->kind;
	struct store *st = j->app->store;
	struct job_ctx *c = calloc(1, sizeof *c);
	struct op_record op = { 0 };
	struct job_row row = { 0 };
	struct op_record with = { 0 };   /* spec->with_op as stored (kind NULL: none) */
	int64_t now = clk_wall_ns(), id, behind = 0, first = 0;
	int same = 0;
	json_t *ended_job = NULL;    /* owned: run here, the job as it ended */

	if (!c || kind_named(j, k->name) != k) {
		if (k->free_arg && spec->arg)
			k->free_arg(spec->arg);
		if (c)
			mp_fail(e, MPE_INTERNAL_ERROR, 0, "job kind '%s' is not registered", k->name);
		else
			mp_nomem(e);
		free(c);
		return NULL;
	}
	c->runner = j;
	c->kind = k;
	c->arg = spec->arg;
	c->deadline_ms = spec->deadline_ms;
	c->measures_itself = spec->measures_itself;
	c->progress = k->initial_progress ? k->initial_progress(spec->arg) : NULL;
	if (k->conflict_key)
		k->conflict_key(spec->arg, c->conflict_key, sizeof c->conflict_key);

	op.kind = k->name;
	op.source = spec->origin.source ? spec->origin.source : "api";
	op.has_actor = spec->origin.actor && spec->origin.actor->has_uid;
	op.actor_uid = op.has_actor ? spec->origin.actor->uid : 0;
	op.actor_name = spec->origin.actor ? spec->origin.actor->name : NULL;   /* a token: a name, no uid */
	op.started_ns = now;
	op.status = "running";
	op.request = spec->request;
	op.kernel_release = j->app->caps.kernel_release;
	row.kind = k->name;
	row.status = now_here ? "running" : "queued";
	row.started_ns = now_here ? now : 0;
	row.conflict_key = c->conflict_key[0] ? c->conflict_key : NULL;
	row.source = op.source;
	row.schedule_id = spec->origin.schedule_id;
	row.has_actor = op.has_actor;
	row.actor_uid = op.actor_uid;
	row.actor_name = op.actor_name;
	row.created_ns = now;
	row.request = spec->request;
	row.progress = json_incref(c->progress);   /* a reference: run() may replace c's (job_progress) */
	/* Started with the job, not before it (it was built before the job was stored): retention
	 * judges age by the first operation in started order, so one that started earlier with a
	 * higher id would take the job's own operation with the old ones. */
	if (now_here && spec->with_op) {
		with = *spec->with_op;
		with.started_ns = now;
	}

	pthread_mutex_lock(&j->lock);
	if (j->stopping || !j->started) {
		mp_fail(e, j->stopping ? MPE_JOB_STOPPING : MPE_JOB_STARTING, 0, "the daemon is %s",
			j->stopping ? "stopping" : "starting; retry in a moment");
		goto fail;
	}
	for (struct job_ctx *o = j->active; c->conflict_key[0] && o; o = o->next)
		if (holds(o, c->conflict_key)) {
			if (!same++)
				first = o->id;
			if (now_here || same > spec->wait_behind) {
				if (conflict_id)
					*conflict_id = first;   /* the one that runs now, or runs first */
				mp_fail(e, MPE_JOB_CONFLICT, 0, "job %lld (%s) is already %s; cancel it or wait",
					(long long)o->id, o->kind->name, o->running ? "running" : "queued");
				goto fail;
			}
			behind = o->id;
		}
	if (store_job_submit_with(st, &op, &row, with.kind ? &with : NULL, &c->op_id, &c->id, &c->with_op_id, e) < 0)
		goto fail;
	/* Append: workers take the oldest queued job first (and never one marked running). */
	c->running = now_here;
	j->inline_running += now_here;
	{
		struct job_ctx **p = &j->active;
		while (*p)
			p = &(*p)->next;
		*p = c;
	}
	id = c->id;   /* a worker may run and free c as soon as the lock is released */
	/* Logged under the lock, so that "queued" never follows the job's "finished" in the log. */
	if (now_here) {
		log_info("job %lld (%s) started by %s, answered when it ends", (long long)id, k->name, op.source);
		pthread_mutex_unlock(&j->lock);
		run_job(j, c, &row, &ended_job);
		pthread_mutex_lock(&j->lock);
		if (!--j->inline_running)
			pthread_cond_broadcast(&j->wake);   /* jobs_close may wait for it */
	} else if (behind)
		log_info("job %lld (%s) queued by %s behind job %lld", (long long)id, k->name, op.source,
			 (long long)behind);
	else
		log_info("job %lld (%s) queued by %s", (long long)id, k->name, op.source);
	if (!now_here) {
		/* Stored: the reference is dropped under the lock, before a worker can take the job and
		 * replace c's progress (job_progress), so the two decrements are ordered by the lock
		 * (after the unlock, jansson's inline refcount read raced the worker's; TSan saw it). */
		json_decref(row.progress);
		row.progress = NULL;
		pthread_cond_signal(&j->wake);
	}
	pthread_mutex_unlock(&j->lock);
	/* Run here, the job is what was stored of it (no read); queued, it is read back as GET shows
	 * it, so that callers answer with the job without asking again. The job is queued whatever the
	 * read says: a failed read must not look like a refused submission. */
	json_decref(row.progress);
	if (ended_job)
		return ended_job;
	{
		mp_err ignore = { 0 };
		json_t *job = jobs_get(j, id, &ignore);
		if (!job) {
			log_warn("job %lld: queued, but reading it back failed: %s", (long long)id, ignore.detail);
			job = json_pack("{s:I, s:s, s:s}", "id", (json_int_t)id, "kind", k->name, "status", "queued");
		}
		if (!job)
			mp_nomem(e);
		return job;
	}
fail:
	pthread_mutex_unlock(&j->lock);
	json_decref(row.progress);
	ctx_free(c);
	return NULL;
}

json_t *jobs_submit(struct jobs *j, const struct job_spec *spec, int64_t *conflict_id, mp_err *e)
{
	return submit(j, spec, false, conflict_id, e);
}

json_t *jobs_run_now(struct jobs *j, const struct job_spec *spec, int64_t *conflict_id, mp_err *e)
{
	return submit(j, spec, true, conflict_id, e);
}

/* Overlays the live progress of an active job. */
static void overlay(struct jobs *j, json_t *job, int64_t id)
{
	pthread_mutex_lock(&j->lock);
	for (struct job_ctx *c = j->active; c; c = c->next)
		if (c->id == id) {
			const struct job_ctx *b = c->running ? NULL : blocker(j, c);
			if (c->progress)
				json_object_set_new(job, "progress", json_deep_copy(c->progress));
			if (c->cancel)
				json_object_set_new(job, "cancel_requested", json_true());
			if (b)
				json_object_set_new(job, "waiting_for_job_id", json_integer(b->id));
			break;
		}
	pthread_mutex_unlock(&j->lock);
}

json_t *jobs_get(struct jobs *j, int64_t id, mp_err *e)
{
	json_t *job;

	job = jobs_db_get(j->app->store, id, e);
	if (job)
		overlay(j, job, id);
	return job;
}

json_t *jobs_list(struct jobs *j, const struct job_filter *f, mp_err *e)
{
	json_t *arr, *v;
	size_t i;

	arr = jobs_db_list(j->app->store, f->kind, f->status, f->schedule_id, f->before_id,
			   f->limit > 0 ? f->limit : 100, e);
	json_array_foreach(arr, i, v)
		overlay(j, v, json_integer_value(json_object_get(v, "id")));
	return arr;
}

json_t *jobs_cancel(struct jobs *j, int64_t id, mp_err *e)
{
	struct store *st = j->app->store;
	struct job_ctx *c, *drop = NULL;
	char over[sizeof c->ended] = "";
	json_t *job;

	pthread_mutex_lock(&j->lock);
	for (c = j->active; c && c->id != id; c = c->next)
		;
	if (c && c->ended[0]) {
		/* Its outcome is decided (and maybe recorded) but it has not left the list yet: as
		 * finished as a job that has, whatever a cancel says now. */
		snprintf(over, sizeof over, "%s", c->ended);
		c = NULL;
	} else if (c && !c->running) {
		/* Never started: cancelled here, nothing to undo. */
		int64_t now = clk_wall_ns();
		json_t *result = json_pack("{s:b}", "started", 0);
		struct job_end end = { .tx = "job_cancel", .job_id = id, .op_id = c->op_id, .status = "cancelled",
				       .finished_ns = now, .reason = job_reason_name(JR_NOT_STARTED),
				       .op_error = "cancelled before it started", .result = result };
		if (store_job_finish(st, &end, e) < 0) {
			pthread_mutex_unlock(&j->lock);
			json_decref(result);
			return NULL;
		}
		json_decref(result);
		unlink_active(j, c);
		ended(j, id);
		drop = c;
	} else if (c) {
		c->cancel = true;
	}
	pthread_mutex_unlock(&j->lock);
	ctx_free(drop);
	if (!(job = jobs_get(j, id, e)))
		return NULL;
	if (!c) {
		mp_fail(e, MPE_JOB_FINISHED, 0, "job %lld already ended: %s", (long long)id,
			over[0] ? over : json_string_value(json_object_get(job, "status")));
		json_decref(job);
		return NULL;
	}
	return job;
}

#ifdef MPD_TEST_HOOKS
void jobs_test_on_recorded(struct jobs *j, void (*fn)(void *cls, int64_t job_id), void *cls)
{
	pthread_mutex_lock(&j->lock);
	j->test_recorded = fn;
	j->test_recorded_cls = cls;
	pthread_mutex_unlock(&j->lock);
}
#endif

void jobs_on_end(struct jobs *j, void (*fn)(void *cls, int64_t job_id), void *cls)
{
	pthread_mutex_lock(&j->lock);
	j->on_end = fn;
	j->on_end_cls = cls;
	pthread_mutex_unlock(&j->lock);
}

bool jobs_active(struct jobs *j, int64_t id)
{
	bool v = false;

	pthread_mutex_lock(&j->lock);
	for (const struct job_ctx *c = j->active; c && !v; c = c->next)
		v = c->id == id;
	pthread_mutex_unlock(&j->lock);
	return v;
}

int jobs_count_active(struct jobs *j, struct jobs_count *out, int max)
{
	int n;

	pthread_mutex_lock(&j->lock);
	for (n = 0; n < j->nkinds && n < max; n++)
		out[n] = (struct jobs_count){ .kind = j->kinds[n]->name };
	for (const struct job_ctx *c = j->active; c; c = c->next)
		for (int i = 0; i < n; i++)
			if (out[i].kind == c->kind->name) {
				if (c->running)
					out[i].running++;
				else
					out[i].queued++;
				break;
			}
	pthread_mutex_unlock(&j->lock);
	return n;
}

int64_t jobs_key_holder(struct jobs *j, const char *key)
{
	int64_t id = 0;

	pthread_mutex_lock(&j->lock);
	for (const struct job_ctx *c = j->active; c && !id; c = c->next)
		if (holds(c, key))
			id = c->id;
	pthread_mutex_unlock(&j->lock);
	return id;
}

bool jobs_key_busy(struct jobs *j, const char *key)
{
	return jobs_key_holder(j, key) != 0;
}

int job_hold_key(struct job_ctx *ctx, const char *key, int64_t *holder)
{
	struct jobs *j = ctx->runner;
	int rc = 0;

	pthread_mutex_lock(&j->lock);
	for (const struct job_ctx *o = j->active; o && !rc; o = o->next)
		if (o != ctx && holds(o, key)) {
			*holder = o->id;
			rc = -1;
		}
	if (!rc)
		snprintf(ctx->held_key, sizeof ctx->held_key, "%s", key);
	pthread_mutex_unlock(&j->lock);
	return rc;
}

void job_release_key(struct job_ctx *ctx)
{
	struct jobs *j = ctx->runner;

	pthread_mutex_lock(&j->lock);
	ctx->held_key[0] = '\0';
	pthread_cond_broadcast(&j->wake);   /* a job queued on that key may start */
	pthread_mutex_unlock(&j->lock);
}

bool job_cancelled(struct job_ctx *ctx)
{
	bool v;

	pthread_mutex_lock(&ctx->runner->lock);
	v = ctx->cancel;
	pthread_mutex_unlock(&ctx->runner->lock);
	return v;
}

void job_progress(struct job_ctx *ctx, json_t *progress)
{
	json_t *old;

	pthread_mutex_lock(&ctx->runner->lock);
	old = ctx->progress;
	ctx->progress = progress;
	pthread_mutex_unlock(&ctx->runner->lock);
	json_decref(old);
}

bool job_past_deadline(struct job_ctx *ctx)
{
	return ctx->deadline_mono_ns > 0 && clk_mono_ns() >= ctx->deadline_mono_ns;
}

int64_t job_id(const struct job_ctx *ctx)
{
	return ctx->id;
}

int64_t job_op_id(const struct job_ctx *ctx)
{
	return ctx->op_id;
}

int64_t job_with_op_id(const struct job_ctx *ctx)
{
	return ctx->with_op_id;
}
