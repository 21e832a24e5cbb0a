#include "server/ops/pools.h"

#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/kernel/sysfs.h"
#include "server/kernel/topology.h"

int pools_size(const struct app *app, const char *text, uint64_t *size_kb, mp_err *e)
{
	uint64_t kb;

	if (!text || parse_size_kb(text, &kb) < 0 || !htlb_size_exists(app->sysfs_root, kb))
		return mp_fail(e, MPE_HUGEPAGES_UNKNOWN_SIZE, 0,
			       "'%.64s' is not a huge page size this kernel offers", text ? text : "");
	*size_kb = kb;
	return 0;
}

json_t *pools_json(const struct htlb_pool *p)
{
	char name[32];
	json_t *nodes = json_array();

	format_size_kb(p->size_kb, name, sizeof name);
	for (int i = 0; i < p->n_nodes; i++)
		json_array_append_new(nodes, json_pack("{s:i, s:I, s:I, s:I}", "node", (int)p->nodes[i].id,
						       "nr", (json_int_t)p->nodes[i].nr,
						       "free", (json_int_t)p->nodes[i].free,
						       "surplus", (json_int_t)p->nodes[i].surplus));
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "size", name, "size_kb", (json_int_t)p->size_kb,
			 "nr", (json_int_t)p->nr, "free", (json_int_t)p->free, "resv", (json_int_t)p->resv,
			 "surplus", (json_int_t)p->surplus, "overcommit", (json_int_t)p->overcommit, "nodes", nodes);
}

json_t *pools_get(const struct app *app, uint64_t size_kb, mp_err *e)
{
	struct htlb_pool *p = malloc(sizeof *p);
	json_t *out = NULL;
	int rc;

	if (!p) {
		mp_nomem(e);
		return NULL;
	}
	if ((rc = htlb_read_pool(app->sysfs_root, size_kb, p)) < 0)
		mp_fail(e, MPE_HUGEPAGES_READ, -rc, "reading the %llukB pool: %s", (unsigned long long)size_kb,
			strerror(-rc));
	else
		out = pools_json(p);
	free(p);
	return out;
}

json_t *pools_list(const struct app *app, mp_err *e)
{
	json_t *arr = json_array();

	for (int i = 0; i < app->caps.n_hugetlb_sizes; i++) {
		json_t *one = pools_get(app, app->caps.hugetlb_sizes_kb[i], e);
		if (!one) {
			json_decref(arr);
			return NULL;
		}
		json_array_append_new(arr, one);
	}
	return arr;
}

json_t *pools_availability(const struct app *app, uint64_t size_kb, int node, uint64_t count, mp_err *e)
{
	struct htlb_pool *p = malloc(sizeof *p);
	struct topology *t = malloc(sizeof *t);
	uint64_t free_pages = 0, nr = 0, mem_free_kb = 0;
	json_t *out = NULL;
	char name[32];
	int rc;

	if (!p || !t) {
		mp_nomem(e);
		goto out;
	}
	if ((rc = topo_read(app->sysfs_root, t)) < 0) {
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -rc, "reading the topology: %s", strerror(-rc));
		goto out;
	}
	if (node >= 0) {
		int ti = topo_index(t, (unsigned)node);
		if (ti < 0 || !htlb_node_exists(app->sysfs_root, size_kb, (unsigned)node)) {
			mp_fail(e, MPE_RESIZE_BAD_NODE, 0, ti < 0 ? "node %d is not an online node"
				: "node %d has no memory, so no huge page pool", node);
			goto out;
		}
		mem_free_kb = t->nodes[ti].mem_free_kb;
	} else {
		for (int i = 0; i < t->n_nodes; i++)
			mem_free_kb += t->nodes[i].mem_free_kb;
	}
	if ((rc = htlb_read_pool(app->sysfs_root, size_kb, p)) < 0) {
		mp_fail(e, MPE_HUGEPAGES_READ, -rc, "reading the pool: %s", strerror(-rc));
		goto out;
	}
	if (node < 0) {
		/* Reserved pages are promised to mappings already: only free - resv can be handed out. */
		free_pages = p->free > p->resv ? p->free - p->resv : 0;
		nr = p->nr;
	} else {
		for (int i = 0; i < p->n_nodes; i++)
			if (p->nodes[i].id == (unsigned)node) {
				free_pages = p->nodes[i].free;
				nr = p->nodes[i].nr;
			}
	}
	{
		uint64_t from_free = free_pages < count ? free_pages : count;
		uint64_t grow = count - from_free;
		uint64_t growable = mem_free_kb / size_kb;
		const char *verdict = grow == 0 ? "available" : grow <= growable ? "grow" : "insufficient";
		format_size_kb(size_kb, name, sizeof name);
		out = json_pack("{s:s, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:b}",
				"size", name, "size_kb", (json_int_t)size_kb,
				"node", node >= 0 ? json_integer(node) : json_null(),
				"count", (json_int_t)count, "pool_nr", (json_int_t)nr, "free", (json_int_t)free_pages,
				"from_free", (json_int_t)from_free, "grow_needed", (json_int_t)grow,
				"mem_free_kb", (json_int_t)mem_free_kb, "growable_estimate", (json_int_t)growable,
				"verdict", verdict, "available_now", grow == 0);
	}
out:
	free(p);
	free(t);
	return out;
}
