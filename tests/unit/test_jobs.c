/* The job runner (server/jobs/jobs.c) on a real SQLite file, with a job kind made for the test that
 * holds its worker at a gate until the test opens it: one job per conflict key at a time, 409 with
 * the active job's id, queueing behind a job of the same key (wait_behind) and its bound, the order
 * queued jobs start in, cancelling a queued job, and what GET shows while a job waits. And the
 * seam itself (job_ctx.h): a kind is known to the runner only by registering it; its
 * interrupted() runs at start for its jobs a previous daemon left; its initial progress shows
 * while it waits; a submission's deadline reaches run() through job_past_deadline(); a running
 * job's held key (job_hold_key) conflicts and blocks like a conflict key until released. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/app.h"
#include "server/api/api.h"
#include "server/clock.h"
#include "server/jobs/jobs.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/jobs.h"
#include "tests/unit/check_main.h"

struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	bool open, started;
	int order;                   /* the order this job started in, from 1; 0 = never */
	const char *key;             /* the job's conflict key */
};

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static int nstarted;

/* Says the gate was reached, then waits until the test opens it. */
static void gate_pass(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	g->started = true;
	pthread_cond_broadcast(&g->c);
	while (!g->open)
		pthread_cond_wait(&g->c, &g->m);
	pthread_mutex_unlock(&g->m);
}

static void gated_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct gate *g = arg;

	(void)ctx;
	pthread_mutex_lock(&order_lock);
	g->order = ++nstarted;
	pthread_mutex_unlock(&order_lock);
	gate_pass(g);
	out->status = "ok";
}

static void gated_key(const void *arg, char *key, size_t len)
{
	snprintf(key, len, "%s", ((const struct gate *)arg)->key);
}

static const struct job_kind gated = { .name = "test.gated", .run = gated_run, .conflict_key = gated_key };

/* A job that holds a second key (its g1 pass), releases it, then waits again (g2). */
struct holder {
	struct gate g1, g2;
	const char *hold;
	int rc;
	int64_t other;               /* who stood on the key when the hold was refused */
};

static void holding_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct holder *h = arg;

	h->rc = job_hold_key(ctx, h->hold, &h->other);
	gate_pass(&h->g1);
	if (h->rc == 0)
		job_release_key(ctx);
	gate_pass(&h->g2);
	out->status = "ok";
}

static void holding_key(const void *arg, char *key, size_t len)
{
	snprintf(key, len, "%s", ((const struct holder *)arg)->g1.key);
}

static const struct job_kind holding = { .name = "test.holding", .run = holding_run, .conflict_key = holding_key };

static void gate_init(struct gate *g)
{
	memset(g, 0, sizeof *g);
	pthread_mutex_init(&g->m, NULL);
	pthread_cond_init(&g->c, NULL);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	g->open = true;
	pthread_cond_broadcast(&g->c);
	pthread_mutex_unlock(&g->m);
}

static void wait_started(struct gate *g)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&g->m);
	while (!g->started)
		ck_assert_msg(pthread_cond_timedwait(&g->c, &g->m, &until) == 0, "the job never started");
	pthread_mutex_unlock(&g->m);
}

/* Whether the job g gates has started, read under its lock. */
static bool started(struct gate *g)
{
	bool yes;

	pthread_mutex_lock(&g->m);
	yes = g->started;
	pthread_mutex_unlock(&g->m);
	return yes;
}

static char dir[64];
static struct app app;
static struct jobs *runner;

static void setup(void)
{
	char path[96];
	mp_err e = { 0 };

	snprintf(dir, sizeof dir, "/tmp/mpd-jobs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/j.db", dir);
	memset(&app, 0, sizeof app);
	snprintf(app.caps.kernel_release, sizeof app.caps.kernel_release, "test");
	app.store = store_open(path, &e);
	ck_assert_msg(app.store != NULL, "%s", e.detail);
	runner = jobs_open(&app, &e);
	ck_assert_ptr_nonnull(runner);
	ck_assert_msg(jobs_register(runner, &gated, &e) == 0, "%s", e.detail);
	ck_assert_msg(jobs_register(runner, &holding, &e) == 0, "%s", e.detail);
	app.jobs = runner;
	ck_assert_msg(jobs_start(runner, 2, &e) == 0, "%s", e.detail);
	nstarted = 0;
}

