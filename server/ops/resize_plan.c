#include "server/ops/resize_plan.h"

#include <string.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/kernel/hugetlb.h"
#include "server/ops/pools.h"
#include "server/ops/resize.h"

/* A count from the request against what the memory could hold. */
static int check_count(json_int_t n, const char *what, uint64_t max, uint64_t *out, mp_err *e)
{
	if (n < 0 || (uint64_t)n > max)
		return mp_fail(e, MPE_RESIZE_BAD_COUNT, 0, "%s must be from 0 to %llu (the memory there), not %lld",
			       what, (unsigned long long)max, (long long)n);
	*out = (uint64_t)n;
	return 0;
}

/* ---- parse ----------------------------------------------------------------------------------- */

static int parse_total(const json_t *v, struct resize_req *r, mp_err *e)
{
	if (!json_is_integer(v))
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "total must be an integer");
	r->has_total = true;
	r->total = json_integer_value(v);
	return 0;
}

static int parse_nodes(const json_t *v, struct resize_req *r, mp_err *e)
{
	const char *key;
	json_t *n;

	if (!json_is_object(v) || json_object_size(v) == 0)
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "nodes must be a non-empty object {\"<node>\": pages}");
	json_object_foreach((json_t *)v, key, n) {
		uint64_t id;
		char canon[24];
		if (parse_u64(key, &id) < 0 || id >= IDSET_MAX || r->nnodes == TOPO_MAX_NODES)
			return mp_fail(e, MPE_RESIZE_BAD_NODE, 0, "'%.32s' is not an online node", key);
		/* Keys are matched to nodes by their canonical spelling, so "00" or "0\n" would name
		 * node 0 yet never be planned: refused here rather than silently dropped. */
		snprintf(canon, sizeof canon, "%llu", (unsigned long long)id);
		if (strcmp(canon, key))
			return mp_fail(e, MPE_RESIZE_BAD_NODE, 0, "'%.32s' is not how node %s is written (decimal, no "
				       "leading zeros)", key, canon);
		if (!json_is_integer(n))
			return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "nodes.%s must be an integer", canon);
		r->nodes[r->nnodes].node = (unsigned)id;
		r->nodes[r->nnodes].pages = json_integer_value(n);
		r->nnodes++;
	}
	return 0;
}

#define MAX_BATCH       1000000
#define MAX_DEADLINE_MS (7LL * 86400 * 1000)

static int parse_batch(const json_t *v, struct resize_req *r, mp_err *e)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_BATCH)
		return mp_fail(e, MPE_RESIZE_BAD_BATCH, 0, "batch must be an integer from 1 to %d", MAX_BATCH);
	r->batch = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_deadline(const json_t *v, struct resize_req *r, mp_err *e)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_DEADLINE_MS)
		return mp_fail(e, MPE_RESIZE_BAD_DEADLINE, 0, "deadline_ms must be an integer from 1 to %lld",
			       MAX_DEADLINE_MS);
	r->deadline_ms = json_integer_value(v);
	return 0;
}

static int parse_compact(const json_t *v, struct resize_req *r, mp_err *e)
{
	if (!json_is_boolean(v))
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "compact must be true or false");
	r->compact = json_is_true(v);
	return 0;
}

static int parse_dry_run(const json_t *v, struct resize_req *r, mp_err *e)
{
	if (!json_is_boolean(v))
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "dry_run must be true or false");
	r->dry_run = json_is_true(v);
	return 0;
}

#define AT_PUT   (1u << RESIZE_PUT)
#define AT_SCHED (1u << RESIZE_SCHEDULED)

/* Every member a resize takes, where it may appear, and its parser (NULL: handled before the
 * table, as "size" needs the kernel's list of sizes). The one table for PUT /v1/hugepages/{size}
 * and a schedule's action.hugepages: a new option is one line here. */
