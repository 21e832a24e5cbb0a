/* Pool resizes by the mmtests hpagealloc method: batches of `batch` pages per write, the count read
 * back after every write (the kernel reports success while giving fewer pages), one row per write
 * in the batches table. The clock (CLOCK_MONOTONIC) covers the write and the read-back only; the
 * rows are buffered and written between batches, so recording never inflates a measurement. */
#include "server/ops/resize.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/topology.h"
#include "server/log.h"
#include "server/ops/pools.h"
#include "server/store/db.h"
#include "server/store/jobs.h"

#define KIND            "hugepages.resize"
#define MAX_BATCH       1000000
#define MAX_DEADLINE_MS (7LL * 86400 * 1000)
#define ROW_BUF         64
#define FLUSH_NS        (250LL * 1000 * 1000)

struct target {
	int node;                    /* < 0: the global nr_hugepages */
	uint64_t goal;
	uint64_t from, now;          /* read when the job starts, and as it goes */
	uint64_t moved;              /* pages gained (grow) or freed (shrink) */
	int64_t elapsed_ns;          /* sum over this target's writes */
	int batches;
	const char *stop;            /* NULL while running; "target", "no_progress", "deadline", ... */
};

struct resize_args {
	struct app *app;             /* borrowed */
	uint64_t size_kb;
	uint64_t batch;
	int64_t deadline_ms;         /* 0: none */
	bool compact;
	int n;
	struct target t[TOPO_MAX_NODES];
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- validation ------------------------------------------------------------------------------ */

static int get_count(const json_t *v, const char *what, uint64_t max, uint64_t *out, mp_err *e)
{
	json_int_t n;

	if (!json_is_integer(v))
		return mp_fail(e, 400, "resize.bad_request", 0, "%s must be an integer", what);
	n = json_integer_value(v);
	if (n < 0 || (uint64_t)n > max)
		return mp_fail(e, 422, "resize.bad_count", 0, "%s must be from 0 to %llu (the memory there), not %lld",
			       what, (unsigned long long)max, (long long)n);
	*out = (uint64_t)n;
	return 0;
}

static int parse_options(const json_t *target, struct resize_args *a, bool *dry_run, mp_err *e)
{
	static const char *const known[] = { "size", "total", "nodes", "batch", "deadline_ms", "compact", "dry_run",
					     NULL };
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)target, key, v) {
		int i;
		for (i = 0; known[i] && strcmp(known[i], key); i++)
			;
		if (!known[i])
			return mp_fail(e, 400, "resize.bad_request", 0, "unknown field '%.64s' (known: size, total, nodes, "
				       "batch, deadline_ms, compact, dry_run)", key);
	}
	a->batch = a->size_kb >= 1048576 ? 1 : 10;
	if ((v = json_object_get(target, "batch"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_BATCH)
			return mp_fail(e, 422, "resize.bad_batch", 0, "batch must be an integer from 1 to %d", MAX_BATCH);
		a->batch = (uint64_t)json_integer_value(v);
	}
	if ((v = json_object_get(target, "deadline_ms"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_DEADLINE_MS)
			return mp_fail(e, 422, "resize.bad_deadline", 0, "deadline_ms must be an integer from 1 to %lld",
				       MAX_DEADLINE_MS);
		a->deadline_ms = json_integer_value(v);
	}
	if ((v = json_object_get(target, "compact"))) {
		if (!json_is_boolean(v))
			return mp_fail(e, 400, "resize.bad_request", 0, "compact must be true or false");
		a->compact = json_is_true(v);
	}
	if ((v = json_object_get(target, "dry_run"))) {
		if (!json_is_boolean(v))
			return mp_fail(e, 400, "resize.bad_request", 0, "dry_run must be true or false");
		*dry_run = json_is_true(v);
	}
	return 0;
}

static int parse_targets(const json_t *target, struct resize_args *a, const struct topology *t, mp_err *e)
{
	const json_t *total = json_object_get(target, "total"), *nodes = json_object_get(target, "nodes");
	uint64_t mem_kb = 0;
	const char *key;
	json_t *v;

	if (!!total == !!nodes)
		return mp_fail(e, 400, "resize.bad_request", 0, "give exactly one of \"total\" (pages) or \"nodes\" "
			       "({\"<node>\": pages})");
	for (int i = 0; i < t->n_nodes; i++)
		mem_kb += t->nodes[i].mem_total_kb;
	if (total) {
		a->n = 1;
		a->t[0].node = -1;
		return get_count(total, "total", mem_kb / a->size_kb, &a->t[0].goal, e);
	}
	if (!json_is_object(nodes) || json_object_size(nodes) == 0)
		return mp_fail(e, 400, "resize.bad_request", 0, "nodes must be a non-empty object {\"<node>\": pages}");
	/* Ascending node order, whatever the order of the keys: the batches then read the same way
	 * in every run. */
	for (int i = 0; i < t->n_nodes; i++) {
		char id[16], what[32];
		snprintf(id, sizeof id, "%u", t->nodes[i].id);
		if (!(v = json_object_get(nodes, id)))
			continue;
		if (!htlb_node_exists(a->app->sysfs_root, a->size_kb, t->nodes[i].id))
			return mp_fail(e, 422, "resize.bad_node", 0, "node %u has no memory, so no huge page pool",
				       t->nodes[i].id);
		snprintf(what, sizeof what, "nodes.%u", t->nodes[i].id);
		a->t[a->n].node = (int)t->nodes[i].id;
		if (get_count(v, what, t->nodes[i].mem_total_kb / a->size_kb, &a->t[a->n].goal, e) < 0)
			return -1;
		a->n++;
	}
	json_object_foreach((json_t *)nodes, key, v) {
		uint64_t id;
		if (parse_u64(key, &id) < 0 || id >= IDSET_MAX || topo_index(t, (unsigned)id) < 0)
			return mp_fail(e, 422, "resize.bad_node", 0, "'%.32s' is not an online node", key);
	}
	return 0;
}

/* The normalised request, as stored with the job and in history. */
static json_t *request_json(const struct resize_args *a)
{
	char name[32];
	json_t *r;

	format_size_kb(a->size_kb, name, sizeof name);
	r = json_pack("{s:s, s:I, s:I, s:b}", "size", name, "size_kb", (json_int_t)a->size_kb, "batch",
		      (json_int_t)a->batch, "compact", a->compact);
	if (a->deadline_ms)
		json_object_set_new(r, "deadline_ms", json_integer(a->deadline_ms));
	if (a->t[0].node < 0) {
		json_object_set_new(r, "total", json_integer((json_int_t)a->t[0].goal));
	} else {
		json_t *nodes = json_object();
		for (int i = 0; i < a->n; i++) {
			char id[16];
			snprintf(id, sizeof id, "%d", a->t[i].node);
			json_object_set_new(nodes, id, json_integer((json_int_t)a->t[i].goal));
		}
		json_object_set_new(r, "nodes", nodes);
	}
	return r;
}

static json_t *targets_json(const struct resize_args *a, bool done)
{
	json_t *arr = json_array();

	for (int i = 0; i < a->n; i++) {
		const struct target *t = &a->t[i];
		json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:I}", "node", t->node < 0 ? json_null() : json_integer(t->node),
				      "from", (json_int_t)t->from, "target", (json_int_t)t->goal,
				      "current", (json_int_t)t->now, "achieved", (json_int_t)t->moved);
		if (done) {
			uint64_t asked = t->goal > t->from ? t->goal - t->from : t->from - t->goal;
			json_object_set_new(o, "asked", json_integer((json_int_t)asked));
			json_object_set_new(o, "got", json_integer((json_int_t)t->moved));
			json_object_set_new(o, "batches", json_integer(t->batches));
			json_object_set_new(o, "elapsed_ns", json_integer(t->elapsed_ns));
			json_object_set_new(o, "latency_per_page_ns",
					    t->moved ? json_integer(t->elapsed_ns / (int64_t)t->moved) : json_null());
			json_object_set_new(o, "stopped", json_string(t->stop ? t->stop : "target"));
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

static void args_free(void *p)
{
	free(p);
}

/* ---- the job --------------------------------------------------------------------------------- */

struct run {
	struct job_ctx *ctx;
	struct resize_args *a;
	struct batch_row rows[ROW_BUF];
	int nrows;
	int64_t seq, t0, last_flush;
	uint64_t done, total;
	bool compacted;
};

static void flush(struct run *r)
{
	struct store *st = r->a->app->store;
	mp_err e = { 0 };

	if (!r->nrows)
		return;
	store_lock(st);
	if (batches_db_insert(st, r->rows, r->nrows, &e) < 0)
		log_error("job %lld: recording %d batches failed: %s", (long long)job_id(r->ctx), r->nrows, e.detail);
	store_unlock(st);
	r->nrows = 0;
	r->last_flush = mono_ns();
}

static void report(struct run *r)
{
	int64_t el = mono_ns() - r->t0;
	json_t *eta = json_null();

	if (r->done > 0 && r->done < r->total)
		eta = json_integer((json_int_t)((double)el / 1e6 * (double)(r->total - r->done) / (double)r->done));
	else if (r->done >= r->total)
		eta = json_integer(0);
	job_progress(r->ctx, json_pack("{s:o, s:I, s:I, s:I, s:I, s:o}", "targets", targets_json(r->a, false),
				       "pages_done", (json_int_t)r->done, "pages_total", (json_int_t)r->total,
				       "batches", (json_int_t)r->seq, "elapsed_ms", (json_int_t)(el / 1000000),
				       "eta_ms", eta));
}

/* One target to its goal. Returns 0 to go on with the next target, 1 to stop the job (cancel,
 * deadline, errno: out is filled). */
static int run_target(struct run *r, struct target *t, struct job_outcome *out)
{
	struct resize_args *a = r->a;
	const char *sys = a->app->sysfs_root;
	bool grow = t->goal > t->now;
	int rc;

	while (grow ? t->now < t->goal : t->now > t->goal) {
		struct batch_row *row;
		uint64_t step, want, after, gained;
		int64_t started, m0, el;

		if (job_cancelled(r->ctx)) {
			t->stop = "cancelled";
			out->status = "cancelled";
			return 1;
		}
		if (a->deadline_ms && mono_ns() - r->t0 >= a->deadline_ms * 1000000) {
			t->stop = "deadline";
			out->status = "partial";
			out->reason = "deadline";
			return 1;
		}
		step = grow ? t->goal - t->now : t->now - t->goal;
		if (step > a->batch)
			step = a->batch;
		want = grow ? t->now + step : t->now - step;
		started = store_now_ns();
		m0 = mono_ns();
		rc = htlb_write_nr(sys, a->size_kb, t->node, want);
		if (rc == 0)
			rc = htlb_read_nr(sys, a->size_kb, t->node, &after);
		el = mono_ns() - m0;
		if (rc < 0) {
			t->stop = "error";
			out->status = "failed";
			out->err_no = -rc;
			if (t->node < 0)
				snprintf(out->error, sizeof out->error, "writing %llu to nr_hugepages: %s",
					 (unsigned long long)want, strerror(-rc));
			else
				snprintf(out->error, sizeof out->error, "writing %llu to nr_hugepages of node %d: %s",
					 (unsigned long long)want, t->node, strerror(-rc));
			return 1;
		}
		gained = grow ? (after > t->now ? after - t->now : 0) : (after < t->now ? t->now - after : 0);
		row = &r->rows[r->nrows++];
		*row = (struct batch_row){
			.op_id = job_op_id(r->ctx), .seq = ++r->seq, .kind = KIND, .size_kb = a->size_kb,
			.node = t->node, .grow = grow, .started_ns = started, .before = t->now, .written = want,
			.after = after, .requested = step, .achieved = gained, .elapsed_ns = el,
			/* hpagealloc: per-page = elapsed / pages, or elapsed when nothing succeeded */
			.latency_ns = gained ? el / (int64_t)gained : el,
		};
		t->batches++;
		t->elapsed_ns += el;
		t->moved += gained;
		r->done += gained;
		t->now = after;
		if (r->nrows == ROW_BUF || mono_ns() - r->last_flush >= FLUSH_NS)
			flush(r);
		report(r);
		if (gained == 0) {
			if (a->compact && !r->compacted) {
				/* Compact once per job and retry the same batch. Compaction can take long:
				 * the batches so far are recorded first. */
				r->compacted = true;
				flush(r);
				if ((rc = htlb_compact(a->app->procfs_root)) < 0)
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

static json_t *vmstat_delta(const struct htlb_vmstat *b, const struct htlb_vmstat *a)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}",
			 "htlb_buddy_alloc_success", (json_int_t)(a->buddy_alloc_success - b->buddy_alloc_success),
			 "htlb_buddy_alloc_fail", (json_int_t)(a->buddy_alloc_fail - b->buddy_alloc_fail),
			 "compact_stall", (json_int_t)(a->compact_stall - b->compact_stall),
			 "compact_success", (json_int_t)(a->compact_success - b->compact_success),
			 "compact_fail", (json_int_t)(a->compact_fail - b->compact_fail));
}

static void resize_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct resize_args *a = arg;
	struct run *r = calloc(1, sizeof *r);
	struct htlb_vmstat vm0, vm1;
	bool have_vm;
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
	r->t0 = r->last_flush = mono_ns();
	have_vm = htlb_vmstat_read(a->app->procfs_root, &vm0) == 0;
	/* The starting point is what the kernel says now, not at submission: another job may have
	 * run in between. */
	for (int i = 0; i < a->n; i++) {
		struct target *t = &a->t[i];
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
	for (int i = 0; i < a->n; i++)
		if (run_target(r, &a->t[i], out))
			break;
	if (!out->status) {
		out->status = "ok";
		for (int i = 0; i < a->n; i++)
			if (a->t[i].stop && strcmp(a->t[i].stop, "target")) {
				out->status = "partial";
				out->reason = a->t[i].stop;
				break;
			}
	}
done:
	flush(r);
	report(r);
	format_size_kb(a->size_kb, name, sizeof name);
	out->result = json_pack("{s:s, s:I, s:o, s:I, s:I, s:b}", "size", name, "size_kb", (json_int_t)a->size_kb,
				"targets", targets_json(a, true), "batches", (json_int_t)r->seq, "elapsed_ns",
				(json_int_t)(mono_ns() - r->t0), "compacted", r->compacted);
	if (out->reason)
		json_object_set_new(out->result, "reason", json_string(out->reason));
	if (have_vm && htlb_vmstat_read(a->app->procfs_root, &vm1) == 0)
		json_object_set_new(out->result, "vmstat_delta", vmstat_delta(&vm0, &vm1));
	if ((pool = pools_get(a->app, a->size_kb, &e)))
		json_object_set_new(out->result, "pool", pool);
	free(r);
}

/* ---- submission ------------------------------------------------------------------------------ */

int resize_submit(struct app *app, const json_t *target, const char *size_text, const struct job_actor *actor,
		  const char *source, int64_t schedule_id, int64_t *job_id_out, int64_t *conflict_id, json_t **plan,
		  mp_err *e)
{
	struct resize_args *a = calloc(1, sizeof *a);
	struct topology *t = malloc(sizeof *t);
	char key[64];
	bool dry_run = false;
	json_t *request = NULL, *progress = NULL;
	int64_t id;
	int rc, ret = -1;

	*job_id_out = 0;
	if (plan)
		*plan = NULL;
	if (!a || !t) {
		mp_fail(e, 500, "resize.oom", 0, "out of memory");
		goto out;
	}
	a->app = app;
	if (!json_is_object(target)) {
		mp_fail(e, 400, "resize.bad_request", 0, "the resize must be a JSON object");
		goto out;
	}
	if (size_text) {
		if (pools_size(app, size_text, 404, &a->size_kb, e) < 0)
			goto out;
	} else {
		const json_t *s = json_object_get(target, "size");
		if (!json_is_string(s)) {
			mp_fail(e, 400, "resize.bad_request", 0, "size must be a string such as \"2M\" or \"1G\"");
			goto out;
		}
		if (pools_size(app, json_string_value(s), 422, &a->size_kb, e) < 0)
			goto out;
	}
	if ((rc = topo_read(app->sysfs_root, t)) < 0) {
		mp_fail(e, 500, "topology.read", -rc, "reading the topology: %s", strerror(-rc));
		goto out;
	}
	if (parse_options(target, a, &dry_run, e) < 0 || parse_targets(target, a, t, e) < 0)
		goto out;
	request = request_json(a);
	for (int i = 0; i < a->n; i++) {
		if ((rc = htlb_read_nr(app->sysfs_root, a->size_kb, a->t[i].node, &a->t[i].from)) < 0) {
			mp_fail(e, 500, "hugepages.read", -rc, "reading nr_hugepages: %s", strerror(-rc));
			goto out;
		}
		a->t[i].now = a->t[i].from;
	}
	progress = json_pack("{s:o, s:I, s:I}", "targets", targets_json(a, false), "pages_done", (json_int_t)0,
			     "batches", (json_int_t)0);
	if (dry_run) {
		if (plan)
			*plan = json_pack("{s:b, s:O, s:O}", "dry_run", 1, "request", request, "targets",
					  json_object_get(progress, "targets"));
		ret = 0;
		goto out;
	}
	snprintf(key, sizeof key, "hugepages:%llukB", (unsigned long long)a->size_kb);
	{
		struct job_spec spec = {
			.kind = KIND, .conflict_key = key, .source = source ? source : "api", .actor = actor,
			.schedule_id = schedule_id, .request = request, .initial_progress = progress,
			.run = resize_run, .arg = a, .free_arg = args_free,
		};
		a = NULL;   /* the runner owns it now, even on failure */
		if ((id = jobs_submit(app->jobs, &spec, conflict_id, e)) < 0)
			goto out;
	}
	*job_id_out = id;
	ret = 0;
out:
	free(a);
	free(t);
	json_decref(request);
	json_decref(progress);
	return ret;
}

json_t *resize_interrupted(struct app *app, int64_t job_id_, const json_t *request)
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
