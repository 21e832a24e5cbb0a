/* Which figures a run contributes: a probe's passes (its kind's summary, or every number of the
 * pass's result), a resize's pages asked and got and its per-page latency quartiles (from its
 * batches), any other operation's top-level numbers; then, for every kind, the counter deltas of
 * its conditions. Rows come in the order the runs first name them. */
#include "server/ops/compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/mmstats.h"
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

static int resize_metrics(const struct app *app, json_t *m, int64_t op_id, const json_t *result, mp_err *e)
{
	const json_t *t;
	long long asked = 0, got = 0;
	struct mmstats st;
	size_t i;

	json_array_foreach(json_object_get(result, "targets"), i, t) {
		asked += json_integer_value(json_object_get(t, "asked"));
		got += json_integer_value(json_object_get(t, "got"));
	}
	put(m, "", "pages_asked", json_integer(asked));
	put(m, "", "succeeded", json_integer(got));
	put(m, "", "failed", json_integer(asked > got ? asked - got : 0));
	if (stats_op_latency(app->store, op_id, &st, e) < 0)
		return -1;
	if (st.count) {
		put(m, "", "latency_ns.min", json_real(st.min));
		put(m, "", "latency_ns.q1", json_real(st.q1));
		put(m, "", "latency_ns.q2", json_real(st.q2));
		put(m, "", "latency_ns.q3", json_real(st.q3));
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

/* The run's header and its metrics (name -> number, in order). */
static int run_of(const struct app *app, int64_t id, json_t **head, json_t **metrics, mp_err *e)
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
	s0 = json_integer_value(json_object_get(op, "started_ns"));
	s1 = json_integer_value(json_object_get(op, "finished_ns"));
	if (s1 > s0)
		put(m, "", "duration_ms", json_real((double)(s1 - s0) / 1e6));
	if (kind && !strncmp(kind, "probe.", 6))
		probe_metrics(m, kind, res);
	else if (kind && !strcmp(kind, "hugepages.resize")) {
		if (resize_metrics(app, m, id, res, e) < 0) {
			json_decref(m);
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

json_t *history_compare(const struct app *app, const int64_t *ids, int n, mp_err *e)
{
	json_t *runs = json_array(), *metrics[COMPARE_MAX_RUNS] = { 0 }, *order = json_array(), *seen = json_object();
	json_t *rows = json_array(), *out = NULL;
	const char *k;
	json_t *v;
	size_t r;

	for (int i = 0; i < n; i++) {
		json_t *head;
		if (run_of(app, ids[i], &head, &metrics[i], e) < 0)
			goto done;
		json_array_append_new(runs, head);
		json_object_foreach(metrics[i], k, v)
			if (!json_object_get(seen, k)) {
				json_object_set_new(seen, k, json_true());
				json_array_append_new(order, json_string(k));
			}
	}
	json_array_foreach(order, r, v) {
		const char *name = json_string_value(v);
		json_t *vals = json_array(), *pct = json_array();
		json_t *first = json_object_get(metrics[0], name);
		double f = first ? json_number_value(first) : NAN;

		for (int i = 0; i < n; i++) {
			json_t *x = json_object_get(metrics[i], name);
			json_array_append(vals, x ? x : json_null());
			if (i == 0 || !x || !first || f == 0)
				json_array_append_new(pct, json_null());
			else
				json_array_append_new(pct, json_real(round((json_number_value(x) - f) / fabs(f) * 10000) / 100));
		}
		json_array_append_new(rows, json_pack("{s:s, s:o, s:o}", "metric", name, "values", vals, "change_pct", pct));
	}
	out = json_pack("{s:O, s:O}", "runs", runs, "rows", rows);
done:
	for (int i = 0; i < n; i++)
		json_decref(metrics[i]);
	json_decref(runs);
	json_decref(order);
	json_decref(seen);
	json_decref(rows);
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
