/* Pool resizes by the mmtests hpagealloc method: batches of `batch` pages per write, the count read
 * back after every write (the kernel reports success while giving fewer pages), one row per write
 * in the batches table. The clock (CLOCK_MONOTONIC) covers the write and the read-back only; the
 * steps run back to back in runs (kernel/hugetlb.h, through priv/act.h), and the rows are
 * buffered and written between runs, so recording never inflates a measurement. */
#include "server/ops/resize.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/clock.h"
#include "server/jobs/jobs.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/topology.h"
#include "server/log.h"
#include "server/ops/pools.h"
#include "server/ops/resize_plan.h"
#include "server/priv/act.h"
#include "server/store/db.h"
#include "server/store/jobs.h"

#define KIND            "hugepages.resize"
#define ROW_BUF         64
#define FLUSH_NS        (250LL * 1000 * 1000)
#define REPORT_NS       (10LL * 1000 * 1000)   /* progress for GET: fresh enough for a 100 ms poll */
#define RUN_BUDGET_NS   REPORT_NS              /* a run of steps ends after this (or its one slow step) */

/* ---- the job --------------------------------------------------------------------------------- */

struct run {
	struct job_ctx *ctx;
	struct resize_args *a;
	struct batch_row rows[ROW_BUF];
	int nrows;
	int64_t seq, t0, last_flush, last_report;
	int64_t seq0;                /* the operation's batches before this run (resize_args.seq) */
	uint64_t done, total;
	bool compacted;
};

static void flush(struct run *r)
{
	struct store *st = r->a->app->store;
	mp_err e = { 0 };

	if (!r->nrows)
		return;
	if (batches_db_insert(st, r->rows, r->nrows, &e) < 0)
		log_error("job %lld: recording %d batches failed: %s", (long long)job_id(r->ctx), r->nrows, e.detail);
	r->nrows = 0;
	r->last_flush = clk_mono_ns();
}

static void report(struct run *r)
{
	int64_t el = (r->last_report = clk_mono_ns()) - r->t0;
	json_t *eta = json_null();

	if (r->done > 0 && r->done < r->total)
		eta = json_integer((json_int_t)((double)el / 1e6 * (double)(r->total - r->done) / (double)r->done));
	else if (r->done >= r->total)
		eta = json_integer(0);
	job_progress(r->ctx, json_pack("{s:o, s:I, s:I, s:I, s:I, s:o}", "targets", plan_targets_json(r->a, false),
				       "pages_done", (json_int_t)r->done, "pages_total", (json_int_t)r->total,
				       "batches", (json_int_t)(r->seq - r->seq0), "elapsed_ms", (json_int_t)(el / 1000000),
				       "eta_ms", eta));
}

/* Records one step of a run: a row for the batches table, the target's totals. Returns the pages
 * it moved toward the goal. */
static uint64_t record(struct run *r, struct resize_target *t, bool grow, const struct htlb_step *s)
{
	uint64_t gained = grow ? (s->after > t->now ? s->after - t->now : 0) : (s->after < t->now ? t->now - s->after : 0);

	r->rows[r->nrows++] = (struct batch_row){
		.op_id = job_op_id(r->ctx), .seq = ++r->seq, .kind = KIND, .size_kb = r->a->size_kb,
		.node = t->node, .grow = grow, .started_ns = s->started_ns, .before = t->now, .written = s->written,
		.after = s->after, .requested = grow ? s->written - t->now : t->now - s->written, .achieved = gained,
		.elapsed_ns = s->elapsed_ns,
		/* hpagealloc: per-page = elapsed / pages, or elapsed when nothing succeeded */
		.latency_ns = gained ? s->elapsed_ns / (int64_t)gained : s->elapsed_ns,
	};
	t->batches++;
	t->elapsed_ns += s->elapsed_ns;
	t->moved += gained;
	r->done += gained;
	t->now = s->after;
	return gained;
}

/* One target to its goal, in runs of steps (priv/act.h act_pool_run: back to back where the privilege
 * is) that end after RUN_BUDGET_NS at most, so that cancelling, the deadline and progress are
 * looked at as often as before. Returns 0 to go on with the next target, 1 to stop the job
 * (cancel, deadline, errno: out is filled). */
