/* Which figures a run contributes: a probe's passes (its kind's summary, or every number of the
 * pass's result), a resize's pages asked and got and its per-page latency quartiles (from its
 * batches), any other operation's top-level numbers; then, for every kind, the counter deltas of
 * its conditions. Rows come in the order the runs first name them. */
#include "server/ops/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mmstats.h"
#include "common/parse.h"
#include "common/stats.h"
#include "common/stats_json.h"
#include "server/app.h"
#include "server/probes/probe.h"
#include "server/store/history.h"
#include "server/store/stats.h"

static void put(json_t *m, const char *prefix, const char *name, json_t *num)
{
	char key[160];

	snprintf(key, sizeof key, "%s%s", prefix, name);
	json_object_set_new(m, key, num);
}

/* Numbers at the top level, and numbers one object down as "key.sub" (pages_per_node.1). */
static void flatten(json_t *m, const char *prefix, const json_t *obj)
{
	const char *k, *k2;
	json_t *v, *v2;

	json_object_foreach((json_t *)obj, k, v) {
		if (json_is_number(v))
			put(m, prefix, k, json_deep_copy(v));
		else if (json_is_object(v)) {
			char p2[128];
			snprintf(p2, sizeof p2, "%s%s.", prefix, k);
			json_object_foreach(v, k2, v2)
				if (json_is_number(v2))
					put(m, p2, k2, json_deep_copy(v2));
		}
	}
}

static void probe_metrics(json_t *m, const char *kind, const json_t *result)
{
	const struct probe_kind *pk = probe_find(kind + strlen("probe."));
	const json_t *passes = json_object_get(result, "passes"), *p;
	size_t i;

	json_array_foreach(passes, i, p) {
		const char *label = json_string_value(json_object_get(p, "label"));
		const json_t *r = json_object_get(p, "result");
		char prefix[64] = "";
		json_t *sum;

		if (!json_is_object(r))
			continue;
		if (label)
			snprintf(prefix, sizeof prefix, "%s.", label);
		if (pk && pk->summary && (sum = pk->summary(r))) {
			flatten(m, prefix, sum);
			json_decref(sum);
		} else {
			flatten(m, prefix, r);
		}
	}
}

/* cis: metric -> [lo, hi], the 95 % interval of a run's own figure where it has one (the 95th
 * percentile of its batches' per-page latency, from 72 batches on). */
static int resize_metrics(const struct app *app, json_t *m, json_t *cis, int64_t op_id, const json_t *result,
			  mp_err *e)
{
	const json_t *t;
	long long asked = 0, got = 0;
	struct mmstats st;
	double p95_ci[2];
	size_t i;

	json_array_foreach(json_object_get(result, "targets"), i, t) {
		asked += json_integer_value(json_object_get(t, "asked"));
		got += json_integer_value(json_object_get(t, "got"));
	}
	put(m, "", "pages_asked", json_integer(asked));
	put(m, "", "succeeded", json_integer(got));
	put(m, "", "failed", json_integer(asked > got ? asked - got : 0));
	if (stats_op_latency(app->store, op_id, &st, p95_ci, e) < 0)
		return -1;
	if (st.count) {
		put(m, "", "latency_ns.min", json_real(st.min));
		put(m, "", "latency_ns.q1", json_real(st.q1));
		put(m, "", "latency_ns.q2", json_real(st.q2));
		put(m, "", "latency_ns.q3", json_real(st.q3));
		put(m, "", "latency_ns.p95", json_real(st.p95));
		if (isfinite(p95_ci[0]))
			json_object_set_new(cis, "latency_ns.p95", json_pack("[f, f]", p95_ci[0], p95_ci[1]));
		put(m, "", "latency_ns.max", json_real(st.max));
		put(m, "", "latency_ns.amean", json_real(st.amean));
	}
	return 0;
}

static void condition_metrics(json_t *m, const json_t *cond)
{
	const char *node;
	json_t *d;

	flatten(m, "vmstat.", json_object_get(cond, "vmstat_delta"));
	json_object_foreach(json_object_get(cond, "numastat_delta"), node, d) {
		char prefix[48];
		snprintf(prefix, sizeof prefix, "numastat.%s.", node);
		flatten(m, prefix, d);
	}
}

/* The run's header, its metrics (name -> number, in order) and the intervals of those that have
 * one (name -> [lo, hi]). */