static void teardown(void)
{
	char cmd[128];

	jobs_close(runner);
	store_close(app.store);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Submits a gated job; returns its id, or -1 with *e and *conflict set. */
static int64_t submit(struct gate *g, const char *key, int wait_behind, int64_t *conflict, mp_err *e)
{
	struct job_spec spec = { .kind = &gated, .origin.source = "api", .arg = g, .wait_behind = wait_behind };
	json_t *job;
	int64_t id;

	g->key = key;
	if (!(job = jobs_submit(runner, &spec, conflict, e)))
		return -1;
	id = json_integer_value(json_object_get(job, "id"));
	json_decref(job);
	return id;
}

static char *field(int64_t id, const char *name)
{
	mp_err e = { 0 };
	json_t *job = jobs_get(runner, id, &e), *v;
	char *out;

	ck_assert_msg(job != NULL, "%s", e.detail);
	v = json_object_get(job, name);
	out = v ? json_dumps(v, JSON_ENCODE_ANY) : strdup("absent");
	json_decref(job);
	return out;
}

static void assert_field(int64_t id, const char *name, const char *want)
{
	char *got = field(id, name);
	ck_assert_msg(!strcmp(got, want), "job %lld %s: %s, want %s", (long long)id, name, got, want);
	free(got);
}

static void wait_status(int64_t id, const char *want)
{
	for (int i = 0; i < 1000; i++) {
		char *got = field(id, "status");
		bool ok = !strcmp(got, want);
		free(got);
		if (ok)
			return;
		usleep(10000);
	}
	assert_field(id, "status", want);
}

struct run_now {
	struct gate g;
	json_t *job;                 /* what jobs_run_now returned */
	mp_err e;
};

static void *run_now_thread(void *arg)
{
	struct run_now *r = arg;
	struct job_spec spec = { .kind = &gated, .origin.source = "api", .arg = &r->g, .wait_behind = 5 };

	r->job = jobs_run_now(runner, &spec, NULL, &r->e);
	return NULL;
}

/* The newest job of the test's kind. */
static int64_t newest_id(void)
{
	struct job_filter f = { .kind = "test.gated", .limit = 1 };
	mp_err e = { 0 };
	json_t *a = jobs_list(runner, &f, &e);
	int64_t id = json_integer_value(json_object_get(json_array_get(a, 0), "id"));

	json_decref(a);
	return id;
}

/* jobs_run_now runs the job in the caller's thread and returns it ended; while it runs it is a job
 * like another: stored running (started) at once, its key a conflict (its own wait_behind does not
 * queue it behind a holder), a submission queued behind it starts only after it. */
START_TEST(a_job_run_now_is_answered_ended)
{
	struct run_now r = { 0 };
	struct gate q, other;
	pthread_t th;
	int64_t id, iq, conflict = 0;
	mp_err e = { 0 };

	gate_init(&r.g);
	gate_init(&q);
	gate_init(&other);
	r.g.key = "k";
	ck_assert_int_eq(pthread_create(&th, NULL, run_now_thread, &r), 0);
	wait_started(&r.g);
	id = newest_id();
	ck_assert(id > 0);
	assert_field(id, "status", "\"running\"");
	{
		char *st = field(id, "started_ns");
		ck_assert_msg(strcmp(st, "null") && strcmp(st, "absent"), "a job run now is stored started: %s", st);
		free(st);
	}
	ck_assert(jobs_active(runner, id));
	ck_assert_int_eq(submit(&other, "k", 0, &conflict, &e), -1);
	ck_assert_str_eq(mp_code_name(e.code), "job.conflict");
	ck_assert_int_eq(conflict, id);
	gate_open(&q);
	iq = submit(&q, "k", 1, NULL, &e);   /* queued behind it */
	ck_assert(iq > 0);
	{
		char want[32];
		snprintf(want, sizeof want, "%lld", (long long)id);
		assert_field(iq, "waiting_for_job_id", want);
		assert_field(iq, "status", "\"queued\"");
	}
	/* While it runs, a second one run now is refused, whatever its wait_behind. */
	{
		struct gate n;
		struct job_spec spec = { .kind = &gated, .origin.source = "api", .arg = &n, .wait_behind = 5 };
		gate_init(&n);
		n.key = "k";
		mp_err_clear(&e);
		ck_assert_ptr_null(jobs_run_now(runner, &spec, &conflict, &e));
		ck_assert_str_eq(mp_code_name(e.code), "job.conflict");
	}
	gate_open(&r.g);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(r.job != NULL, "%s", r.e.detail);
	ck_assert_int_eq(json_integer_value(json_object_get(r.job, "id")), id);
	ck_assert_str_eq(json_string_value(json_object_get(r.job, "status")), "ok");
	ck_assert(json_is_integer(json_object_get(r.job, "finished_ns")));
	ck_assert(!jobs_active(runner, id));
	json_decref(r.job);
	wait_status(iq, "\"ok\"");
	ck_assert_int_gt(q.order, r.g.order);
}
END_TEST

START_TEST(second_of_a_key_is_409_with_the_active_id)
{
	struct gate a, b, c;
	int64_t ia, ib, ic, conflict = 0;
	mp_err e = { 0 };

	gate_init(&a);
	gate_init(&b);
	gate_init(&c);
	ia = submit(&a, "k", 0, NULL, &e);
	ck_assert_msg(ia > 0, "%s", e.detail);
	wait_started(&a);
	ck_assert_int_eq(submit(&b, "k", 0, &conflict, &e), -1);
	ck_assert_int_eq(api_status(&e), 409);
	ck_assert_str_eq(mp_code_name(e.code), "job.conflict");
	ck_assert_int_eq(conflict, ia);
	/* another key runs beside it, on the second worker */
	ic = submit(&c, "other", 0, NULL, &e);
	ck_assert(ic > 0);
	wait_started(&c);
	gate_open(&a);
	gate_open(&c);
	wait_status(ia, "\"ok\"");
	wait_status(ic, "\"ok\"");
	/* the key is free again */
	gate_open(&b);
	ib = submit(&b, "k", 0, NULL, &e);
	ck_assert_msg(ib > 0, "%s", e.detail);
	wait_status(ib, "\"ok\"");
}
END_TEST

START_TEST(a_held_key_conflicts_and_blocks_until_released)
{
	struct holder h;
	struct gate b, o;
	struct job_spec spec = { .kind = &holding, .origin.source = "api", .arg = &h };
	int64_t ih, ib, io, conflict = 0;
	mp_err e = { 0 };
	json_t *job;

	memset(&h, 0, sizeof h);
	gate_init(&h.g1);
	gate_init(&h.g2);
	gate_init(&b);
	gate_init(&o);
	h.g1.key = "profile";
	h.hold = "pool";
	ck_assert_ptr_nonnull(job = jobs_submit(runner, &spec, NULL, &e));
	ih = json_integer_value(json_object_get(job, "id"));
	json_decref(job);
	wait_started(&h.g1);
	ck_assert_int_eq(h.rc, 0);
	ck_assert(jobs_key_busy(runner, "pool"));
	/* a job of the held key: 409 naming the holder, or queued behind it */
	ck_assert_int_eq(submit(&b, "pool", 0, &conflict, &e), -1);
	ck_assert_str_eq(mp_code_name(e.code), "job.conflict");
	ck_assert_int_eq(conflict, ih);
	ib = submit(&b, "pool", 1, NULL, &e);
	ck_assert_msg(ib > 0, "%s", e.detail);
	/* the second worker is free, yet b waits: a job of another key starts there instead */
	io = submit(&o, "other", 0, NULL, &e);
	ck_assert_msg(io > 0, "%s", e.detail);
	wait_started(&o);
	ck_assert(!started(&b));
	gate_open(&o);
	wait_status(io, "\"ok\"");
	assert_field(ib, "status", "\"queued\"");
	/* released (the holder runs on, past g1): b starts beside it */
	gate_open(&h.g1);
	wait_started(&b);
	ck_assert(jobs_key_busy(runner, "profile"));   /* the holder's own key stays its */
	gate_open(&b);
	gate_open(&h.g2);
	wait_status(ib, "\"ok\"");
	wait_status(ih, "\"ok\"");
	ck_assert(!jobs_key_busy(runner, "pool"));
}
END_TEST

START_TEST(wait_behind_queues_in_order_and_is_bounded)
{
	struct gate a, b, c, d, o;
	int64_t ia, ib, ic, io, conflict = 0;
	mp_err e = { 0 };

	gate_init(&a);
	gate_init(&b);
	gate_init(&c);
	gate_init(&d);
	gate_init(&o);
	ia = submit(&a, "k", 0, NULL, &e);
	wait_started(&a);
	ib = submit(&b, "k", 2, NULL, &e);
	ck_assert_msg(ib > 0, "%s", e.detail);
	ic = submit(&c, "k", 2, NULL, &e);
	ck_assert_msg(ic > 0, "%s", e.detail);
	/* a third waiter would be behind three: refused, naming the job that runs now */
	ck_assert_int_eq(submit(&d, "k", 2, &conflict, &e), -1);
	ck_assert_int_eq(api_status(&e), 409);
	ck_assert_int_eq(conflict, ia);
	/* The second worker is free, yet b waits: its key is held. Shown by a job of another key
	 * submitted after b and c starting on that worker, which takes the oldest job that may run:
	 * had b or c been free to run, it would hold the worker and o would not start. */
	io = submit(&o, "other", 0, NULL, &e);
	ck_assert_msg(io > 0, "%s", e.detail);
	wait_started(&o);
	ck_assert(!started(&b) && !started(&c));
	gate_open(&o);
	wait_status(io, "\"ok\"");
	assert_field(ib, "status", "\"queued\"");
	char want[32];
	snprintf(want, sizeof want, "%lld", (long long)ia);
	assert_field(ib, "waiting_for_job_id", want);
	snprintf(want, sizeof want, "%lld", (long long)ib);
	assert_field(ic, "waiting_for_job_id", want);
	assert_field(ia, "waiting_for_job_id", "absent");
	/* open all three gates at once: they still run one after the other, in submission order */
	gate_open(&b);
	gate_open(&c);
	gate_open(&a);
	wait_status(ic, "\"ok\"");
	ck_assert_int_eq(a.order, 1);
	ck_assert_int_eq(o.order, 2);
	ck_assert_int_eq(b.order, 3);
	ck_assert_int_eq(c.order, 4);
	assert_field(ib, "waiting_for_job_id", "absent");
}
END_TEST

START_TEST(a_queued_job_cancelled_never_runs)
{
	struct gate a, b, n;
	int64_t ia, ib, in;
	mp_err e = { 0 };
	json_t *job;

	gate_init(&a);
	gate_init(&b);
	gate_init(&n);
	ia = submit(&a, "k", 0, NULL, &e);
	wait_started(&a);
	ib = submit(&b, "k", 1, NULL, &e);
	ck_assert_msg(ib > 0, "%s", e.detail);
	job = jobs_cancel(runner, ib, &e);
	ck_assert_msg(job != NULL, "%s", e.detail);
	json_decref(job);
	assert_field(ib, "status", "\"cancelled\"");
	assert_field(ib, "reason", "\"not_started\"");
	gate_open(&a);
	wait_status(ia, "\"ok\"");
	/* A job of the same key submitted after a ended starts, and b has not: workers take the
	 * oldest job that may run, so a b still queued would have run first and held the key. */
	in = submit(&n, "k", 1, NULL, &e);
	ck_assert_msg(in > 0, "%s", e.detail);
	wait_started(&n);
	ck_assert(!started(&b));
	gate_open(&n);
	wait_status(in, "\"ok\"");
	ck_assert(!started(&b));
	ck_assert_int_eq(n.order, 2);   /* a, then n: nothing ran between them */
}
END_TEST

/* ---- the kind interface ------------------------------------------------------------------- */

static int nhook, nfreed;
static int64_t hook_job;
static char hook_request[128];

static json_t *noted_interrupted(const struct app *a, int64_t id, const json_t *request)
{
	char *r = json_dumps(request, JSON_COMPACT | JSON_SORT_KEYS);

	ck_assert_ptr_eq(a, &app);
	nhook++;
	hook_job = id;
	snprintf(hook_request, sizeof hook_request, "%s", r ? r : "");
	free(r);
	return json_pack("{s:s}", "seen_by", "test.noted");
}

static void noted_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	(void)ctx, (void)arg;
	out->status = "ok";
}

