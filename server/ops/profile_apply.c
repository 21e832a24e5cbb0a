/* profile.apply (see profile_apply.h): validation and the job. The pools' part is profile_pools.c. */
#include "server/ops/profile_apply.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/testhold.h"
#include "server/jobs/jobs.h"
#include "server/kernel/knobs.h"
#include "server/log.h"
#include "server/ops/cgroups.h"
#include "server/ops/conditions.h"
#include "server/ops/knobs.h"
#include "server/ops/labels.h"
#include "server/ops/profile_pools.h"
#include "server/ops/profile_state.h"
#include "server/ops/profile_view.h"
#include "server/ops/profiles.h"
#include "server/store/history.h"

#define KIND "profile.apply"
#define CONFLICT_KEY "profile"   /* one activation at a time */

struct apply_args {
	const struct app *app;       /* borrowed */
	struct profile_checked ck;   /* owned: the document as validated */
	struct job_actor actor;      /* who asked; name points into actor_name */
	bool has_actor;
	char actor_name[64];
	char source[16];
	bool fresh;                  /* run at once (jobs_run_now): ck was merged and evaluated just now */
	json_t *conditions;          /* owned: the knob transaction's conditions (apply_knobs), or NULL */
	/* fresh: the knob change begun at activation (see begin_knobs), one of: */
	struct knob_tx *ktx;         /* owned: validated, the knob lock held, its operation stored with the job */
	json_t *kunchanged;          /* owned: knobs_set's answer, every knob had its value already */
	mp_err krefused;             /* the validation's refusal (code 0: none) */
	json_t *kwant;               /* owned: the knobs it wanted to write; NULL when none */
	struct knob_record krec;     /* what the job's end records of ktx (job_outcome.knobs) */
	struct ps_key *kept;         /* owned: with ktx, a copy of the keys concluded (apply_unrecorded) */
	/* With ktx: the keys conclude made (owned) and who made them, installed once the job's end,
	 * which records the knob change, is (apply_settled): installed before it, an end that could
	 * not be recorded showed a state its rollback then undid, and the drift watcher took the
	 * rollback's writes for a drift of that state. */
	struct ps_key *pending;
	int64_t pending_op, pending_job;
	unsigned reasons;            /* what the apply concluded (apply_unrecorded starts from it) */
	bool stale;
};

static void args_free(void *p)
{
	struct apply_args *a = p;

	if (!a)
		return;
	profiles_checked_free(&a->ck);
	json_decref(a->conditions);
	knob_tx_done(a->ktx);   /* after the job's end is recorded: the knob lock is released */
	json_decref(a->kunchanged);
	json_decref(a->kwant);
	free(a->kept);
	free(a->pending);
	free(a);
}

/* ---- the keys' outcomes ---------------------------------------------------------------------- */

