/* The hugetlb resize request (PUT /v1/hugepages/{size}, a schedule's target), parsed and planned
 * by resize_parse() and resize_plan() (what a dry run does), against the generated
 * topology of tests/fuzz/tree.h (online nodes 0, 1, 3; pools on 0 and 3). Input: a JSON body.
 * Properties:
 *   - a refusal is 400/404/422 with a resize.* or hugepages.* code and a detail;
 *   - an accepted plan has at least one target; "total" gives one global target of that count;
 *     "nodes" gives exactly one target per key, in ascending node order, each key naming its
 *     node in canonical decimal and carrying that target's count (no key silently ignored);
 *   - every count fits the memory of its node (or of all nodes);
 *   - planning the normalised request again gives the same targets. */
#include <jansson.h>

#include "server/app.h"
#include "server/api/api.h"
#include "server/ops/resize.h"
#include "tests/fuzz/tree.h"

static struct app app;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_tree_make();
	app.sysfs_root = fz_sys;
	app.procfs_root = fz_proc;
	return 0;
}

/* Node id -> MemTotal in kB in the generated tree. */
static uint64_t mem_kb(long node)
{
	return node == 0 ? 4194304 : node == 3 ? 2097152 : 0;
}

static json_t *plan_of(json_t *body, mp_err *e)
{
	struct resize_req r;
	struct resize_args *p;
	json_t *plan;

	if (resize_parse(&app, body, NULL, RESIZE_SCHEDULED, &r, e) < 0 || !(p = resize_plan(&app, &r, e)))
		return NULL;
	plan = resize_plan_json(p);
	resize_plan_free(p);
	FZ_ASSERT(plan, "an accepted plan without JSON");
	return plan;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL), *plan, *again;
	mp_err e = { 0 };

	if (!json_is_object(body))
		goto out;
	if (!(plan = plan_of(body, &e))) {
		FZ_ASSERT((api_status(&e) == 400 || api_status(&e) == 404 || api_status(&e) == 422) && e.detail[0] &&
			  (!strncmp(mp_code_name(e.code), "resize.", 7) || !strncmp(mp_code_name(e.code), "hugepages.", 10)),
			  "refused with %d %s", api_status(&e), mp_code_name(e.code));
		goto out;
	}
	json_t *targets = json_object_get(plan, "targets"), *request = json_object_get(plan, "request");
	json_t *total = json_object_get(body, "total"), *nodes = json_object_get(body, "nodes");
	uint64_t size_kb = (uint64_t)json_integer_value(json_object_get(request, "size_kb"));
	size_t n = json_array_size(targets);

	FZ_ASSERT(size_kb == 2048 || size_kb == 1048576, "size_kb %llu", (unsigned long long)size_kb);
	FZ_ASSERT(n >= 1, "a plan without targets");
	if (total) {
		json_t *t = json_array_get(targets, 0);
		FZ_ASSERT(!nodes && n == 1 && json_is_null(json_object_get(t, "node")), "total: %zu targets", n);
		FZ_ASSERT(json_equal(json_object_get(t, "target"), total), "total target differs");
		FZ_ASSERT((uint64_t)json_integer_value(total) <= (mem_kb(0) + mem_kb(3)) / size_kb, "total too large");
	} else {
		FZ_ASSERT(json_is_object(nodes) && n == json_object_size(nodes), "%zu targets for %zu node keys", n,
			  json_object_size(nodes));
		long prev = -1;
		for (size_t i = 0; i < n; i++) {
			json_t *t = json_array_get(targets, i);
			long node = (long)json_integer_value(json_object_get(t, "node"));
			char key[24];
			snprintf(key, sizeof key, "%ld", node);
			FZ_ASSERT(node > prev, "targets not in ascending node order");
			prev = node;
			FZ_ASSERT(json_object_get(nodes, key), "node %ld planned, but no key \"%s\"", node, key);
			FZ_ASSERT(json_equal(json_object_get(nodes, key), json_object_get(t, "target")), "node %ld count", node);
			FZ_ASSERT(mem_kb(node) > 0, "node %ld has no pool", node);
			FZ_ASSERT((uint64_t)json_integer_value(json_object_get(t, "target")) <= mem_kb(node) / size_kb,
				  "node %ld count too large", node);
		}
	}
	/* The normalised request is a request too, and means the same. */
	json_t *norm = json_deep_copy(request);
	json_object_del(norm, "size_kb");
	mp_err e2 = { 0 };
	FZ_ASSERT((again = plan_of(norm, &e2)), "the normalised request is refused: %d %s", api_status(&e2), e2.detail);
	FZ_ASSERT(json_equal(json_object_get(again, "targets"), targets), "the normalised request plans differently");
	json_decref(again);
	json_decref(norm);
	json_decref(plan);
out:
	json_decref(body);
	return 0;
}