static int run_target(struct run *r, struct resize_target *t, struct act_pool *nr, struct job_outcome *out)
{
	struct resize_args *a = r->a;
	bool grow = t->goal > t->now;
	int rc;

	while (grow ? t->now < t->goal : t->now > t->goal) {
		struct htlb_step steps[HTLB_RUN_MAX];
		unsigned n = 0, max = ROW_BUF - (unsigned)r->nrows;
		uint64_t gained = 0;

		if (job_cancelled(r->ctx)) {
			t->stop = "cancelled";
			out->status = "cancelled";
			return 1;
		}
		if (job_past_deadline(r->ctx)) {
			t->stop = "deadline";
			out->status = "partial";
			out->reason = JR_DEADLINE;
			return 1;
		}
		rc = act_pool_run(nr, t->now, t->goal, a->batch, max < HTLB_RUN_MAX ? max : HTLB_RUN_MAX, RUN_BUDGET_NS,
				 steps, &n);
		for (unsigned i = 0; i < n; i++)
			gained = record(r, t, grow, &steps[i]);
		if (rc < 0) {
			uint64_t want = htlb_next_count(t->now, t->goal, a->batch);   /* the write that failed */
			t->stop = "error";
			out->status = "failed";
			out->err_no = -rc;
			if (act_helper_lost()) {
				/* Not the kernel's refusal: the write was never made. */
				out->reason = JR_PRIV_LOST;
				snprintf(out->error, sizeof out->error, "writing %llu to nr_hugepages: the privileged helper is "
					 "gone", (unsigned long long)want);
			} else if (t->node < 0)
				snprintf(out->error, sizeof out->error, "writing %llu to nr_hugepages: %s",
					 (unsigned long long)want, strerror(-rc));
			else
				snprintf(out->error, sizeof out->error, "writing %llu to nr_hugepages of node %d: %s",
					 (unsigned long long)want, t->node, strerror(-rc));
			return 1;
		}
		/* A stall (no progress: compaction or the end follows, which can take long) records the
		 * batches so far before the progress that counts them is published: whoever saw that
		 * count and then lost the daemon finds the rows. */
		if (n == 0 || gained == 0 || r->nrows == ROW_BUF || clk_mono_ns() - r->last_flush >= FLUSH_NS)
			flush(r);
		if (n == 0 || gained == 0 || clk_mono_ns() - r->last_report >= REPORT_NS)
			report(r);
		if (n == 0 || gained == 0) {
			if (n && a->compact && !r->compacted) {
				/* Compact once per job and retry the same batch. */
				r->compacted = true;
				if ((rc = act_compact(a->app->procfs_root)) < 0)
					log_warn("job %lld: compacting memory failed: %s", (long long)job_id(r->ctx),
						 strerror(-rc));
				continue;
			}
			t->stop = "no_progress";
			return 0;
		}
	}
	return 0;
}

/* How many resizes of one size a scheduled run queues behind before it is refused like an API call:
 * enough for several schedules due in the same minute, bounded so that a schedule firing faster
 * than its resize ends cannot pile up work. */
#define SCHEDULED_WAIT_BEHIND 4

static void resize_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct resize_args *a = arg;
	struct run *r = calloc(1, sizeof *r);
	mp_err e = { 0 };
	json_t *pool;
	char name[32];
	int rc;

	if (!r) {
		out->status = "failed";
		snprintf(out->error, sizeof out->error, "out of memory");
		return;
	}
	r->ctx = ctx;
	r->a = a;
	r->seq = r->seq0 = a->seq;
	r->t0 = r->last_flush = clk_mono_ns();
	/* The starting point is what the kernel says now, not at submission: another job may have
	 * run in between. */
	for (int i = 0; i < a->n; i++) {
		struct resize_target *t = &a->t[i];
		if ((rc = htlb_read_nr(a->app->sysfs_root, a->size_kb, t->node, &t->from)) < 0) {
			out->status = "failed";
			out->err_no = -rc;
			snprintf(out->error, sizeof out->error, "reading nr_hugepages: %s", strerror(-rc));
			goto done;
		}
		t->now = t->from;
		r->total += t->goal > t->from ? t->goal - t->from : t->from - t->goal;
	}
	report(r);
	for (int i = 0; i < a->n; i++) {
		struct act_pool nr;
		int stop;
		if ((rc = act_pool_open(a->app->sysfs_root, a->size_kb, a->t[i].node, &nr)) < 0) {
			out->status = "failed";
			out->err_no = -rc;
			snprintf(out->error, sizeof out->error, "opening nr_hugepages: %s", strerror(-rc));
			break;
		}
		stop = run_target(r, &a->t[i], &nr, out);
		act_pool_close(&nr);
		if (stop)
			break;
	}
	if (!out->status) {
		out->status = "ok";
		for (int i = 0; i < a->n; i++)
			if (a->t[i].stop && strcmp(a->t[i].stop, "target")) {
				out->status = "partial";
				out->reason = job_reason_by_name(a->t[i].stop);   /* no_progress or deadline */
				break;
			}
	}