static void outcome(struct ps_key *pk, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void outcome(struct ps_key *pk, const char *what, const char *fmt, ...)
{
	va_list ap;

	snprintf(pk->outcome, sizeof pk->outcome, "%s", what);
	pk->why[0] = '\0';
	if (!fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(pk->why, sizeof pk->why, fmt, ap);
	va_end(ap);
}

static void add_path(struct ps_key *pk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_path(struct ps_key *pk, const char *fmt, ...)
{
	va_list ap;

	if (pk->npaths == PS_PATHS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(pk->paths[pk->npaths++], PS_PATH_MAX, fmt, ap);
	va_end(ap);
}

/* The files a key is read from, and those whose writes change it. */
static void key_paths(const struct app *app, const struct profile_checked *ck, uint64_t default_kb,
		      struct ps_key *pk)
{
	const struct prof_key *k = &pk->k;
	const struct knob *kn;

	if (k->kind == PROF_KNOB) {
		if ((kn = knobs_find(app->knobs, k->key)))
			add_path(pk, "%s/%s", kn->root == KNOB_SYSFS ? app->sysfs_root : app->procfs_root, kn->rel);
	} else if (k->kind == PROF_POOL) {
		if (k->node >= 0)
			add_path(pk, "%s/devices/system/node/node%d/hugepages/hugepages-%llukB/nr_hugepages", app->sysfs_root,
				 k->node, (unsigned long long)k->size_kb);
		add_path(pk, "%s/kernel/mm/hugepages/hugepages-%llukB/nr_hugepages", app->sysfs_root,
			 (unsigned long long)k->size_kb);
		if (k->size_kb == default_kb)
			add_path(pk, "%s/sys/vm/nr_hugepages", app->procfs_root);
	} else if (ck->have_cg) {
		add_path(pk, "%s/%s/%s/cpuset.mems", app->sysfs_root, ck->cg.mount_rel, k->cgpath);
	}
}

/* Hugepagesize: in meminfo, the size /proc/sys/vm/nr_hugepages resizes; 0 when unknown. */
static uint64_t default_size_kb(const struct app *app)
{
	char path[4200], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/meminfo", app->procfs_root);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* The managed set from the validated document: what every key expects, and where it is read. */
static struct ps_key *keys_new(const struct app *app, const struct profile_checked *ck)
{
	struct ps_key *keys = calloc(ck->doc.n ? ck->doc.n : 1, sizeof *keys);
	uint64_t dkb = 0;

	/* meminfo is read for the pools' paths alone. */
	for (size_t i = 0; !dkb && i < ck->doc.n; i++)
		if (ck->doc.keys[i].kind == PROF_POOL)
			dkb = default_size_kb(app);

	for (size_t i = 0; keys && i < ck->doc.n; i++) {
		keys[i].k = ck->doc.keys[i];
		keys[i].managed = true;
		key_paths(app, ck, dkb, &keys[i]);
	}
	return keys;
}

/* After the writes: what the kernel shows for each key. A knob the transaction wrote was read
 * back by it, each write checked against the kernel's value at once ("written" means the kernel
 * showed the value written: knobs.c's write_checked, the helper's batch): that is its value, not
 * read a second time for the same answer. Every other key is read again. */
static void read_back(const struct app *app, struct profile_checked *ck, struct ps_key *keys)
{
	struct prof_err pe = { 0 };
	bool *again = calloc(ck->doc.n ? ck->doc.n : 1, sizeof *again);   /* owned; NULL: read every key */

	for (size_t i = 0; again && i < ck->doc.n; i++) {
		struct profile_eval *ev = &ck->ev[i];
		again[i] = !(keys[i].k.kind == PROF_KNOB && ev->verdict == PROF_DIFFERS &&
			     !strcmp(keys[i].outcome, "written"));
		if (!again[i]) {
			snprintf(ev->now, sizeof ev->now, "%s", ev->target);
			ev->have_now = true;
			ev->verdict = PROF_IN_SYNC;
		}
	}
	if (profiles_evaluate_keys(app, ck, again, &pe) < 0)
		log_warn("profile %s: reading the keys back: %s", ck->doc.name, pe.e.detail);
	for (size_t i = 0; i < ck->doc.n; i++) {
		const struct profile_eval *ev = &ck->ev[i];
		struct ps_key *pk = &keys[i];
		pk->supported = ev->verdict != PROF_UNSUPPORTED;
		pk->in_sync = ev->verdict == PROF_IN_SYNC;
		pk->have_actual = ev->have_now;
		snprintf(pk->actual, sizeof pk->actual, "%.*s", PS_ACTUAL_MAX - 1, ev->have_now ? ev->now : "");
		if (!pk->supported && !pk->outcome[0])
			outcome(pk, "unsupported", "%s", ev->reason);
	}
	free(again);
}

/* ---- knobs and cgroups ----------------------------------------------------------------------- */

static const char *knob_outcome(const char *status)
{
	if (!strcmp(status, "written"))
		return "written";
	if (!strcmp(status, "restored"))
		return "rolled_back";
	if (!strcmp(status, "skipped"))
		return "skipped";
	if (!strcmp(status, "unchanged"))
		return "in_sync";
	return "failed";
}

/* The knobs out of sync, {name: value}: a new object, empty when none is. */
static json_t *knobs_wanted(const struct app *app, const struct profile_checked *ck)
{
	json_t *want = json_object();

	for (size_t i = 0; want && i < ck->doc.n; i++) {
		const struct prof_key *k = &ck->doc.keys[i];
		const struct knob *kn;
		if (k->kind != PROF_KNOB || ck->ev[i].verdict != PROF_DIFFERS || !(kn = knobs_find(app->knobs, k->key)))
			continue;
		json_object_set_new(want, k->key, knob_value_json(kn, ck->ev[i].target));
	}
	return want;
}

static struct knobs_actor actor_of(const struct apply_args *a, bool recorded_after, json_t **conditions)
{
	return (struct knobs_actor){ .known = a->has_actor, .uid = a->actor.uid, .name = a->actor.name,
				     .source = "profile", .recorded_after = recorded_after, .conditions = conditions };
}

/* A job run at once (fresh): its knob change is validated now, before the job is stored, so
 * that its knobs.set operation goes into the job's own first commit ("running": the evidence of
 * the attempt before the first write) and its outcome into the job's end. A refusal is the job's
 * to report, as when it validated in run(). */
static void begin_knobs(struct apply_args *a)
{
	struct knobs_actor who = actor_of(a, false, NULL);

	a->kwant = knobs_wanted(a->app, &a->ck);
	if (!a->kwant || !json_object_size(a->kwant)) {
		json_decref(a->kwant);
		a->kwant = NULL;
		return;
	}
	if (knob_tx_begin(a->app, &who, a->kwant, false, &a->ktx, &a->kunchanged, &a->krefused) < 0 && !a->krefused.code)
		mp_nomem(&a->krefused);
}

/* Each knob key's outcome from the change's answer (knobs_set's shape, NULL: none); rc < 0: the
 * change failed with e. */
static void knob_outcomes(const struct apply_args *a, struct ps_key *keys, json_t *want, json_t *out, int rc,
			  const mp_err *e)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(out, "changes"), i, c) {
		const char *name = json_string_value(json_object_get(c, "knob"));
		const char *st = json_string_value(json_object_get(c, "status"));
		for (size_t j = 0; name && st && j < a->ck.doc.n; j++)
			if (keys[j].k.kind == PROF_KNOB && !strcmp(keys[j].k.key, name))
				outcome(&keys[j], knob_outcome(st), rc < 0 && strcmp(st, "written") ? "%s" : NULL, e->detail);
	}
	/* Refused before anything was written (validation): every knob key says why. */
	for (size_t j = 0; rc < 0 && !out && j < a->ck.doc.n; j++)
		if (keys[j].k.kind == PROF_KNOB && json_object_get(want, keys[j].k.key))
			outcome(&keys[j], "failed", "%s", e->detail);
}

/* The knobs out of sync, as one knobs.set transaction. Returns its operation id (0: none was
 * needed), or -1 when it failed (the written ones rolled back); *err says why. */
static int64_t apply_knobs(struct apply_args *a, struct job_ctx *ctx, struct job_outcome *jo, struct ps_key *keys,
			   char *err, size_t errlen)
{
	json_t *want, *out = NULL;
	mp_err e = { 0 };
	int64_t id = 0;
	int rc;

	if (a->fresh) {
		/* Begun at activation (begin_knobs); recorded with the job's end (jo->knobs). */
		if (!(want = json_incref(a->kwant)))
			return 0;
		if (a->krefused.code) {
			rc = -1;
			e = a->krefused;
		} else if (a->ktx) {
			rc = knob_tx_write(a->ktx, job_with_op_id(ctx), &a->krec);
			jo->knobs = &a->krec;
			e = *knob_tx_error(a->ktx);
			out = knob_tx_answer(a->ktx);
			a->conditions = json_incref(knob_tx_conditions(a->ktx));
		} else {
			rc = 0;
			out = json_incref(a->kunchanged);
		}
	} else {
		/* The job's operation, committed running before run(), is the crash evidence (a crash
		 * mid-apply: interrupted at the next start, and applied again there): the knobs.set
		 * operation is recorded once, after its writes. */
		struct knobs_actor who = actor_of(a, true, &a->conditions);
		want = knobs_wanted(a->app, &a->ck);
		if (!json_object_size(want)) {
			json_decref(want);
			return 0;
		}
		rc = knobs_set(a->app, &who, want, false, false, &out, &e);
	}
	if (out && json_is_integer(json_object_get(out, "operation_id")))
		id = json_integer_value(json_object_get(out, "operation_id"));
	knob_outcomes(a, keys, want, out, rc, &e);
	if (rc < 0) {
		snprintf(err, errlen, "the knobs: %.400s", e.detail);
		id = -1;
	}
	json_decref(want);
	json_decref(out);
	return id;
}

/* Each cgroup out of sync, through ops/cgroups.c (its cgroup.mems operation). Returns how many
 * failed; their ids are appended to ops. */
static int apply_cgroups(struct apply_args *a, struct ps_key *keys, json_t *ops, char *err, size_t errlen)
{
	struct proc_caller who = { .known = a->has_actor, .admin = true, .uid = a->actor.uid, .name = a->actor.name,
				   .source = "profile" };
	int bad = 0;

	for (size_t i = 0; i < a->ck.doc.n; i++) {
		const struct prof_key *k = &a->ck.doc.keys[i];
		json_t *body, *out = NULL;
		mp_err e = { 0 };
		int rc;
		if (k->kind != PROF_CGROUP || a->ck.ev[i].verdict != PROF_DIFFERS)
			continue;
		body = json_pack("{s:s}", "mems", a->ck.ev[i].target);
		rc = cgroup_set_mems(a->app, &who, k->cgpath, body, &out, &e);
		if (out && json_is_integer(json_object_get(out, "operation_id")))
			json_array_append(ops, json_object_get(out, "operation_id"));
		if (rc < 0) {
			outcome(&keys[i], "failed", "%s", e.detail);
			if (!bad++)
				snprintf(err, errlen, "%.80s: %.400s", k->id, e.detail);
		} else {
			outcome(&keys[i], "written", NULL);
		}
		json_decref(body);
		json_decref(out);
	}
	return bad;
}

/* ---- the job --------------------------------------------------------------------------------- */

static json_t *keys_json(const struct ps_key *keys, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, profile_view_key(&keys[i]));
	return arr;
}

/* A knob out of sync: the apply makes a knob transaction. */
static bool knobs_to_write(const struct profile_checked *ck)
{
	for (size_t i = 0; i < ck->doc.n; i++)
		if (ck->doc.keys[i].kind == PROF_KNOB && ck->ev[i].verdict == PROF_DIFFERS)
			return true;
	return false;
}

/* The files changed since validation, before anything is written: nothing is applied. */
static bool changed_before(struct apply_args *a, struct job_outcome *out)
{
	struct prof_err pe = { 0 };
	uint64_t now = 0;

	if (profiles_digest(a->app, &a->ck.doc, &now, &pe) == 0 && now == a->ck.digest)
		return false;
	out->status = "failed";
	snprintf(out->error, sizeof out->error, "profile %s changed after it was validated (%.300s); nothing was applied, "
		 "the profile in force is unchanged: activate it again", a->ck.doc.name,
		 pe.e.code ? pe.e.detail : "its files differ now");
	return true;
}

static void conclude(struct apply_args *a, struct job_ctx *ctx, struct ps_key *keys, unsigned reasons, int64_t knob_op,
		     json_t *cg_ops, json_t *pools, struct cond_snap *snap, const char *err, struct job_outcome *out);

static void apply_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct apply_args *a = arg;
	const struct app *app = a->app;
	struct ps_key *keys = NULL;
	json_t *cg_ops = json_array(), *pools = json_array();
	char err[512] = "";
	unsigned reasons = 0;
	int64_t knob_op = 0;
	uint64_t digest_after = 0;
	struct prof_err pe = { 0 };
	struct cond_snap *snap = NULL;   /* owned: a fresh job's own measurement, when it writes no knob */

	profile_state_applying(app->profile_state, job_id(ctx));
	/* Run at once, the document is the files and the kernel as validated a moment ago, in this
	 * thread: nothing came between, so neither the digest nor the keys are read again here (a file
	 * changed from now on is "during the apply": the digest after the writes says so). */
	if (a->fresh) {
		if (!(keys = keys_new(app, &a->ck)))
			mp_nomem(&pe.e);
		goto evaluated;
	}
	if (changed_before(a, out)) {
		profile_state_reject(app->profile_state, a->ck.doc.name, mp_code_name(MPE_PROFILE_CHANGED), out->error,
				     NULL, job_id(ctx));
		goto done;
	}
	/* The document validated at activation, evaluated again now: another change may have come
	 * between (a queued job runs later). */
	if (profiles_evaluate(app, &a->ck, &pe) == 0 && !(keys = keys_new(app, &a->ck)))
		mp_nomem(&pe.e);
evaluated:
	if (!keys) {
		out->status = "failed";
		snprintf(out->error, sizeof out->error, "%s", pe.e.detail);
		profile_state_reject(app->profile_state, a->ck.doc.name, mp_code_name(pe.e.code), out->error,
				     pe.loc.line ? &pe.loc : NULL, job_id(ctx));
		goto done;
	}
	for (size_t i = 0; i < a->ck.doc.n; i++)
		if (a->ck.ev[i].verdict == PROF_IN_SYNC)
			outcome(&keys[i], "in_sync", NULL);
	/* A fresh job measures itself (measures_itself): its one change is the knob transaction,
	 * whose conditions are its own; with no knob to write, around the job here. */
	if (a->fresh && !knobs_to_write(&a->ck))
		snap = cond_begin(app);
	if ((knob_op = apply_knobs(a, ctx, out, keys, err, sizeof err)) < 0) {
		/* One transaction: the knobs were put back, so nothing else is changed either. */
		reasons |= PSR_APPLY_FAILED;
		for (size_t i = 0; i < a->ck.doc.n; i++)
			if (!keys[i].outcome[0] && a->ck.ev[i].verdict == PROF_DIFFERS)
				outcome(&keys[i], "skipped", "not applied: the knobs' transaction failed and was rolled back");
	} else {
		if (apply_cgroups(a, keys, cg_ops, err, sizeof err) > 0)
			reasons |= PSR_APPLY_FAILED;
		reasons |= profile_pools_apply(ctx, app, &a->ck, keys, pools, out, err[0] ? NULL : err, sizeof err);
	}
	read_back(app, &a->ck, keys);
	if (a->ck.unsupported_required)
		reasons |= PSR_UNSUPPORTED_REQUIRED;
	/* A file that changed during the apply: the version validated is what was applied, whole. */
	a->stale = profiles_digest(app, &a->ck.doc, &digest_after, &pe) < 0 || digest_after != a->ck.digest;
	if (a->stale)
		log_warn("profile %s changed while job %lld applied it: the version validated at activation is in force; "
			 "apply it again to take the new one", a->ck.doc.name, (long long)job_id(ctx));
	conclude(a, ctx, keys, reasons, knob_op, cg_ops, pools, snap, err, out);
	keys = NULL;   /* the state's now */
done:
	free(keys);
	json_decref(cg_ops);
	json_decref(pools);
}

/* The job's end unrecordable with its knob change (a fresh job, jobs.c's finish): the knobs are
 * put back, and the apply ends failed as one whose knob transaction failed, read back again and
 * installed so. */
static void apply_unrecorded(struct job_ctx *ctx, void *arg, struct job_outcome *out, const mp_err *why)
{
	struct apply_args *a = arg;
	struct ps_key *keys = a->kept;
	json_t *answer, *none = json_array(), *none2 = json_array();
	char err[512];

	if (!a->ktx || !keys)
		return;
	/* Test builds only (common/testhold.h): waits here, the end refused and nothing put back
	 * yet, until a test has opened and closed MEMPOLICYD_TEST_HOLD_UNRECORDED's FIFO. */
	test_hold_fifo("MEMPOLICYD_TEST_HOLD_UNRECORDED");
	a->kept = NULL;
	knob_tx_unrecorded(a->ktx, why);
	answer = knob_tx_answer(a->ktx);
	knob_outcomes(a, keys, a->kwant, answer, -1, knob_tx_error(a->ktx));
	json_decref(answer);
	read_back(a->app, &a->ck, keys);
	snprintf(err, sizeof err, "the knobs: %.400s", knob_tx_error(a->ktx)->detail);
	out->error[0] = '\0';
	json_decref(out->result);
	out->result = NULL;
	out->knobs = NULL;
	conclude(a, ctx, keys, a->reasons | PSR_APPLY_FAILED, job_with_op_id(ctx), none, none2, NULL, err, out);
	json_decref(none);
	json_decref(none2);
}

static void conclude(struct apply_args *a, struct job_ctx *ctx, struct ps_key *keys, unsigned reasons, int64_t knob_op,
		     json_t *cg_ops, json_t *pools, struct cond_snap *snap, const char *err, struct job_outcome *out)
{
	const struct app *app = a->app;

	a->reasons = reasons;
	out->status = reasons & PSR_APPLY_FAILED ? "failed" : reasons & PSR_PARTIAL_ALLOCATION ? "partial" : "ok";
	/* Cancelled between two resize runs: what was done is installed (and said short), as a
	 * cancelled resize keeps its pages. */
	if (job_cancelled(ctx))
		out->status = "cancelled";
	if (err[0] && !out->error[0])
		snprintf(out->error, sizeof out->error, "%s", err);
	out->result = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:b}", "profile", a->ck.doc.name, "state",
				reasons ? "degraded" : "applied", "reasons", profile_view_reasons(reasons), "keys",
				keys_json(keys, a->ck.doc.n), "knobs_operation_id",
				knob_op > 0 ? json_integer(knob_op) : json_null(), "cgroup_operation_ids", json_incref(cg_ops),
				"pools", json_incref(pools), "profile_changed", a->stale);
	if (a->fresh) {
		json_t *c = snap ? cond_end(app, snap) : a->conditions ? json_incref(a->conditions)
					: cond_end(app, cond_begin(app));   /* refused before a write: now */
		if (c && out->result)
			json_object_set_new(out->result, "conditions", c);
		else
			json_decref(c);
	}
	/* A knob change recorded with the job's end: should that fail, apply_unrecorded installs
	 * again from these. */
	if (a->ktx) {
		if (!a->kept && (a->kept = malloc(a->ck.doc.n * sizeof *keys)))
			memcpy(a->kept, keys, a->ck.doc.n * sizeof *keys);
		free(a->pending);
		a->pending = keys;
		a->pending_op = job_op_id(ctx);
		a->pending_job = job_id(ctx);
		return;
	}
	profile_state_install(app->profile_state, a->ck.doc.name, keys, a->ck.doc.n, reasons, job_op_id(ctx),
			      job_id(ctx), a->stale);
}

