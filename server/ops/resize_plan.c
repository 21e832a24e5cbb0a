#include "server/ops/resize_plan.h"

#include <string.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/kernel/hugetlb.h"

#define MAX_BATCH       1000000
#define MAX_DEADLINE_MS (7LL * 86400 * 1000)

static int get_count(const json_t *v, const char *what, uint64_t max, uint64_t *out, mp_err *e)
{
	json_int_t n;

	if (!json_is_integer(v))
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "%s must be an integer", what);
	n = json_integer_value(v);
	if (n < 0 || (uint64_t)n > max)
		return mp_fail(e, MPE_RESIZE_BAD_COUNT, 0, "%s must be from 0 to %llu (the memory there), not %lld",
			       what, (unsigned long long)max, (long long)n);
	*out = (uint64_t)n;
	return 0;
}

int plan_options(const json_t *target, struct resize_args *a, bool *dry_run, mp_err *e)
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
			return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "unknown field '%.64s' (known: size, total, nodes, "
				       "batch, deadline_ms, compact, dry_run)", key);
	}
	a->batch = a->size_kb >= 1048576 ? 1 : 10;
	if ((v = json_object_get(target, "batch"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_BATCH)
			return mp_fail(e, MPE_RESIZE_BAD_BATCH, 0, "batch must be an integer from 1 to %d", MAX_BATCH);
		a->batch = (uint64_t)json_integer_value(v);
	}
	if ((v = json_object_get(target, "deadline_ms"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_DEADLINE_MS)
			return mp_fail(e, MPE_RESIZE_BAD_DEADLINE, 0, "deadline_ms must be an integer from 1 to %lld",
				       MAX_DEADLINE_MS);
		a->deadline_ms = json_integer_value(v);
	}
	if ((v = json_object_get(target, "compact"))) {
		if (!json_is_boolean(v))
			return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "compact must be true or false");
		a->compact = json_is_true(v);
	}
	if ((v = json_object_get(target, "dry_run"))) {
		if (!json_is_boolean(v))
			return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "dry_run must be true or false");
		*dry_run = json_is_true(v);
	}
	return 0;
}

int plan_targets(const json_t *target, struct resize_args *a, const struct topology *t, mp_err *e)
{
	const json_t *total = json_object_get(target, "total"), *nodes = json_object_get(target, "nodes");
	uint64_t mem_kb = 0;
	const char *key;
	json_t *v;

	if (!!total == !!nodes)
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "give exactly one of \"total\" (pages) or \"nodes\" "
			       "({\"<node>\": pages})");
	for (int i = 0; i < t->n_nodes; i++)
		mem_kb += t->nodes[i].mem_total_kb;
	if (total) {
		a->n = 1;
		a->t[0].node = -1;
		return get_count(total, "total", mem_kb / a->size_kb, &a->t[0].goal, e);
	}
	if (!json_is_object(nodes) || json_object_size(nodes) == 0)
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "nodes must be a non-empty object {\"<node>\": pages}");
	/* Ascending node order, whatever the order of the keys: the batches then read the same way
	 * in every run. */
	for (int i = 0; i < t->n_nodes; i++) {
		char id[16], what[32];
		snprintf(id, sizeof id, "%u", t->nodes[i].id);
		if (!(v = json_object_get(nodes, id)))
			continue;
		if (!htlb_node_exists(a->app->sysfs_root, a->size_kb, t->nodes[i].id))
			return mp_fail(e, MPE_RESIZE_BAD_NODE, 0, "node %u has no memory, so no huge page pool",
				       t->nodes[i].id);
		snprintf(what, sizeof what, "nodes.%u", t->nodes[i].id);
		a->t[a->n].node = (int)t->nodes[i].id;
		if (get_count(v, what, t->nodes[i].mem_total_kb / a->size_kb, &a->t[a->n].goal, e) < 0)
			return -1;
		a->n++;
	}
	/* Keys are looked up above by their canonical spelling, so "00" or "0\n" would name node 0
	 * yet never be planned: refused here rather than silently dropped. */
	json_object_foreach((json_t *)nodes, key, v) {
		uint64_t id;
		char canon[24];
		if (parse_u64(key, &id) < 0 || id >= IDSET_MAX || topo_index(t, (unsigned)id) < 0)
			return mp_fail(e, MPE_RESIZE_BAD_NODE, 0, "'%.32s' is not an online node", key);
		snprintf(canon, sizeof canon, "%llu", (unsigned long long)id);
		if (strcmp(canon, key))
			return mp_fail(e, MPE_RESIZE_BAD_NODE, 0, "'%.32s' is not how node %s is written (decimal, no "
				       "leading zeros)", key, canon);
	}
	return 0;
}

/* The normalised request, as stored with the job and in history. */
json_t *plan_request_json(const struct resize_args *a)
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

json_t *plan_targets_json(const struct resize_args *a, bool done)
{
	json_t *arr = json_array();

	for (int i = 0; i < a->n; i++) {
		const struct resize_target *t = &a->t[i];
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
