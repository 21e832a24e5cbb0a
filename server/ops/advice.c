/* GET /v1/advice: what this host's own experiments say. For every experiment that ended ok on
 * this kernel release and topology, each comparison with a known better direction (times, faults:
 * lower; rates: higher; counters: neither) that is a difference at 95 % and at least the floor
 * makes its winning arm's settings better than the losing arm's. Advice is per pair of settings
 * (this over that), with its evidence, what it cost (the same experiments' comparisons where the
 * winner was worse at 95 %, whatever the size), and the profile fragment that would apply it. A
 * pair with evidence both ways (better on one workload or metric, worse on another) is a
 * contradiction and is shown as one, never resolved by picking. Nothing is applied. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/jobs/jobs.h"
#include "server/ops/exp.h"

#define ADVICE_MAX_EXPERIMENTS 200   /* the newest ones are read */

/* An arm's settings as one text: its knobs in full (sorted), its policy and CPUs. Owned. */
static char *settings_text(const json_t *arm, const json_t *knobs)
{
	char *k = json_dumps(knobs ? knobs : json_object_get(arm, "knobs"), JSON_SORT_KEYS | JSON_COMPACT),
	     *p = json_object_get(arm, "policy") ? json_dumps(json_object_get(arm, "policy"), JSON_SORT_KEYS | JSON_COMPACT)
						 : NULL,
	     *out = NULL;
	const char *cpus = json_string_value(json_object_get(arm, "cpus")),
		   *cpunodes = json_string_value(json_object_get(arm, "cpunodes"));

	if (asprintf(&out, "knobs %s%s%s%s%s%s%s", k ? k : "{}", p ? " policy " : "", p ? p : "", cpus ? " cpus " : "",
		     cpus ? cpus : "", cpunodes ? " cpunodes " : "", cpunodes ? cpunodes : "") < 0)
		out = NULL;
	free(k);
	free(p);
	return out;
}

static const json_t *arm_named(const json_t *request, const char *name)
{
	const json_t *arm;
	size_t i;

	json_array_foreach(json_object_get(request, "arms"), i, arm)
		if (!strcmp(json_string_value(json_object_get(arm, "name")) ?: "", name))
			return arm;
	return NULL;
}

/* "[knobs]\nthp.enabled = always\n": the fragment of a profile that sets knobs; NULL when the arm
 * is a policy or CPU binding (the workload's own, not the host's: `mempolicyctl run` sets it). */
static json_t *fragment(const json_t *arm, const json_t *knobs)
{
	const char *k;
	json_t *v;
	char buf[2048];
	size_t off;

	if (json_object_get(arm, "policy") || json_object_get(arm, "cpus") || json_object_get(arm, "cpunodes") ||
	    !json_object_size(knobs))
		return json_null();
	off = (size_t)snprintf(buf, sizeof buf, "[knobs]\n");
	json_object_foreach((json_t *)knobs, k, v)
		if (off < sizeof buf)
			off += (size_t)snprintf(buf + off, sizeof buf - off, "%s = %s\n", k, json_string_value(v));
	return json_string(buf);
}

static json_t *evidence(const json_t *job, const json_t *c)
{
	const json_t *req = json_object_get(job, "request");
	return json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O?, s:O, s:O}", "experiment", json_object_get(job, "id"),
			 "workload", json_object_get(req, "workload"), "rounds", json_object_get(req, "rounds"), "metric",
			 json_object_get(c, "metric"), "baseline", json_object_get(c, "baseline"), "arm",
			 json_object_get(c, "arm"), "ci95_pct", json_object_get(c, "ci95_pct"), "median_diff_pct",
			 json_object_get(c, "median_diff_pct"), "p_value", json_object_get(c, "p_value"));
}

static char *pair_key(const char *win, const char *lose)
{
	char *key = NULL;
	return asprintf(&key, "%s\n%s", win, lose) < 0 ? NULL : key;
}

/* The entry of pairs for winner over loser, made on first use. */
static json_t *entry(json_t *pairs, const char *win, const char *lose, const json_t *warm, const json_t *wknobs)
{
	char *key = pair_key(win, lose);
	json_t *e;

	if (!key)
		return NULL;
	if (!(e = json_object_get(pairs, key))) {
		e = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "setting", win, "instead_of", lose, "better", json_array(),
			      "costs", json_array(), "profile_fragment", fragment(warm, wknobs), "experiments",
			      json_array());
		json_object_set_new(pairs, key, e);
	}
	free(key);
	return e;
}

static void add_experiment(json_t *e, const json_t *id)
{
	const json_t *x;
	size_t i;

	json_array_foreach(json_object_get(e, "experiments"), i, x)
		if (json_equal(x, id))
			return;
	json_array_append(json_object_get(e, "experiments"), (json_t *)id);
}

