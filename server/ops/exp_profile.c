/* An arm given as a profile fragment ("[knobs]\nthp.enabled = always\n"): the profiles' own
 * parser, so the grammar and its file:line:column errors are theirs, and of what it parses only
 * what an experiment can save before and put back after the way it does knobs (its restore rows
 * are knobs'): one value for each knob, written with '='. A hugepage pool or a cgroup's mems is
 * not among what an experiment saves; an include would read the profiles directory, which an arm
 * is not about; >=, <=, alternatives, on-drift and required say what would be in sync, not one
 * value to write. Its knobs then go through exp_arm_knob, exactly as "knobs" do. */
#include <stdio.h>

#include "server/ops/exp.h"
#include "server/profiles/profile.h"

/* Why an arm cannot have key k, into buf; NULL when it can. */
static const char *key_refusal(const struct prof_key *k, char *buf, size_t len)
{
	if (k->removal)
		snprintf(buf, len, "-%.96s: an arm's fragment includes nothing a key could be removed from", k->key);
	else if (k->kind == PROF_POOL)
		snprintf(buf, len, "%.96s: an arm cannot have [hugepages.SIZE] keys (an experiment saves and restores "
			 "knobs, not hugepage pools)", k->id);
	else if (k->kind == PROF_CGROUP)
		snprintf(buf, len, "%.96s: an arm cannot have [cgroup PATH] keys (an experiment saves and restores knobs, "
			 "not a cgroup's mems)", k->id);
	else if (k->cmp != PROF_EQ)
		snprintf(buf, len, "%.96s %s: an arm writes one value; give it with '='", k->key, prof_cmp_text(k->cmp));
	else if (k->nvals > 1)
		snprintf(buf, len, "%.96s: alternatives a|b: an arm writes one value", k->key);
	else if (k->drift_set || k->required)
		snprintf(buf, len, "%.96s: on-drift and required are for a profile in force, not for an arm", k->key);
	else
		return NULL;
	return buf;
}

int exp_arm_profile(const struct app *app, const json_t *text, struct exp_arm *arm, mp_err *e)
{
	struct prof_file f = { 0 };   /* owned: its keys */
	struct prof_err pe = { 0 };
	struct prof_loc whole = { 0 };
	char why[300], where[48];
	int rc = -1;

	if (!json_is_string(text))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0,
			       "arm %s: \"profile\" must be a string (a fragment in the profile syntax)", arm->name);
	/* The "file" of every location, so a detail reads "arm NAME: profile:LINE:COL: ...". */
	snprintf(whole.file, sizeof whole.file, "arm %s: profile", arm->name);
	if (prof_parse(whole.file, json_string_value(text), json_string_length(text), &f, &pe) < 0)
		goto refused;
	if (f.has_include) {
		prof_fail(&pe, &f.include_loc, MPE_EXPERIMENT_PROFILE_UNSUPPORTED,
			  "include: an arm's fragment is all of its settings (give the included keys in it)");
		goto refused;
	}
	if (f.on_drift != PROF_DRIFT_UNSET) {
		prof_fail(&pe, &whole, MPE_EXPERIMENT_PROFILE_UNSUPPORTED,
			  "[profile] on-drift is for a profile in force, not for an arm");
		goto refused;
	}
	for (size_t i = 0; i < f.n; i++) {
		const struct prof_key *k = &f.keys[i];
		json_t *v;                /* owned */
		int kr;

		if (key_refusal(k, why, sizeof why)) {
			prof_fail(&pe, &k->loc, MPE_EXPERIMENT_PROFILE_UNSUPPORTED, "%s", why);
			goto refused;
		}
		snprintf(where, sizeof where, "profile:%u:%u: ", k->loc.line, k->loc.col);
		if (!(v = json_string(k->vals[0]))) {
			mp_nomem(e);
			goto out;
		}
		kr = exp_arm_knob(app, arm, where, k->key, v, e);
		json_decref(v);
		if (kr < 0)
			goto out;
	}
	rc = 0;
	goto out;
refused:
	*e = pe.e;
out:
	prof_file_free(&f);
	return rc;
}