static void count_free(void *arg)
{
	(void)arg;
	nfreed++;
}

static const struct job_kind noted = { .name = "test.noted", .run = noted_run, .free_arg = count_free,
				       .interrupted = noted_interrupted };

/* A job row as a dead daemon leaves it: "running", its history operation "running". */
static int64_t leave_running(const char *kind, json_t *request)
{
	struct op_record op = { .kind = kind, .source = "api", .started_ns = clk_wall_ns(), .status = "running",
				.request = request, .kernel_release = "test" };
	struct job_row row = { .kind = kind, .status = "running", .source = "api", .created_ns = op.started_ns,
			       .request = request };
	mp_err e = { 0 };
	int64_t op_id, id;

	ck_assert_msg(store_job_submit(app.store, &op, &row, &op_id, &id, &e) == 0, "%s", e.detail);
	return id;
}

/* The next daemon's runner: the registered kind's interrupted() gives the result of its job; a job
 * of a kind nobody registered is still marked interrupted, without a result. */
START_TEST(interrupted_hook_of_a_registered_kind_runs_at_start)
{
	json_t *req = json_pack("{s:i}", "n", 7);
	int64_t mine = leave_running("test.noted", req), other = leave_running("test.gone", req);
	struct jobs *next;
	mp_err e = { 0 };
	json_t *job;

	/* The next daemon opens the database anew: its own store, so its own instance id (the
	 * fixture's runner, idle, keeps the first store meanwhile). */
	struct store *first = app.store;
	char path[96];
	snprintf(path, sizeof path, "%s/j.db", dir);
	app.store = store_open(path, &e);
	ck_assert_msg(app.store != NULL, "%s", e.detail);
	nhook = 0;
	next = jobs_open(&app, &e);
	ck_assert_ptr_nonnull(next);
	ck_assert_msg(jobs_register(next, &noted, &e) == 0, "%s", e.detail);
	ck_assert_int_eq(nhook, 0);
	ck_assert_msg(jobs_start(next, 1, &e) == 0, "%s", e.detail);
	ck_assert_int_eq(nhook, 1);
	ck_assert_int_eq(hook_job, mine);
	ck_assert_str_eq(hook_request, "{\"n\":7}");
	job = jobs_get(next, mine, &e);
	ck_assert_ptr_nonnull(job);
	ck_assert_str_eq(json_string_value(json_object_get(job, "status")), "interrupted");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(job, "result"), "seen_by")), "test.noted");
	json_decref(job);
	job = jobs_get(next, other, &e);
	ck_assert_ptr_nonnull(job);
	ck_assert_str_eq(json_string_value(json_object_get(job, "status")), "interrupted");
	ck_assert(json_is_null(json_object_get(job, "result")) || !json_object_get(job, "result"));
	json_decref(job);
	jobs_close(next);
	store_close(app.store);
	app.store = first;
	json_decref(req);
}
END_TEST

