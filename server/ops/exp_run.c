/* The experiment job: save every knob an arm sets → warm-up rounds → measured rounds in ABBA
 * blocks → put everything back (every path; a crash is put right at the next start from the
 * restore rows) → compare each arm with the first, per metric. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/app.h"
#include "server/kernel/knobs.h"
#include "server/log.h"
#include "server/ops/exp.h"
#include "server/ops/restore.h"
#include "server/priv/act.h"
#include "server/store/experiments.h"

/* splitmix64: the order's generator, from the recorded seed (the same seed gives the same order). */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void shuffle(int *p, int n, uint64_t *s)
{
	for (int i = 0; i < n; i++)
		p[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(next_rand(s) % (uint64_t)(i + 1)), t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
}

/* The order of the arms in each round: a block of two rounds is a random order and its reverse
 * (A B, B A), so every arm runs as often early as late in a block and a steady drift in the
 * machine's load favours none. Warm-up rounds: each a random order of its own. order is
 * [rounds][narms]. */
static void plan_order(const struct exp_args *a, int *warm, int *order)
{
	uint64_t s = a->seed;

	for (int r = 0; r < a->warmup; r++)
		shuffle(warm + r * a->narms, a->narms, &s);
	for (int r = 0; r < a->rounds; r++) {
		int *row = order + r * a->narms;
		if (r % 2 == 0) {
			shuffle(row, a->narms, &s);
			continue;
		}
		for (int i = 0; i < a->narms; i++)
			row[i] = order[(r - 1) * a->narms + a->narms - 1 - i];
	}
}

static json_t *order_json(const struct exp_args *a, const int *order, int rounds)
{
	json_t *out = json_array();

	for (int r = 0; r < rounds; r++) {
		json_t *row = json_array();
		for (int i = 0; i < a->narms; i++)
			json_array_append_new(row, json_string(a->arm[order[r * a->narms + i]].name));
		json_array_append_new(out, row);
	}
	return out;
}

static void fail_out(struct job_outcome *out, const char *status, int err_no, const char *fmt, const char *detail)
{
	out->status = status;
	out->err_no = err_no;
	snprintf(out->error, sizeof out->error, fmt, detail);
}

/* Every knob of any arm: an arm that does not name one runs with the value saved before the
 * experiment, so that each arm's settings are all of the experiment's knobs. */
struct knobset {
	int n;
	struct {
		const struct knob *k;
		char saved[64];          /* as restore_save_knob read it */
		char now[64];            /* what this job last wrote, "" before */
	} v[RESTORE_MAX];
};

static int save_knobs(const struct exp_args *a, struct restore_set *rs, struct knobset *ks, mp_err *e)
{
	for (int i = 0; i < a->narms; i++)
		for (int j = 0; j < a->arm[i].nknobs; j++) {
			const struct knob *k = a->arm[i].knob[j].k;
			int x = 0;
			while (x < ks->n && ks->v[x].k != k)
				x++;
			if (x < ks->n)
				continue;
			if (restore_save_knob(rs, k->name, e) < 0)
				return -1;
			ks->v[x].k = k;
			snprintf(ks->v[x].saved, sizeof ks->v[x].saved, "%s", rs->r[rs->n - 1].value);
			ks->n++;
		}
	return 0;
}

static int apply_arm(const struct exp_args *a, const struct exp_arm *arm, struct knobset *ks, char *err, size_t len)
{
	for (int x = 0; x < ks->n; x++) {
		const char *want = ks->v[x].saved;
		int rc;
		for (int j = 0; j < arm->nknobs; j++)
			if (arm->knob[j].k == ks->v[x].k)
				want = arm->knob[j].value;
		if (!strcmp(ks->v[x].now, want))
			continue;
		if ((rc = act_knob_write(a->app->knobs, ks->v[x].k, want)) < 0) {
			snprintf(err, len, "setting %s to %s: %s", ks->v[x].k->name, want, strerror(-rc));
			return -1;
		}
		snprintf(ks->v[x].now, sizeof ks->v[x].now, "%s", want);
	}
	return 0;
}

/* Each arm's knobs in full: its own values, and the saved one of every knob it does not name
 * (what advice turns into a profile fragment). */
static json_t *arm_settings(const struct exp_args *a, const struct knobset *ks)
{
	json_t *out = json_object();

	for (int i = 0; i < a->narms; i++) {
		json_t *o = json_object();
		for (int x = 0; x < ks->n; x++) {
			const char *v = ks->v[x].saved;
			for (int j = 0; j < a->arm[i].nknobs; j++)
				if (a->arm[i].knob[j].k == ks->v[x].k)
					v = a->arm[i].knob[j].value;
			json_object_set_new(o, ks->v[x].k->name, json_string(v));
		}
		json_object_set_new(out, a->arm[i].name, o);
	}
	return out;
}

static json_t *arm_names(const struct exp_args *a)
{
	json_t *n = json_array();

	for (int i = 0; i < a->narms; i++)
		json_array_append_new(n, json_string(a->arm[i].name));
	return n;
}

static void exp_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct exp_args *a = arg;
	struct restore_set rs = { .app = a->app, .op_id = job_op_id(ctx) };
	struct knobset ks = { 0 };
	int *warm = calloc((size_t)(a->warmup + 1) * (size_t)a->narms, sizeof *warm),
	    *order = calloc((size_t)a->rounds * (size_t)a->narms, sizeof *order);   /* owned */
	int total = (a->warmup + a->rounds) * a->narms, seq = 0;
	json_t *failure = NULL, *restored, *samples = NULL, *cmp = NULL, *names = arm_names(a);
	mp_err e = { 0 };

	if (!warm || !order) {
		fail_out(out, "failed", ENOMEM, "%s", "out of memory");
		goto end;
	}
	plan_order(a, warm, order);
	/* Everything an arm will change is saved before the first change. */
	if (save_knobs(a, &rs, &ks, &e) < 0) {
		fail_out(out, "failed", e.sys_errno, "%s", e.detail);
		goto end;
	}
	for (int r = 0; r < a->warmup + a->rounds && !out->status; r++) {
		bool is_warm = r < a->warmup;
		int round = is_warm ? r + 1 : r - a->warmup + 1;
		const int *row = is_warm ? warm + r * a->narms : order + (r - a->warmup) * a->narms;

		for (int i = 0; i < a->narms && !out->status; i++, seq++) {
			const struct exp_arm *arm = &a->arm[row[i]];
			char err[512] = "";
			json_t *m = NULL;
			int rc;

			job_progress(ctx, json_pack("{s:i, s:i, s:b, s:s, s:i, s:i}", "round", round, "rounds",
						    is_warm ? a->warmup : a->rounds, "warmup", is_warm, "arm", arm->name,
						    "runs_done", seq, "runs", total));
			if (job_cancelled(ctx)) {
				fail_out(out, "cancelled", 0, "%s", "cancelled between runs");
				break;
			}
			if (apply_arm(a, arm, &ks, err, sizeof err) < 0 ||
			    (rc = exp_round_run(ctx, a, arm, &m, err, sizeof err)) < 0) {
				failure = json_pack("{s:s, s:i, s:b, s:s}", "arm", arm->name, "round", round, "warmup", is_warm,
						    "error", err);
				snprintf(out->error, sizeof out->error, "arm %s, %sround %d: %.400s", arm->name,
					 is_warm ? "warm-up " : "", round, err);
				out->status = "failed";
				break;
			}
			if (rc > 0) {
				fail_out(out, "cancelled", 0, "%s", err[0] ? err : "cancelled");
				break;
			}
			if (exp_db_add_run(a->app->store, rs.op_id, round, is_warm, seq, arm->name, m, &e) < 0) {
				fail_out(out, "failed", e.sys_errno, "recording a run: %.400s", e.detail);
				json_decref(m);
				break;
			}
			json_decref(m);
		}
	}
end:
	/* On every path: done, failed, cancelled. */
	restored = restore_all(&rs);
	if (!out->status)
		out->status = "ok";
	if ((samples = exp_db_samples(a->app->store, rs.op_id, &e)))
		cmp = exp_compare(samples, names, a->seed);
	out->result = json_pack("{s:O, s:O, s:o?, s:o?, s:i, s:i, s:I, s:O, s:o, s:o?}", "workload",
				json_object_get(a->request, "workload"), "arms", json_object_get(a->request, "arms"),
				"order", order ? order_json(a, order, a->rounds) : NULL, "warmup_order",
				warm ? order_json(a, warm, a->warmup) : NULL, "rounds", a->rounds, "warmup", a->warmup,
				"seed", (json_int_t)a->seed, "host", a->host, "restored", restored, "failure", failure);
	if (cmp && out->result)
		json_object_update(out->result, cmp);
	if (out->result)
		json_object_set_new(out->result, "arm_settings", arm_settings(a, &ks));
	for (size_t i = 0; i < json_array_size(restored); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(restored, i), "status")), "restored")) {
			if (!strcmp(out->status, "ok"))
				fail_out(out, "failed", 0, "%s", "a value the experiment changed could not be restored (see restored)");
			break;
		}
	json_decref(cmp);
	json_decref(samples);
	json_decref(names);
	free(warm);
	free(order);
}

