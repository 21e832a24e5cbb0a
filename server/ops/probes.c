/* Probes as jobs: validate, submit, and the job itself (save → passes → restore). */
#include "server/ops/probes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/app.h"
#include "server/kernel/knobs.h"
#include "server/kernel/topology.h"
#include "server/log.h"
#include "server/ops/launch.h"
#include "server/ops/probe_child.h"
#include "server/ops/restore.h"
#include "server/priv/act.h"
#include "server/probes/probe.h"
#include "server/probes/typed.h"

#define PROBE_TABLE_MAX 16
#define CONFLICT_KEY    "probe"   /* one probe at a time: two would measure each other */

/* The job's argument: everything validated, nothing left to look up. */
struct probe_args {
	const struct app *app;       /* borrowed */
	const struct probe_kind *k;  /* static */
	unsigned kind;               /* k's index in the probe table */
	json_t *params;              /* owned: the kind's normalised parameters */
	union probe_params typed;    /* the same, as they cross to the helper (probes/typed.h) */
	struct probe_plan plan;
	struct launch_req lr;        /* owned: only policy and CPUs are used */
	int64_t timeout_ms;          /* per pass */
	json_t *request;             /* owned: as recorded */
};

static void args_free(void *arg)
{
	struct probe_args *a = arg;

	if (!a)
		return;
	json_decref(a->params);
	json_decref(a->request);
	launch_req_free(&a->lr);
	free(a);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the job --------------------------------------------------------------------------------- */

static json_t *pass_settings_json(const struct probe_pass *p)
{
	json_t *o = json_object();

	for (int i = 0; i < p->nset; i++)
		json_object_set_new(o, p->set[i].knob, json_string(p->set[i].value));
	return o;
}

static void fail_out(struct job_outcome *out, const char *status, int err_no, const char *msg)
{
	out->status = status;
	out->err_no = err_no;
	snprintf(out->error, sizeof out->error, "%s", msg);
}

/* Sets a pass's knobs (each saved already). 0, or -1 with out filled. */
static int apply_pass(struct probe_args *a, const struct probe_pass *p, struct job_outcome *out)
{
	for (int i = 0; i < p->nset; i++) {
		const struct knob *k = knobs_find(a->app->knobs, p->set[i].knob);
		int rc = k ? act_knob_write(a->app->knobs, k, p->set[i].value) : -ENOENT;
		if (rc < 0) {
			char msg[256];
			snprintf(msg, sizeof msg, "setting %s to %s: %s", p->set[i].knob, p->set[i].value, strerror(-rc));
			fail_out(out, "failed", -rc, msg);
			return -1;
		}
	}
	return 0;
}

static void probe_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct probe_args *a = arg;
	struct restore_set rs = { .app = a->app, .op_id = job_op_id(ctx) };
	json_t *passes = json_array(), *restored;
	mp_err e = { 0 };
	int64_t t0 = mono_ns();

	/* Everything the probe will change is saved before the first change. */
	for (int i = 0; i < a->plan.nsaves && !out->status; i++) {
		const struct probe_save *s = &a->plan.save[i];
		if ((s->what == PROBE_SAVE_KNOB ? restore_save_knob(&rs, s->knob, &e)
		     : restore_save_pool(&rs, s->size_kb, s->node, &e)) < 0)
			fail_out(out, "failed", e.sys_errno, e.detail);
	}
	for (int i = 0; i < a->plan.npasses && !out->status; i++)
		for (int j = 0; j < a->plan.pass[i].nset && !out->status; j++)
			if (restore_save_knob(&rs, a->plan.pass[i].set[j].knob, &e) < 0)
				fail_out(out, "failed", e.sys_errno, e.detail);

	for (int i = 0; i < a->plan.npasses && !out->status; i++) {
		const struct probe_pass *p = &a->plan.pass[i];
		json_t *result = NULL, *rec;
		struct probe_child_spec cs = {
			.kind = a->kind, .pass = (unsigned)i, .params = &a->typed, .sysfs_root = a->app->sysfs_root,
			.mem_pct = a->app->probe_mem_pct, .set_policy = a->lr.mode != NULL, .policy = a->lr.policy,
			.cpus = a->lr.cpus, .cpus_size = a->lr.cpus_size, .timeout_ms = a->timeout_ms,
		};
		enum probe_child_end end;
		char err[512] = "";
		int err_no = 0;
		int64_t p0;

		job_progress(ctx, json_pack("{s:I, s:I, s:s?}", "pass", (json_int_t)i + 1, "passes",
					    (json_int_t)a->plan.npasses, "label", p->label));
		if (job_cancelled(ctx)) {
			fail_out(out, "cancelled", 0, "cancelled before the pass started");
			break;
		}
		if (apply_pass(a, p, out) < 0)
			break;
		mpol_mask_from(&a->lr.nodes, &cs.nodes);
		p0 = mono_ns();
		end = probe_child_run(ctx, &cs, &result, &err_no, err, sizeof err);
		rec = json_pack("{s:s?, s:o, s:I, s:s}", "label", p->label, "settings", pass_settings_json(p),
				"elapsed_ns", (json_int_t)(mono_ns() - p0), "status",
				end == PCE_OK ? "ok" : end == PCE_CANCELLED ? "cancelled" : end == PCE_TIMEOUT ? "timeout"
				: "failed");
		if (result)
			json_object_set_new(rec, "result", result);
		else
			json_object_set_new(rec, "error", json_string(err));
		json_array_append_new(passes, rec);
		if (end == PCE_CANCELLED)
			fail_out(out, "cancelled", 0, err);
		else if (end == PCE_TIMEOUT) {
			fail_out(out, "failed", ETIMEDOUT, err);
			out->reason = JR_TIMEOUT;
		} else if (end != PCE_OK)
			fail_out(out, "failed", err_no, err);
	}
	/* On every path: done, failed, cancelled. */
	restored = restore_all(&rs);
	if (!out->status)
		out->status = "ok";
	out->result = json_pack("{s:s, s:O, s:o, s:o, s:I}", "probe", a->k->name, "params", a->params, "passes", passes, "restored", restored, "elapsed_ns",
				(json_int_t)(mono_ns() - t0));
	for (size_t i = 0; i < json_array_size(restored); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(restored, i), "status")), "restored")) {
			if (!strcmp(out->status, "ok"))
				fail_out(out, "failed", 0, "a value the probe changed could not be restored (see restored)");
			break;
		}
}

