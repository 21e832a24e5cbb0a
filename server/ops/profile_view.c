/* The profile in force for readers (see profile_view.h). */
#include "server/ops/profile_view.h"

#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/ops/profiles.h"

/* Under no lock: s is a copy. */
static void settle(struct ps_snapshot *s)
{
	bool drift = false;

	for (size_t i = 0; i < s->n; i++)
		drift |= s->keys[i].managed && s->keys[i].drifting;
	if (drift)
		s->reasons |= PSR_DRIFT;
	else
		s->reasons &= ~(unsigned)PSR_DRIFT;
	if (s->job_id)
		s->state = s->reasons ? PS_DEGRADED : PS_APPLIED;
}

int profile_view_read(const struct app *app, struct ps_snapshot *s)
{
	struct profile_checked ck;
	struct prof_err pe = { 0 };

	if (profile_state_snapshot(app->profile_state, s) < 0)
		return -1;
	if (!s->n)
		return 0;
	memset(&ck, 0, sizeof ck);
	snprintf(ck.doc.name, sizeof ck.doc.name, "%s", s->name);
	ck.doc.n = s->n;
	if (!(ck.doc.keys = calloc(s->n, sizeof *ck.doc.keys)) || !(ck.ev = calloc(s->n, sizeof *ck.ev))) {
		profiles_checked_free(&ck);
		ps_snapshot_free(s);
		return -1;
	}
	for (size_t i = 0; i < s->n; i++)
		ck.doc.keys[i] = s->keys[i].k;
	/* A key the kernel no longer allows is reported on its own row below; the others still read. */
	(void)profiles_evaluate(app, &ck, &pe);
	for (size_t i = 0; i < s->n; i++) {
		struct ps_key *k = &s->keys[i];
		const struct profile_eval *ev = &ck.ev[i];
		bool now_in_sync = ev->verdict == PROF_IN_SYNC;
		if (!k->managed || !k->supported || ev->verdict == PROF_UNSUPPORTED || !ev->have_now)
			continue;
		k->have_actual = true;
		snprintf(k->actual, sizeof k->actual, "%.*s", PS_ACTUAL_MAX - 1, ev->now);
		/* In sync after the apply (or reported drifting) and out of sync now: drift. A key short
		 * since the apply (a partial pool) differs, it did not drift. */
		k->drifting = !now_in_sync && (k->in_sync || k->drifting);
		k->in_sync = now_in_sync;
	}
	profiles_checked_free(&ck);
	settle(s);
	return 0;
}

json_t *profile_view_reasons(unsigned reasons)
{
	json_t *a = json_array();

	for (int b = 0; b < PS_NREASONS; b++)
		if (reasons & (1u << b))
			json_array_append_new(a, json_string(ps_reason_name(b)));
	return a;
}

json_t *profile_view_key(const struct ps_key *pk)
{
	json_t *vals = json_array(), *paths = json_array(), *o;
	char expected[PROF_ALTS_MAX * PROF_VALUE_MAX + 8];
	size_t off;

	off = (size_t)snprintf(expected, sizeof expected, "%s ", prof_cmp_text(pk->k.cmp));
	for (int v = 0; v < pk->k.nvals; v++) {
		json_array_append_new(vals, json_string(pk->k.vals[v]));
		if (off < sizeof expected)
			off += (size_t)snprintf(expected + off, sizeof expected - off, "%s%s", v ? "|" : "", pk->k.vals[v]);
	}
	for (int p = 0; p < pk->npaths; p++)
		json_array_append_new(paths, json_string(pk->paths[p]));
	o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:o, s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:{s:s, s:i, s:i}, s:o}", "key",
		      pk->k.id, "kind", prof_kind_name(pk->k.kind), "comparator", prof_cmp_text(pk->k.cmp), "values", vals,
		      "expected", expected, "actual", pk->have_actual ? json_string(pk->actual) : json_null(), "verdict",
		      ps_key_verdict(pk), "outcome", pk->outcome[0] ? pk->outcome : "in_sync", "why", pk->why, "on_drift",
		      prof_drift_name(pk->k.on_drift), "required", pk->k.required, "managed", pk->managed, "drifting",
		      pk->drifting, "source", "file", pk->k.loc.file, "line", (int)pk->k.loc.line, "column",
		      (int)pk->k.loc.col, "paths", paths);
	return o;
}