/* The runner runs only kinds it was given: an unregistered one is refused (and its arg still
 * released), a name twice or a registration after start is a start-up bug. */
START_TEST(only_registered_kinds_run)
{
	struct job_spec spec = { .kind = &noted, .origin.source = "api", .arg = &nfreed };
	static const struct job_kind twin = { .name = "test.gated", .run = noted_run };
	mp_err e = { 0 };

	nfreed = 0;
	ck_assert_ptr_null(jobs_submit(runner, &spec, NULL, &e));
	ck_assert_str_eq(mp_code_name(e.code), "internal.error");
	ck_assert_int_eq(nfreed, 1);
	ck_assert_int_eq(jobs_register(runner, &noted, &e), -1);   /* started already */
	struct jobs *fresh = jobs_open(&app, &e);
	ck_assert_int_eq(jobs_register(fresh, &gated, &e), 0);
	ck_assert_int_eq(jobs_register(fresh, &twin, &e), -1);
	ck_assert_int_eq(jobs_register(fresh, &noted, &e), 0);
	jobs_close(fresh);
}
END_TEST

static json_t *waiting_progress(const void *arg)
{
	(void)arg;
	return json_pack("{s:s}", "phase", "waiting");
}

static const struct job_kind shown = { .name = "test.shown", .run = gated_run, .conflict_key = gated_key,
				       .initial_progress = waiting_progress };