/* The end recorded (with the knob change, or without it once apply_unrecorded put it back): the
 * state the end says is installed. */
static void apply_settled(struct job_ctx *ctx, void *arg)
{
	struct apply_args *a = arg;

	(void)ctx;
	if (!a->pending)
		return;
	profile_state_install(a->app->profile_state, a->ck.doc.name, a->pending, a->ck.doc.n, a->reasons, a->pending_op,
			      a->pending_job, a->stale);
	a->pending = NULL;   /* the state's now */
	/* The end's operation woke the node labels' writer before this state was there: again. */
	labels_changed();
}

/* One activation at a time: a second one while one is queued or running is 409 job.conflict. */
static void apply_key(const void *arg, char *key, size_t len)
{
	(void)arg;
	snprintf(key, len, "%s", CONFLICT_KEY);
}

static json_t *apply_interrupted(const struct app *app, int64_t id, const json_t *request)
{
	(void)app;
	(void)id;
	(void)request;
	return json_pack("{s:s}", "note", "the daemon stopped during this apply; the keys are as the kernel shows them "
			 "(GET /v1/profile after the next apply)");
}

const struct job_kind profile_apply_job = {
	.name = KIND,
	.run = apply_run,
	.free_arg = args_free,
	.conflict_key = apply_key,
	.interrupted = apply_interrupted,
	.unrecorded = apply_unrecorded,
	.settled = apply_settled,
};