static json_t *error_json(const struct ps_error *er)
{
	json_t *o;

	if (!er->set)
		return json_null();
	o = json_pack("{s:s, s:s, s:s, s:I}", "profile", er->profile, "code", er->code, "detail", er->detail, "rejected_ns",
		      (json_int_t)er->at_ns);
	json_object_set_new(o, "file", er->loc.line ? json_string(er->loc.file) : json_null());
	json_object_set_new(o, "line", er->loc.line ? json_integer(er->loc.line) : json_null());
	json_object_set_new(o, "column", er->loc.line ? json_integer(er->loc.col) : json_null());
	return o;
}

static json_t *id_or_null(int64_t id)
{
	return id ? json_integer((json_int_t)id) : json_null();
}

json_t *profile_view_json(const struct app *app)
{
	struct ps_snapshot s;
	json_t *keys, *o;
	int count[5] = { 0 };   /* in_sync, drift, differs, unsupported, yielded */
	static const char *const names[5] = { "in_sync", "drift", "differs", "unsupported", "yielded" };

	if (profile_view_read(app, &s) < 0)
		return NULL;
	keys = json_array();
	for (size_t i = 0; i < s.n; i++) {
		const char *v = ps_key_verdict(&s.keys[i]);
		json_array_append_new(keys, profile_view_key(&s.keys[i]));
		for (int c = 0; c < 5; c++)
			count[c] += !strcmp(v, names[c]);
	}
	o = json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:{s:i, s:i, s:i, s:i, s:i}, s:o}", "name",
		      s.name[0] ? json_string(s.name) : json_null(), "state", ps_state_name(s.state), "reasons",
		      profile_view_reasons(s.reasons), "operation_id", id_or_null(s.operation_id), "job_id", id_or_null(s.job_id),
		      "applied_ns", s.applied_ns ? json_integer((json_int_t)s.applied_ns) : json_null(), "applying_job",
		      id_or_null(s.applying_job), "stale", s.stale, "error", error_json(&s.error), "summary", names[0],
		      count[0], names[1], count[1], names[2], count[2], names[3], count[3], names[4], count[4], "keys", keys);
	ps_snapshot_free(&s);
	return o;
}

json_t *profile_view_summary(const struct app *app)
{
	struct ps_snapshot s;
	json_t *o;

	if (profile_view_read(app, &s) < 0)
		return NULL;
	o = json_pack("{s:o, s:s, s:o}", "name", s.name[0] ? json_string(s.name) : json_null(), "state",
		      ps_state_name(s.state), "reasons", profile_view_reasons(s.reasons));
	ps_snapshot_free(&s);
	return o;
}

void profile_view_metrics(const struct app *app, FILE *f)
{
	struct ps_snapshot s;
	char sz[32];

	if (profile_view_read(app, &s) < 0)
		return;
	fputs("# HELP mempolicyd_profile_state The active profile's state: 1 for the state it is in, 0 for the others "
	      "(profile=\"\" when none is active).\n# TYPE mempolicyd_profile_state gauge\n", f);
	for (int st = PS_NONE; st <= PS_DEGRADED; st++)
		fprintf(f, "mempolicyd_profile_state{profile=\"%s\",state=\"%s\"} %d\n", s.name, ps_state_name(st),
			(int)s.state == st);
	fputs("# HELP mempolicyd_profile_degraded Why the active profile is degraded: 1 for each reason that holds.\n"
	      "# TYPE mempolicyd_profile_degraded gauge\n", f);
	for (int b = 0; b < PS_NREASONS; b++)
		fprintf(f, "mempolicyd_profile_degraded{reason=\"%s\"} %d\n", ps_reason_name(b), !!(s.reasons & (1u << b)));
	fputs("# HELP mempolicyd_profile_pool_target_pages The active profile's pool targets in pages (the least for "
	      "'>=', the most for '<='), by page size and node (node=\"total\": the global count).\n"
	      "# TYPE mempolicyd_profile_pool_target_pages gauge\n", f);
	for (size_t i = 0; i < s.n; i++) {
		const struct prof_key *k = &s.keys[i].k;
		uint64_t v;
		if (k->kind != PROF_POOL || !s.keys[i].managed || parse_u64(k->vals[0], &v) < 0)
			continue;
		format_size_kb(k->size_kb, sz, sizeof sz);
		if (k->node >= 0)
			fprintf(f, "mempolicyd_profile_pool_target_pages{size=\"%s\",node=\"%d\"} %llu\n", sz, k->node,
				(unsigned long long)v);
		else
			fprintf(f, "mempolicyd_profile_pool_target_pages{size=\"%s\",node=\"total\"} %llu\n", sz,
				(unsigned long long)v);
	}
	ps_snapshot_free(&s);
}