/* A kind's initial progress is what GET shows until run() reports; the key is the kind's, from its
 * arg, shared across kinds. */
START_TEST(initial_progress_and_conflict_key_come_from_the_kind)
{
	struct gate a, b;
	struct jobs *own;
	mp_err e = { 0 };
	int64_t ia, conflict = 0;
	json_t *job;

	/* a runner of its own, with both kinds */
	jobs_close(runner);
	runner = own = jobs_open(&app, &e);
	ck_assert_int_eq(jobs_register(own, &gated, &e), 0);
	ck_assert_int_eq(jobs_register(own, &shown, &e), 0);
	ck_assert_int_eq(jobs_start(own, 2, &e), 0);
	gate_init(&a);
	gate_init(&b);
	ia = submit(&a, "k", 0, NULL, &e);
	wait_started(&a);
	b.key = "k";
	struct job_spec spec = { .kind = &shown, .origin.source = "api", .arg = &b };
	ck_assert_ptr_null(jobs_submit(own, &spec, &conflict, &e));
	ck_assert_int_eq(conflict, ia);
	spec.wait_behind = 1;
	job = jobs_submit(own, &spec, NULL, &e);
	ck_assert_msg(job != NULL, "%s", e.detail);
	ck_assert_str_eq(json_string_value(json_object_get(job, "status")), "queued");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(job, "progress"), "phase")), "waiting");
	ck_assert_str_eq(json_string_value(json_object_get(job, "kind")), "test.shown");
	int64_t ib = json_integer_value(json_object_get(job, "id"));
	json_decref(job);
	gate_open(&a);
	gate_open(&b);
	wait_status(ib, "\"ok\"");
}
END_TEST

