/* The NUMA topology as the API shows it (see topology.h). */
#include "server/ops/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/kernel/topology.h"

static json_t *node_json(const struct topology *t, const struct topo_node *n)
{
	json_t *cpus = json_array(), *dist = json_object(), *hp = json_array();
	char key[16], sz[32];

	for (unsigned c = 0; c < IDSET_MAX; c++)
		if (idset_has(&n->cpus, c))
			json_array_append_new(cpus, json_integer(c));
	for (int i = 0; i < t->n_nodes; i++) {
		snprintf(key, sizeof key, "%u", t->nodes[i].id);
		json_object_set_new(dist, key, json_integer(n->distance[i]));
	}
	for (int i = 0; i < n->n_hp_sizes; i++) {
		format_size_kb(n->hp_sizes_kb[i], sz, sizeof sz);
		json_array_append_new(hp, json_string(sz));
	}
	return json_pack("{s:I, s:o, s:b, s:b, s:I, s:I, s:o, s:o}",
		"id", (json_int_t)n->id,
		"cpus", cpus,
		"has_cpu", n->has_cpu,
		"has_memory", n->has_memory,
		"memory_total_bytes", (json_int_t)(n->mem_total_kb * 1024),
		"memory_free_bytes", (json_int_t)(n->mem_free_kb * 1024),
		"distances", dist,
		"hugepage_sizes", hp);
}

json_t *topology_json(const struct app *app, mp_err *e)
{
	struct topology *t;
	json_t *nodes, *out;
	char possible[4096], online[4096];
	int rc;

	if (!(t = malloc(sizeof *t))) {
		mp_fail(e, MPE_INTERNAL_NOMEM, ENOMEM, "out of memory");
		return NULL;
	}
	if ((rc = topo_read(app->sysfs_root, t)) < 0) {
		free(t);
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -rc, "cannot read the NUMA topology under %s/devices/system/node",
			app->sysfs_root);
		return NULL;
	}
	nodes = json_array();
	for (int i = 0; i < t->n_nodes; i++)
		json_array_append_new(nodes, node_json(t, &t->nodes[i]));
	if (idset_format(&t->possible, possible, sizeof possible) < 0)
		possible[0] = '\0';
	if (idset_format(&t->online, online, sizeof online) < 0)
		online[0] = '\0';
	rc = t->n_nodes;
	free(t);
	if (!(out = json_pack("{s:o, s:i, s:s, s:s}", "nodes", nodes, "node_count", rc, "possible", possible,
			      "online", online)))
		mp_nomem(e);
	return out;
}