static int run_of(const struct app *app, int64_t id, json_t **head, json_t **metrics, json_t **cis, mp_err *e)
{
	json_t *op = history_get(app->store, id, e), *m, *res, *cond;
	const char *kind;
	json_int_t s0, s1;

	if (!op)
		return -1;
	kind = json_string_value(json_object_get(op, "kind"));
	res = json_object_get(op, "result");
	cond = json_object_get(res, "conditions");
	m = json_object();
	*cis = json_object();
	s0 = json_integer_value(json_object_get(op, "started_ns"));
	s1 = json_integer_value(json_object_get(op, "finished_ns"));
	if (s1 > s0)
		put(m, "", "duration_ms", json_real((double)(s1 - s0) / 1e6));
	if (kind && !strncmp(kind, "probe.", 6))
		probe_metrics(m, kind, res);
	else if (kind && !strcmp(kind, "hugepages.resize")) {
		if (resize_metrics(app, m, *cis, id, res, e) < 0) {
			json_decref(m);
			json_decref(*cis);
			*cis = NULL;
			json_decref(op);
			return -1;
		}
	} else if (json_is_object(res))
		flatten(m, "", res);
	condition_metrics(m, cond);
	*head = json_pack("{s:I, s:O, s:O, s:O, s:O, s:O}", "id", (json_int_t)id, "kind", json_object_get(op, "kind"),
			  "status", json_object_get(op, "status"), "started_ns", json_object_get(op, "started_ns"),
			  "kernel_release", json_object_get(cond, "kernel_release") ? json_object_get(cond, "kernel_release")
			  : json_object_get(op, "kernel_release") ? json_object_get(op, "kernel_release") : json_null(),
			  "settings", json_object_get(cond, "settings") ? json_object_get(cond, "settings") : json_null());
	*metrics = m;
	json_decref(op);
	return 0;
}

int compare_parse_ids(const char *s, struct compare_cols *out, mp_err *e)
{
	const char *p = s;

	out->nids = 0;
	out->ncols = 1;
	for (;;) {
		char num[24];
		size_t len = strcspn(p, ",:");
		uint64_t id;

		if (out->nids == COMPARE_MAX_IDS || len == 0 || len >= sizeof num)
			goto bad;
		memcpy(num, p, len);
		num[len] = '\0';
		if (parse_u64(num, &id) < 0 || id == 0 || id > INT64_MAX)
			goto bad;
		for (int i = 0; i < out->nids; i++)
			if (out->ids[i] == (int64_t)id)
				return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "ids: operation %llu is named twice",
					       (unsigned long long)id);
		out->ids[out->nids] = (int64_t)id;
		out->col[out->nids++] = out->ncols - 1;
		if (!p[len])
			break;
		if (p[len] == ',' && ++out->ncols > COMPARE_MAX_RUNS)
			goto bad;
		p += len + 1;
	}
	if (out->ncols >= 2)
		return 0;
bad:
	return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0,
		       "ids: 2 to %d columns of operation ids like 12,15 (or 12:13:14,15:16:17, several runs a column), "
		       "at most %d ids", COMPARE_MAX_RUNS, COMPARE_MAX_IDS);
}

/* One run per column: its figure as recorded, the change against the first in %, and where a run
 * has one the 95 % interval of its own figure ("value_ci95", per column). */
static json_t *row_single(const char *name, json_t *const *metrics, json_t *const *cis, int n)
{
	json_t *vals = json_array(), *pct = json_array(), *ci = json_array(), *row;
	json_t *first = json_object_get(metrics[0], name);
	double f = first ? json_number_value(first) : NAN;
	bool any = false;

	for (int i = 0; i < n; i++) {
		json_t *x = json_object_get(metrics[i], name), *c = json_object_get(cis[i], name);
		json_array_append(vals, x ? x : json_null());
		if (i == 0 || !x || !first || f == 0)
			json_array_append_new(pct, json_null());
		else
			json_array_append_new(pct, json_real(round((json_number_value(x) - f) / fabs(f) * 10000) / 100));
		json_array_append(ci, c ? c : json_null());
		any |= c != NULL;
	}
	row = json_pack("{s:s, s:o, s:o}", "metric", name, "values", vals, "change_pct", pct);
	if (row && any)
		json_object_set(row, "value_ci95", ci);
	json_decref(ci);
	return row;
}

static json_t *rounded(double v)
{
	return stats_json_num(round(v * 100) / 100);
}

/* Several runs in a column: the column's samples of this metric (the runs that have it). */
static size_t samples_of(const struct compare_cols *cc, json_t *const *metrics, int col, const char *name, double *x)
{
	size_t n = 0;

	for (int i = 0; i < cc->nids; i++) {
		json_t *v = cc->col[i] == col ? json_object_get(metrics[i], name) : NULL;
		if (v && isfinite(json_number_value(v)))
			x[n++] = json_number_value(v);
	}
	return n;
}

