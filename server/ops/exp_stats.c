/* An experiment's comparisons, computed from its raw samples (so GET /v1/experiments/{id} computes
 * them again from the store, and they are what the job recorded): per metric, each arm against the
 * first (common/stats.h), and each arm's summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "server/ops/exp.h"

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A counter that did not move is left out of a run's metrics (ops/conditions.h): it was 0. */
static bool is_counter(const char *metric)
{
	return !strncmp(metric, "vmstat.", 7) || !strncmp(metric, "numastat.", 9);
}

/* Does metric have word (between '_' and '.' or its ends)? "s_loop_mean" has "s". */
static bool has_word(const char *metric, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = metric; (p = strstr(p, word)); p++)
		if ((p == metric || p[-1] == '_' || p[-1] == '.') && (!p[n] || p[n] == '_' || p[n] == '.'))
			return true;
	return false;
}

int exp_metric_direction(const char *metric, bool *primary)
{
	*primary = false;
	if (is_counter(metric))
		return 0;
	/* What a setting is chosen for: rates (higher) and times (lower: a unit of time as a word). */
	*primary = true;
	if (strstr(metric, "per_s") || strstr(metric, "mib_s") || strstr(metric, "bandwidth"))
		return 1;
	if (has_word(metric, "s") || has_word(metric, "ms") || has_word(metric, "us") || has_word(metric, "ns") ||
	    strstr(metric, "latency"))
		return -1;
	/* What it may cost: faults and resident memory (lower is better, but no reason on its own). */
	*primary = false;
	if (strstr(metric, "fault") || strstr(metric, "rss_kb"))
		return -1;
	return 0;
}

/* The values of metric in arm's measured runs, in run order; n set. Owned by the caller. */
static double *values(const json_t *runs, const json_t *data, const char *metric, size_t *n)
{
	const json_t *mv = json_object_get(data, metric), *r;
	double *v = calloc(json_array_size(runs) + 1, sizeof *v);
	size_t i;

	*n = 0;
	if (!v)
		return NULL;
	json_array_foreach(runs, i, r) {
		const json_t *x = json_object_get(mv, json_string_value(r));
		if (x)
			v[(*n)++] = json_number_value(x);
		else if (is_counter(metric))
			v[(*n)++] = 0;
	}
	return v;
}

static json_t *summary_json(const struct stats_summary *s)
{
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}", "n", (json_int_t)s->n, "median", num(s->median), "mean",
			 num(s->mean), "sd", num(s->sd), "min", num(s->min), "max", num(s->max));
}

static json_t *cmp_json(const char *metric, const char *base, const char *arm, const struct stats_cmp *c)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:s, s:b, s:b, s:o, s:o, s:b, s:[I, I]}", "metric", metric,
			 "baseline", base, "arm", arm, "median_diff_pct", num(c->median_diff_pct), "ci95_pct",
			 c->ci_ok ? json_pack("[o, o]", num(c->ci95_pct[0]), num(c->ci95_pct[1])) : json_null(),
			 "p_value", num(c->p_value), "verdict", c->verdict, "different", c->different, "unreliable",
			 c->unreliable, "mean_diff_pct", num(c->mean_diff_pct), "welch_ci95_pct",
			 c->welch_ok ? json_pack("[o, o]", num(c->welch_ci95_pct[0]), num(c->welch_ci95_pct[1]))
			 : json_null(), "p_exact", c->p_exact, "n", (json_int_t)c->base.n, (json_int_t)c->arm.n);
}

static bool all_zero(const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] != 0)
			return false;
	return true;
}

json_t *exp_compare(const json_t *samples, const json_t *arm_names, uint64_t seed)
{
	json_t *runs = json_object(), *data = json_object(), *metrics = json_array(), *cmps = json_array(),
	       *summary = json_object(), *s, *out = NULL;   /* owned */
	const json_t *name;
	size_t i, j;

	if (!runs || !data || !metrics || !cmps || !summary)
		goto done;
	/* runs: arm -> its measured rounds ["1", "2", ...]; data: arm -> metric -> round -> value */
	json_array_foreach(arm_names, i, name) {
		json_object_set_new(runs, json_string_value(name), json_array());
		json_object_set_new(data, json_string_value(name), json_object());
	}
	json_array_foreach(samples, i, s) {
		const char *arm = json_string_value(json_object_get(s, "arm")),
			   *metric = json_string_value(json_object_get(s, "metric"));
		json_t *ar = json_object_get(runs, arm), *ad = json_object_get(data, arm), *md;
		char round[24];

		if (!ar || json_is_true(json_object_get(s, "warmup")))
			continue;
		snprintf(round, sizeof round, "%lld", (long long)json_integer_value(json_object_get(s, "round")));
		if (!json_array_size(ar) || strcmp(json_string_value(json_array_get(ar, json_array_size(ar) - 1)), round))
			json_array_append_new(ar, json_string(round));
		if (!(md = json_object_get(ad, metric))) {
			json_object_set_new(ad, metric, md = json_object());
			bool seen = false;
			json_array_foreach(metrics, j, name)
				seen |= !strcmp(json_string_value(name), metric);
			if (!seen)
				json_array_append_new(metrics, json_string(metric));
		}
		json_object_set(md, round, json_object_get(s, "value"));
	}
	json_array_foreach(arm_names, i, name) {
		const char *arm = json_string_value(name);
		json_t *as = json_object();
		const json_t *m;
		json_array_foreach(metrics, j, m) {
			struct stats_summary sm;
			size_t n;
			double *v = values(json_object_get(runs, arm), json_object_get(data, arm), json_string_value(m), &n);
			if (v && n && stats_summary(v, n, &sm) == 0)
				json_object_set_new(as, json_string_value(m), summary_json(&sm));
			free(v);
		}
		json_object_set_new(summary, arm, as);
	}
	const char *base = json_string_value(json_array_get(arm_names, 0));
	const json_t *m;
	json_array_foreach(metrics, j, m) {
		const char *metric = json_string_value(m);
		size_t nb;
		double *bv = values(json_object_get(runs, base), json_object_get(data, base), metric, &nb);

		for (i = 1; bv && nb && i < json_array_size(arm_names); i++) {
			const char *arm = json_string_value(json_array_get(arm_names, i));
			struct stats_cmp c;
			size_t na;
			double *av = values(json_object_get(runs, arm), json_object_get(data, arm), metric, &na);

			/* A counter that stayed 0 in both says nothing. */
			if (av && na && !(all_zero(bv, nb) && all_zero(av, na)) &&
			    stats_compare(bv, nb, av, na, seed, &c) == 0)
				json_array_append_new(cmps, cmp_json(metric, base, arm, &c));
			free(av);
		}
		free(bv);
	}
	out = json_pack("{s:O, s:O}", "comparisons", cmps, "summary", summary);
done:
	json_decref(runs);
	json_decref(data);
	json_decref(metrics);
	json_decref(cmps);
	json_decref(summary);
	return out;
}