static void probe_key(const void *arg, char *key, size_t len)
{
	(void)arg;
	snprintf(key, len, CONFLICT_KEY);
}

static json_t *probe_progress0(const void *arg)
{
	const struct probe_args *a = arg;
	return json_pack("{s:i, s:i}", "pass", 0, "passes", a->plan.npasses);
}

/* The restore itself happens at start (ops/restore.c), before the API serves; the job only says
 * where to look. */
static json_t *probe_interrupted(const struct app *app, int64_t job_id_, const json_t *request)
{
	(void)app;
	(void)job_id_;
	(void)request;
	return json_pack("{s:s}", "note", "the daemon stopped during this probe; whatever it had changed was put back "
			 "at the next start (a probe.restore operation in history)");
}

static struct job_kind probe_jobs[PROBE_TABLE_MAX];

int probes_register(struct jobs *j, mp_err *e)
{
	if (probe_nkinds > PROBE_TABLE_MAX)
		return mp_fail(e, MPE_INTERNAL_ERROR, 0, "more probe kinds than job kinds for them");
	for (size_t i = 0; i < probe_nkinds; i++) {
		probe_jobs[i] = (struct job_kind){
			.name = probe_kinds[i]->job, .run = probe_run, .free_arg = args_free, .conflict_key = probe_key,
			.initial_progress = probe_progress0, .interrupted = probe_interrupted,
		};
		if (jobs_register(j, &probe_jobs[i], e) < 0)
			return -1;
	}
	return 0;
}

static const struct job_kind *job_of(const struct probe_kind *k)
{
	for (size_t i = 0; i < probe_nkinds; i++)
		if (probe_kinds[i] == k)
			return &probe_jobs[i];
	return NULL;
}

json_t *probes_list(void)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < probe_nkinds; i++) {
		json_t *params = json_object();   /* owned until json_pack's "o" takes it */
		for (const struct probe_param *q = probe_kinds[i]->params; q && q->name; q++)
			json_object_set_new(params, q->name, json_string(probe_param_type_name(q->type)));
		json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "kind", probe_kinds[i]->name, "job",
						     probe_kinds[i]->job, "params", params));
	}
	return arr;
}

/* ---- validation and start -------------------------------------------------------------------- */

static const char *const common_fields[] = { "policy", "cpus", "cpunodes", "timeout_s", NULL };

static bool is_common(const char *k)
{
	for (const char *const *c = common_fields; *c; c++)
		if (!strcmp(*c, k))
			return true;
	return false;
}