/* A row of medians with each column's comparison against the first (appended to cmps). */
static int row_samples(const struct compare_cols *cc, json_t *const *metrics, const char *name, json_t *labels,
		       json_t *rows, json_t *cmps)
{
	double *base = malloc(sizeof(double) * (size_t)cc->nids), *arm = malloc(sizeof(double) * (size_t)cc->nids);
	json_t *vals = json_array(), *pct = json_array(), *ns = json_array(), *ci = json_array(), *pv = json_array();
	json_t *diff = json_array(), *means = json_array();
	size_t nb;
	int rc = -1;

	if (!base || !arm || !vals || !pct || !ns || !ci || !pv || !diff || !means)
		goto done;
	nb = samples_of(cc, metrics, 0, name, base);
	for (int k = 0; k < cc->ncols; k++) {
		size_t na = k ? samples_of(cc, metrics, k, name, arm) : nb;
		struct stats_summary s;
		struct stats_cmp c;

		json_array_append_new(ns, json_integer((json_int_t)na));
		if (na == 0 || stats_summary(k ? arm : base, na, &s) < 0) {
			json_array_append_new(vals, json_null());
			json_array_append_new(means, json_null());
			s.n = 0;
		} else {
			json_array_append_new(vals, json_real(s.median));
			json_array_append_new(means, json_real(s.mean));
		}
		if (k == 0 || nb == 0 || s.n == 0) {
			json_array_append_new(pct, json_null());
			json_array_append_new(ci, json_null());
			json_array_append_new(pv, json_null());
			json_array_append_new(diff, json_null());
			continue;
		}
		if (stats_compare(base, nb, arm, na, 0, &c) < 0)   /* the samples are finite: only ENOMEM */
			goto done;
		json_array_append_new(pct, rounded(c.median_diff_pct));
		json_array_append_new(ci, c.ci_ok && isfinite(c.ci95_pct[0])
				      ? json_pack("[o, o]", rounded(c.ci95_pct[0]), rounded(c.ci95_pct[1])) : json_null());
		json_array_append_new(pv, json_real(c.p_value));
		json_array_append_new(diff, json_boolean(c.different));
		json_array_append_new(cmps, stats_cmp_json(name, json_string_value(json_array_get(labels, 0)),
							    json_string_value(json_array_get(labels, (size_t)k)), &c));
	}
	json_array_append_new(rows, json_pack("{s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "metric", name, "values", vals,
					      "change_pct", pct, "n", ns, "means", means, "ci95_pct", ci, "p_value", pv,
					      "different", diff));
	rc = 0;
done:
	free(base);
	free(arm);
	json_decref(vals);
	json_decref(pct);
	json_decref(ns);
	json_decref(ci);
	json_decref(pv);
	json_decref(diff);
	json_decref(means);
	return rc;
}

/* "columns": each column's label (its ids joined by ':') and ids. */
static json_t *columns_of(const struct compare_cols *cc, json_t *labels)
{
	json_t *cols = json_array();

	for (int k = 0; k < cc->ncols; k++) {
		char label[COMPARE_MAX_IDS * 21] = "";
		size_t off = 0;
		json_t *ids = json_array();
		for (int i = 0; i < cc->nids; i++)
			if (cc->col[i] == k) {
				off += (size_t)snprintf(label + off, sizeof label - off, "%s%lld", off ? ":" : "",
							(long long)cc->ids[i]);
				json_array_append_new(ids, json_integer(cc->ids[i]));
			}
		json_array_append_new(labels, json_string(label));
		json_array_append_new(cols, json_pack("{s:s, s:o}", "label", label, "ids", ids));
	}
	return cols;
}

json_t *history_compare(const struct app *app, const struct compare_cols *cc, mp_err *e)
{
	json_t *runs = json_array(), *metrics[COMPARE_MAX_IDS] = { 0 }, *cis[COMPARE_MAX_IDS] = { 0 };
	json_t *order = json_array(), *seen = json_object();
	json_t *rows = json_array(), *cmps = json_array(), *labels = json_array(), *cols = NULL, *out = NULL;
	bool grouped = cc->nids > cc->ncols;
	const char *k;
	json_t *v;
	size_t r;

	for (int i = 0; i < cc->nids; i++) {
		json_t *head;
		if (run_of(app, cc->ids[i], &head, &metrics[i], &cis[i], e) < 0)
			goto done;
		json_array_append_new(runs, head);
		json_object_foreach(metrics[i], k, v)
			if (!json_object_get(seen, k)) {
				json_object_set_new(seen, k, json_true());
				json_array_append_new(order, json_string(k));
			}
	}
	if (grouped)
		cols = columns_of(cc, labels);
	json_array_foreach(order, r, v) {
		const char *name = json_string_value(v);
		if (!grouped)
			json_array_append_new(rows, row_single(name, metrics, cis, cc->nids));
		else if (row_samples(cc, metrics, name, labels, rows, cmps) < 0) {
			mp_nomem(e);
			goto done;
		}
	}
	out = grouped ? json_pack("{s:O, s:O, s:O, s:O}", "runs", runs, "columns", cols, "rows", rows, "comparisons", cmps)
		: json_pack("{s:O, s:O}", "runs", runs, "rows", rows);
done:
	for (int i = 0; i < cc->nids; i++) {
		json_decref(metrics[i]);
		json_decref(cis[i]);
	}
	json_decref(runs);
	json_decref(order);
	json_decref(seen);
	json_decref(rows);
	json_decref(cmps);
	json_decref(labels);
	json_decref(cols);
	return out;
}

/* For experiments (ops/exp_round.c): the same figures from one run's result and conditions. */
void compare_flatten(json_t *m, const char *prefix, const json_t *obj)
{
	flatten(m, prefix, obj);
}

void compare_condition_metrics(json_t *m, const json_t *cond)
{
	condition_metrics(m, cond);
}