/* One experiment's comparisons into pairs. */
static void consider(json_t *pairs, const json_t *job, double floor_pct)
{
	const json_t *req = json_object_get(job, "request"), *res = json_object_get(job, "result"), *c;
	const json_t *settings = json_object_get(res, "arm_settings");
	size_t i;

	json_array_foreach(json_object_get(res, "comparisons"), i, c) {
		const char *metric = json_string_value(json_object_get(c, "metric")),
			   *base = json_string_value(json_object_get(c, "baseline")),
			   *arm = json_string_value(json_object_get(c, "arm"));
		const json_t *ab = arm_named(req, base ?: ""), *aa = arm_named(req, arm ?: "");
		double d = json_number_value(json_object_get(c, "median_diff_pct"));
		bool primary, arm_wins;
		int dir = metric ? exp_metric_direction(metric, &primary) : 0;
		char *sb, *sa, *key;
		json_t *e;

		if (!dir || !ab || !aa || !json_is_true(json_object_get(c, "different")) ||
		    !json_is_number(json_object_get(c, "median_diff_pct")))
			continue;
		arm_wins = dir * d > 0;
		sb = settings_text(ab, json_object_get(settings, base));
		sa = settings_text(aa, json_object_get(settings, arm));
		if (sb && sa) {
			const char *w = arm_wins ? sa : sb, *l = arm_wins ? sb : sa;
			/* Beyond the floor on a time or a rate it is evidence for the winner; any proven
			 * difference is a cost of the loser, should the loser be advised. */
			if (primary && fabs(d) >= floor_pct &&
			    (e = entry(pairs, w, l, arm_wins ? aa : ab, json_object_get(settings, arm_wins ? arm : base)))) {
				json_array_append_new(json_object_get(e, "better"), evidence(job, c));
				add_experiment(e, json_object_get(job, "id"));
			}
			if ((key = pair_key(l, w))) {
				if (!(e = json_object_get(pairs, key)))
					e = entry(pairs, l, w, arm_wins ? ab : aa, json_object_get(settings, arm_wins ? base : arm));
				if (e)
					json_array_append_new(json_object_get(e, "costs"), evidence(job, c));
				free(key);
			}
		}
		free(sb);
		free(sa);
	}
}

/* Does some evidence of a come from a workload that none of b's does? */
static bool other_workload(const json_t *a, const json_t *b)
{
	const json_t *x, *y;
	size_t i, j;

	json_array_foreach(a, i, x) {
		bool shared = false;
		json_array_foreach(b, j, y)
			shared |= json_equal(json_object_get(x, "workload"), json_object_get(y, "workload"));
		if (!shared)
			return true;
	}
	return false;
}

json_t *advice_get(const struct app *app, double floor_pct, mp_err *e)
{
	struct job_filter f = { .kind = EXP_JOB_KIND, .status = "ok", .limit = ADVICE_MAX_EXPERIMENTS };
	json_t *jobs = jobs_list(app->jobs, &f, e), *host = exp_host(app), *pairs = json_object(), *advice = json_array(),
	       *contra = json_array(), *out = NULL, *j, *p;
	const char *key;
	size_t i, considered = 0;

	if (!jobs || !host || !pairs || !advice || !contra) {
		if (jobs)
			mp_nomem(e);
		goto done;
	}
	json_array_foreach(jobs, i, j) {
		json_t *job = jobs_get(app->jobs, json_integer_value(json_object_get(j, "id")), e);
		if (!job)
			continue;
		if (json_equal(json_object_get(json_object_get(job, "result"), "host"), host)) {
			consider(pairs, job, floor_pct);
			considered++;
		}
		json_decref(job);
	}
	json_object_foreach(pairs, key, p) {
		const char *nl = strchr(key, '\n');
		char *rkey = NULL;
		json_t *rev;

		if (!json_array_size(json_object_get(p, "better")))
			continue;   /* a pair made only to hold costs */
		if (!nl || asprintf(&rkey, "%s\n%.*s", nl + 1, (int)(nl - key), key) < 0)
			continue;
		rev = json_object_get(pairs, rkey);
		free(rkey);
		/* Better one way on one workload and the other way on another: a contradiction, listed
		 * once (from the side that sorts first). Both ways on the same workload (a time better,
		 * another worse) is two pieces of advice, each with the other as its cost. */
		if (rev && json_array_size(json_object_get(rev, "better")) &&
		    (other_workload(json_object_get(p, "better"), json_object_get(rev, "better")) ||
		     other_workload(json_object_get(rev, "better"), json_object_get(p, "better")))) {
			if (strcmp(json_string_value(json_object_get(p, "setting")),
				   json_string_value(json_object_get(rev, "setting"))) < 0)
				json_array_append_new(contra, json_pack("{s:[O, O], s:O, s:O}", "settings",
									json_object_get(p, "setting"),
									json_object_get(rev, "setting"), "first_better",
									json_object_get(p, "better"), "second_better",
									json_object_get(rev, "better")));
			continue;
		}
		json_array_append(advice, p);
	}
	out = json_pack("{s:f, s:O, s:I, s:O, s:O, s:s}", "floor_pct", floor_pct, "host", host, "experiments_considered",
			(json_int_t)considered, "advice", advice, "contradictions", contra, "note",
			"nothing is applied: a profile with the fragment is applied through POST /v1/profile (dry run first)");
	if (!out)
		mp_nomem(e);
done:
	json_decref(jobs);
	json_decref(host);
	json_decref(pairs);
	json_decref(advice);
	json_decref(contra);
	return out;
}