static int opt_str(const json_t *body, const char *key, const char **out, mp_err *e)
{
	json_t *v = json_object_get(body, key);

	*out = NULL;
	if (v && !json_is_string(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"%s\" must be a string", key);
	*out = json_string_value(v);
	return 0;
}

/* The common members: policy, CPUs, time bound. */
static int parse_common(const struct app *app, const json_t *body, const struct topology *t, struct probe_args *a,
			mp_err *e)
{
	const char *cpus, *cpunodes;
	json_t *p = json_object_get(body, "policy"), *to = json_object_get(body, "timeout_s");

	if (opt_str(body, "cpus", &cpus, e) < 0 || opt_str(body, "cpunodes", &cpunodes, e) < 0)
		return -1;
	if (p && launch_parse_policy(app, p, t, &a->lr, e) < 0)
		return -1;
	if ((cpus || cpunodes) && launch_parse_cpus(cpus, cpunodes, t, &a->lr, e) < 0)
		return -1;
	a->timeout_ms = PROBE_DEFAULT_TIMEOUT_S * 1000;
	if (to) {
		if (!json_is_integer(to))
			return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"timeout_s\" must be an integer");
		if (json_integer_value(to) < 1 || json_integer_value(to) > PROBE_MAX_TIMEOUT_S)
			return mp_fail(e, MPE_PROBE_BAD_PARAM, EINVAL, "\"timeout_s\" must be from 1 to %d",
				       PROBE_MAX_TIMEOUT_S);
		a->timeout_ms = json_integer_value(to) * 1000;
	}
	return 0;
}

/* Every knob a plan sets or saves must exist on this kernel: refused now rather than mid-probe. */
static int check_plan(const struct app *app, const struct probe_plan *pl, mp_err *e)
{
	for (int i = 0; i < pl->npasses; i++)
		for (int j = 0; j < pl->pass[i].nset; j++) {
			const struct knob *k = knobs_find(app->knobs, pl->pass[i].set[j].knob);
			struct knob_state ks;
			if (!k)
				return mp_fail(e, MPE_INTERNAL_ERROR, 0, "a probe names knob %s, which the catalogue lacks",
					       pl->pass[i].set[j].knob);
			knob_read(app->knobs, k, &ks);
			if (!ks.available)
				return mp_fail(e, MPE_KNOB_UNAVAILABLE, -ks.read_err, "this probe needs %s, which this "
					       "kernel lacks", k->name);
			if (knob_check_value(k, &ks, pl->pass[i].set[j].value) != KNOB_OK)
				return mp_fail(e, MPE_KNOB_VALUE_NOT_ALLOWED, 0, "this kernel does not take %s for %s",
					       pl->pass[i].set[j].value, k->name);
		}
	if (pl->npasses < 1 || pl->npasses > PROBE_MAX_PASSES)
		return mp_fail(e, MPE_INTERNAL_ERROR, 0, "a probe plan with %d passes", pl->npasses);
	return 0;
}

json_t *probe_start(const struct app *app, const char *kind, const json_t *body, const struct job_origin *origin,
		    int64_t *conflict_id, mp_err *e)
{
	const struct probe_kind *k = probe_find(kind);
	struct probe_args *a = NULL;
	struct topology *t = NULL;
	struct probe_env env = { 0 };
	json_t *own = NULL, *job = NULL, *v;
	const char *key;
	int rc;

	if (!k)
		return mp_fail(e, MPE_PROBE_UNKNOWN, 0, "no probe kind '%.32s' (GET /v1/probes lists them)",
			       strspn(kind, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(kind) ? kind : "?"), NULL;
	if (!(a = calloc(1, sizeof *a)) || !(t = malloc(sizeof *t)) || !(own = json_object())) {
		mp_nomem(e);
		goto fail;
	}
	a->app = app;
	a->k = k;
	if ((rc = topo_read(app->sysfs_root, t)) < 0) {
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -rc, "reading the topology: %s", strerror(-rc));
		goto fail;
	}
	if (parse_common(app, body, t, a, e) < 0)
		goto fail;
	json_object_foreach((json_t *)body, key, v)
		if (!is_common(key))
			json_object_set(own, key, v);
	probe_env_from(t, &env);
	if (!(a->params = k->parse(own, &env, &a->plan, e)) || check_plan(app, &a->plan, e) < 0 ||
	    probe_check_share(&a->plan, &env, app->probe_mem_pct, e) < 0 || k->pack(a->params, &env, &a->typed, e) < 0)
		goto fail;
	while (probe_kinds[a->kind] != k)
		a->kind++;
	a->request = json_pack("{s:s, s:O, s:I}", "probe", k->name, "params", a->params, "timeout_s",
			       (json_int_t)(a->timeout_ms / 1000));
	if (json_object_get(body, "policy"))
		json_object_set(a->request, "policy", json_object_get(body, "policy"));
	if (a->lr.cpus)
		json_object_set_new(a->request, "cpus", json_string(a->lr.cpus_text));
	free(t);
	json_decref(own);
	struct job_spec spec = { .kind = job_of(k), .arg = a, .request = a->request, .origin = *origin };
	return jobs_submit(app->jobs, &spec, conflict_id, e);   /* owns a from here, even on failure */
fail:
	args_free(a);
	free(t);
	json_decref(own);
	return job;
}