done:
	flush(r);
	report(r);
	a->seq = r->seq;
	format_size_kb(a->size_kb, name, sizeof name);
	out->result = json_pack("{s:s, s:I, s:o, s:I, s:I, s:b}", "size", name, "size_kb", (json_int_t)a->size_kb,
				"targets", plan_targets_json(a, true), "batches", (json_int_t)(r->seq - r->seq0), "elapsed_ns",
				(json_int_t)(clk_mono_ns() - r->t0), "compacted", r->compacted);
	if (out->reason)
		json_object_set_new(out->result, "reason", json_string(job_reason_name(out->reason)));
	/* The counters (htlb_buddy_alloc_*, compact_*, ...) and free blocks around the resize are the
	 * runner's: result.conditions (ops/conditions.c), as for every job. */
	if ((pool = pools_get(a->app, a->size_kb, &e)))
		json_object_set_new(out->result, "pool", pool);
	free(r);
}

/* ---- the kind, plan and start ---------------------------------------------------------------- */

static void resize_free(void *arg)
{
	free(arg);
}

void resize_conflict_key(uint64_t size_kb, char *key, size_t len)
{
	snprintf(key, len, "hugepages:%llukB", (unsigned long long)size_kb);
}

/* One resize per page size at a time: the counts it starts from would be stale otherwise. */
static void resize_key(const void *arg, char *key, size_t len)
{
	resize_conflict_key(((const struct resize_args *)arg)->size_kb, key, len);
}

static json_t *resize_progress0(const void *arg)
{
	return json_pack("{s:o, s:I, s:I}", "targets", plan_targets_json(arg, false), "pages_done", (json_int_t)0,
			 "batches", (json_int_t)0);
}

/* A resize found running at start is "interrupted"; its result is the pool of that size as
 * re-read from the kernel now. */
static json_t *resize_interrupted(const struct app *app, int64_t job_id_, const json_t *request)
{
	json_t *size = json_object_get(request, "size_kb"), *pool;
	mp_err e = { 0 };

	(void)job_id_;
	if (!json_is_integer(size))
		return NULL;
	pool = pools_get(app, (uint64_t)json_integer_value(size), &e);
	return json_pack("{s:s, s:o}", "note", "the daemon stopped during this resize; the pool as read at the next start",
			 "pool", pool ? pool : json_null());
}

const struct job_kind resize_job = {
	.name = KIND,
	.run = resize_run,
	.free_arg = resize_free,
	.conflict_key = resize_key,
	.initial_progress = resize_progress0,
	.interrupted = resize_interrupted,
};

struct resize_args *resize_plan(const struct app *app, const struct resize_req *r, mp_err *e)
{
	struct resize_args *a = calloc(1, sizeof *a);
	struct topology *t = malloc(sizeof *t);
	int rc;

	if (!a || !t) {
		mp_nomem(e);
		goto fail;
	}
	a->app = app;
	a->size_kb = r->size_kb;
	a->batch = r->batch ? r->batch : a->size_kb >= 1048576 ? 1 : 10;
	a->deadline_ms = r->deadline_ms;
	a->compact = r->compact;
	if ((rc = topo_read(app->sysfs_root, t)) < 0) {
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -rc, "reading the topology: %s", strerror(-rc));
		goto fail;
	}
	if (plan_targets(r, a, t, e) < 0)
		goto fail;
	for (int i = 0; i < a->n; i++) {
		if ((rc = htlb_read_nr(app->sysfs_root, a->size_kb, a->t[i].node, &a->t[i].from)) < 0) {
			mp_fail(e, MPE_HUGEPAGES_READ, -rc, "reading nr_hugepages: %s", strerror(-rc));
			goto fail;
		}
		a->t[i].now = a->t[i].from;
	}
	free(t);
	return a;
fail:
	free(a);
	free(t);
	return NULL;
}

void resize_plan_free(struct resize_args *p)
{
	free(p);
}

json_t *resize_plan_json(const struct resize_args *p)
{
	return json_pack("{s:b, s:o, s:o}", "dry_run", 1, "request", plan_request_json(p), "targets",
			 plan_targets_json(p, false));
}

bool resize_unchanged(const struct app *app, const struct resize_args *p)
{
	char key[64];

	for (int i = 0; i < p->n; i++)
		if (p->t[i].from != p->t[i].goal)
			return false;
	/* A resize under way may move the pool: then the request is its 409, not "unchanged". */
	resize_key(p, key, sizeof key);
	return !jobs_key_busy(app->jobs, key);
}

json_t *resize_start(const struct app *app, struct resize_args *p, const struct job_origin *origin,
		     int64_t *conflict_id, mp_err *e)
{
	json_t *request = plan_request_json(p), *job;
	struct job_spec spec = {
		.kind = &resize_job, .arg = p, .request = request, .origin = *origin,
		.deadline_ms = p->deadline_ms,
		/* A schedule's run waits for a resize of its size that is under way (resize_run starts
		 * from the counts it reads then); a caller of the API gets 409 and decides. */
		.wait_behind = origin->schedule_id ? SCHEDULED_WAIT_BEHIND : 0,
	};

	job = jobs_submit(app->jobs, &spec, conflict_id, e);   /* owns p from here, even on failure */
	json_decref(request);
	return job;
}