/* One experiment at a time, and not beside a probe: the key probes use. */
static void exp_key(const void *arg, char *key, size_t len)
{
	(void)arg;
	snprintf(key, len, "probe");
}

static json_t *exp_progress0(const void *arg)
{
	const struct exp_args *a = arg;
	return json_pack("{s:i, s:i}", "runs_done", 0, "runs", (a->warmup + a->rounds) * a->narms);
}

static json_t *exp_interrupted(const struct app *app, int64_t id, const json_t *request)
{
	(void)app;
	(void)id;
	(void)request;
	return json_pack("{s:s}", "note", "the daemon stopped during this experiment; the settings it had changed were "
			 "put back at the next start (a probe.restore operation in history), and the runs it finished "
			 "are in its samples");
}

const struct job_kind experiment_job = {
	.name = EXP_JOB_KIND, .run = exp_run, .free_arg = exp_args_free, .conflict_key = exp_key,
	.initial_progress = exp_progress0, .interrupted = exp_interrupted,
};

json_t *experiment_start(const struct app *app, const json_t *body, const struct launch_who *who,
			 const struct job_origin *origin, int64_t *conflict_id, mp_err *e)
{
	struct exp_args *a = calloc(1, sizeof *a);

	if (!a) {
		if (who->conn_fd >= 0)
			close(who->conn_fd);
		return mp_nomem(e), NULL;
	}
	a->app = app;
	a->peer_fd = who->conn_fd;
	if (exp_parse(a, body, who, e) < 0) {
		exp_args_free(a);
		return NULL;
	}
	struct job_spec spec = { .kind = &experiment_job, .arg = a, .request = a->request, .origin = *origin };
	return jobs_submit(app->jobs, &spec, conflict_id, e);   /* owns a from here, even on failure */
}