/* ---- activation ------------------------------------------------------------------------------ */

/* Every key a knob (or none at all): nothing of the apply waits for the kernel's memory. */
static bool knobs_only(const struct prof_doc *doc)
{
	for (size_t i = 0; i < doc->n; i++)
		if (doc->keys[i].kind != PROF_KNOB)
			return false;
	return true;
}

int profile_activate(const struct app *app, const char *name, const struct job_origin *origin, bool dry_run,
		     int64_t deadline_ms, json_t **out, int64_t *conflict_id, struct prof_err *pe)
{
	struct apply_args *a;
	json_t *request;
	struct job_spec spec = { .kind = &profile_apply_job, .origin = *origin };
	int64_t busy = 0;

	*out = NULL;
	if (dry_run)
		return profiles_diff(app, name, out, pe);
	if (!(a = calloc(1, sizeof *a)))
		return mp_nomem(&pe->e);
	a->app = app;
	if (profiles_check(app, name, &a->ck, pe) < 0 || profile_pools_check(app, &a->ck, pe) < 0) {
		if (pe->e.code != MPE_PROFILE_NOT_FOUND)
			profile_state_reject(app->profile_state, name, mp_code_name(pe->e.code), pe->e.detail,
					     pe->loc.line ? &pe->loc : NULL, 0);
		args_free(a);
		return -1;
	}
	if (origin->actor) {
		a->has_actor = origin->actor->has_uid;
		a->actor.has_uid = origin->actor->has_uid;
		a->actor.uid = origin->actor->uid;
		snprintf(a->actor_name, sizeof a->actor_name, "%s", origin->actor->name ? origin->actor->name : "");
		a->actor.name = a->actor_name;
	}
	request = json_pack("{s:s, s:b, s:I, s:s}", "profile", name, "dry_run", 0, "deadline_ms",
			    (json_int_t)(deadline_ms ? deadline_ms : PROFILE_POOL_DEADLINE_MS), "digest", "");
	{
		char hex[24];
		snprintf(hex, sizeof hex, "%016llx", (unsigned long long)a->ck.digest);
		json_object_set_new(request, "digest", json_string(hex));
	}
	spec.arg = a;
	spec.request = request;
	spec.deadline_ms = deadline_ms ? deadline_ms : PROFILE_POOL_DEADLINE_MS;
	/* Knobs only: one transaction of a few writes, run here and answered ended (no resize loop to
	 * wait for, no hand-off to a worker and back). */
	a->fresh = knobs_only(&a->ck.doc);
	spec.measures_itself = a->fresh;
	if (a->fresh && (busy = jobs_key_holder(app->jobs, CONFLICT_KEY)) > 0) {
		/* Before begin_knobs takes the knob lock, which a job run at once holds until it is
		 * recorded: a second activation meanwhile is 409, as the runner would say, not a wait. */
		args_free(a);
		mp_fail(&pe->e, MPE_JOB_CONFLICT, 0, "job %lld is running", (long long)busy);
	} else {
		if (a->fresh) {
			begin_knobs(a);
			spec.with_op = a->ktx ? knob_tx_op(a->ktx) : NULL;
		}
		*out = (a->fresh ? jobs_run_now : jobs_submit)(app->jobs, &spec, &busy, &pe->e);   /* owns a from here */
	}
	if (conflict_id)
		*conflict_id = busy;
	json_decref(request);
	if (!*out) {
		pe->loc.file[0] = '\0';
		pe->loc.line = 0;
		if (pe->e.code == MPE_JOB_CONFLICT)
			snprintf(pe->e.detail, sizeof pe->e.detail, "a profile is being activated already (job %lld); wait "
				 "for it (mempolicyctl job show %lld --wait) or cancel it, then activate %s", (long long)busy,
				 (long long)busy, name);
		return -1;
	}
	return 0;
}