static void until_deadline(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	int *polls = arg;

	while (!job_past_deadline(ctx) && !job_cancelled(ctx) && ++*polls < 10000)
		usleep(1000);
	out->status = "partial";
	out->reason = JR_DEADLINE;
}

static const struct job_kind timed = { .name = "test.timed", .run = until_deadline };

/* deadline_ms reaches run() as job_past_deadline(): true 50 ms after it started, not before. */
START_TEST(the_deadline_is_the_submissions)
{
	struct jobs *own;
	mp_err e = { 0 };
	int polls = 0;
	json_t *job;

	jobs_close(runner);
	runner = own = jobs_open(&app, &e);
	ck_assert_int_eq(jobs_register(own, &timed, &e), 0);
	ck_assert_int_eq(jobs_start(own, 1, &e), 0);
	struct job_spec spec = { .kind = &timed, .origin.source = "api", .arg = &polls, .deadline_ms = 50 };
	job = jobs_submit(own, &spec, NULL, &e);
	ck_assert_msg(job != NULL, "%s", e.detail);
	int64_t id = json_integer_value(json_object_get(job, "id"));
	json_decref(job);
	wait_status(id, "\"partial\"");
	assert_field(id, "reason", "\"deadline\"");
	/* about 50 polls of 1 ms; far fewer than the 10000 it would take without a deadline */
	ck_assert_msg(polls >= 20 && polls < 5000, "%d polls", polls);
}
END_TEST

/* The end-of-job hook (jobs_on_end, what ?wait= is woken by): called once per job, for a job
 * that ran and for one cancelled before it started, once its final status is recorded; and not
 * after it is removed. */
static struct { int64_t ids[8]; int n; char status[8][16]; } ends;

static void on_end(void *cls, int64_t id)
{
	mp_err e = { 0 };
	json_t *job;

	(void)cls;
	if (ends.n == 8)
		return;
	/* Under the runner's lock: the store has its own, so the recorded status can be read here. */
	job = jobs_db_get(app.store, id, &e);
	snprintf(ends.status[ends.n], sizeof ends.status[0], "%s",
		 job ? json_string_value(json_object_get(job, "status")) : "?");
	json_decref(job);
	ends.ids[ends.n++] = id;
}