static const struct field {
	const char *name;
	unsigned at;
	int (*parse)(const json_t *v, struct resize_req *r, mp_err *e);
} fields[] = {
	{ "size",        AT_SCHED,          NULL },          /* PUT: the URL names it */
	{ "total",       AT_PUT | AT_SCHED, parse_total },
	{ "nodes",       AT_PUT | AT_SCHED, parse_nodes },
	{ "batch",       AT_PUT | AT_SCHED, parse_batch },
	{ "deadline_ms", AT_PUT | AT_SCHED, parse_deadline },
	{ "compact",     AT_PUT | AT_SCHED, parse_compact },
	{ "dry_run",     AT_PUT,            parse_dry_run }, /* about this request, not a stored action */
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static const struct field *field_named(const char *name, enum resize_edge edge)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].name, name))
			return fields[i].at & (1u << edge) ? &fields[i] : NULL;
	return NULL;
}

bool resize_field_ok(const char *name, enum resize_edge edge)
{
	return field_named(name, edge) != NULL;
}

int resize_parse(const struct app *app, const json_t *body, const char *size_text, enum resize_edge edge,
		 struct resize_req *r, mp_err *e)
{
	const json_t *size = json_object_get(body, "size");
	const char *key;
	json_t *v;

	memset(r, 0, sizeof *r);
	if (!json_is_object(body))
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "the resize must be a JSON object");
	if (edge == RESIZE_PUT) {
		if (pools_size(app, size_text, &r->size_kb, e) < 0)
			return -1;
		/* The URL names the size; a second, possibly different one in the body is refused
		 * rather than silently ignored. */
		if (size)
			return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0,
				       "unknown field 'size': the page size is the one in the URL");
	} else {
		if (!json_is_string(size))
			return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "size must be a string such as \"2M\" or \"1G\"");
		if (pools_size(app, json_string_value(size), &r->size_kb, e) < 0)
			return -1;
	}
	json_object_foreach((json_t *)body, key, v)
		if (!field_named(key, edge)) {
			char known[160] = "";
			for (size_t i = 0; i < NFIELDS; i++)
				if (fields[i].at & (1u << edge) && fields[i].parse)
					snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
						 known[0] ? ", " : "", fields[i].name);
			return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "unknown field '%.64s' (known: %s%s)", key,
				       edge == RESIZE_SCHEDULED ? "size, " : "", known);
		}
	if (!json_object_get(body, "total") == !json_object_get(body, "nodes"))
		return mp_fail(e, MPE_RESIZE_BAD_REQUEST, 0, "give exactly one of \"total\" (pages) or \"nodes\" "
			       "({\"<node>\": pages})");
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].parse && (v = json_object_get(body, fields[i].name)) && fields[i].parse(v, r, e) < 0)
			return -1;
	return 0;
}

/* ---- plan ------------------------------------------------------------------------------------ */

int plan_targets(const struct resize_req *r, struct resize_args *a, const struct topology *t, mp_err *e)
{
	uint64_t mem_kb = 0;

	for (int i = 0; i < t->n_nodes; i++)
		mem_kb += t->nodes[i].mem_total_kb;
	if (r->has_total) {
		a->n = 1;
		a->t[0].node = -1;
		return check_count(r->total, "total", mem_kb / a->size_kb, &a->t[0].goal, e);
	}
	/* Ascending node order, whatever the order of the keys: the batches then read the same way
	 * in every run. */
	for (int i = 0; i < t->n_nodes; i++) {
		char what[32];
		int k;
		for (k = 0; k < r->nnodes && r->nodes[k].node != t->nodes[i].id; k++)
			;
		if (k == r->nnodes)
			continue;
		if (!htlb_node_exists(a->app->sysfs_root, a->size_kb, t->nodes[i].id))
			return mp_fail(e, MPE_RESIZE_BAD_NODE, 0, "node %u has no memory, so no huge page pool",
				       t->nodes[i].id);
		snprintf(what, sizeof what, "nodes.%u", t->nodes[i].id);
		a->t[a->n].node = (int)t->nodes[i].id;
		if (check_count(r->nodes[k].pages, what, t->nodes[i].mem_total_kb / a->size_kb, &a->t[a->n].goal, e) < 0)
			return -1;
		a->n++;
	}
	for (int k = 0; k < r->nnodes; k++)
		if (topo_index(t, r->nodes[k].node) < 0)
			return mp_fail(e, MPE_RESIZE_BAD_NODE, 0, "'%u' is not an online node", r->nodes[k].node);
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