START_TEST(the_end_hook_follows_the_recorded_end)
{
	struct gate a, b;
	int64_t ia, ib;
	mp_err e = { 0 };

	memset(&ends, 0, sizeof ends);
	jobs_on_end(runner, on_end, NULL);
	gate_init(&a);
	gate_init(&b);
	ia = submit(&a, "k", 0, NULL, &e);
	ck_assert_msg(ia > 0, "%s", e.detail);
	wait_started(&a);
	ib = submit(&b, "k", 1, NULL, &e);   /* queued behind a */
	ck_assert_msg(ib > 0, "%s", e.detail);
	ck_assert(jobs_active(runner, ia) && jobs_active(runner, ib));
	json_decref(jobs_cancel(runner, ib, &e));   /* cancelled before it started */
	ck_assert_int_eq(ends.n, 1);
	ck_assert_int_eq(ends.ids[0], ib);
	ck_assert_str_eq(ends.status[0], "cancelled");
	ck_assert(!jobs_active(runner, ib));
	gate_open(&a);
	for (int i = 0; i < 1000 && jobs_active(runner, ia); i++)
		usleep(10000);
	ck_assert(!jobs_active(runner, ia));
	/* told under the lock it left the list under: once it reads inactive, the call was made */
	ck_assert_int_eq(ends.n, 2);
	ck_assert_int_eq(ends.ids[1], ia);
	ck_assert_str_eq(ends.status[1], "ok");
	/* removed: a later end is told to nobody */
	jobs_on_end(runner, NULL, NULL);
	gate_init(&b);
	gate_open(&b);
	ib = submit(&b, "k", 0, NULL, &e);
	ck_assert_msg(ib > 0, "%s", e.detail);
	wait_status(ib, "\"ok\"");
	for (int i = 0; i < 1000 && jobs_active(runner, ib); i++)
		usleep(10000);
	ck_assert_int_eq(ends.n, 2);
	ck_assert(!jobs_active(runner, 999999));
}
END_TEST

#ifdef MPD_TEST_HOOKS
/* The worker, held by the test hook after it recorded a job's outcome and before the job left the
 * active list: the window in which a DELETE used to be told the job was being cancelled. */
static void hold_recorded(void *cls, int64_t id)
{
	(void)id;
	gate_pass(cls);
}

START_TEST(a_cancel_after_the_outcome_is_job_finished)
{
	/* Static, not on this frame: the worker leaves the hook's gate after the test has seen the
	 * job's recorded status and may have returned; jobs_close (teardown) joins it. */
	static struct gate recorded;
	struct gate a;
	int64_t ia;
	mp_err e = { 0 };
	json_t *job;
	bool active;

	gate_init(&a);
	gate_init(&recorded);
	jobs_test_on_recorded(runner, hold_recorded, &recorded);
	ia = submit(&a, "k", 0, NULL, &e);
	ck_assert_msg(ia > 0, "%s", e.detail);
	gate_open(&a);
	wait_started(&recorded);          /* recorded "ok", still on the active list */
	active = jobs_active(runner, ia);
	job = jobs_cancel(runner, ia, &e);
	gate_open(&recorded);             /* before any assertion: a failed one must not leave the worker held */
	ck_assert(active);
	ck_assert_msg(job == NULL, "a cancel of a job whose outcome is recorded was accepted");
	ck_assert_int_eq(e.code, MPE_JOB_FINISHED);
	ck_assert_msg(strstr(e.detail, "already ended: ok") != NULL, "%s", e.detail);
	wait_status(ia, "\"ok\"");
	assert_field(ia, "reason", "null");   /* the cancel changed nothing */
	jobs_test_on_recorded(runner, NULL, NULL);
}
END_TEST
#endif

static Suite *suite(void)
{
	Suite *s = suite_create("jobs");
	TCase *t = tcase_create("runner");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 30);
	tcase_add_test(t, second_of_a_key_is_409_with_the_active_id);
	tcase_add_test(t, a_job_run_now_is_answered_ended);
	tcase_add_test(t, wait_behind_queues_in_order_and_is_bounded);
	tcase_add_test(t, a_held_key_conflicts_and_blocks_until_released);
	tcase_add_test(t, a_queued_job_cancelled_never_runs);
	tcase_add_test(t, interrupted_hook_of_a_registered_kind_runs_at_start);
	tcase_add_test(t, only_registered_kinds_run);
	tcase_add_test(t, initial_progress_and_conflict_key_come_from_the_kind);
	tcase_add_test(t, the_deadline_is_the_submissions);
	tcase_add_test(t, the_end_hook_follows_the_recorded_end);
#ifdef MPD_TEST_HOOKS
	tcase_add_test(t, a_cancel_after_the_outcome_is_job_finished);
#endif
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
