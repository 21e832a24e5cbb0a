/* `mempolicyctl topology`: the nodes, then the distance matrix (like numactl --hardware). */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"

static void print_distances(json_t *nodes)
{
	size_t n = json_array_size(nodes), i, j;
	const char *hdr[65];
	char names[65][16];
	struct table *t;
	json_t *node;

	if (n == 0 || n > 64)
		return;
	hdr[0] = "DISTANCE";
	for (i = 0; i < n; i++) {
		snprintf(names[i + 1], sizeof names[i + 1], "%lld",
			 (long long)json_integer_value(json_object_get(json_array_get(nodes, i), "id")));
		hdr[i + 1] = names[i + 1];
	}
	t = table_new((int)n + 1, hdr);
	json_array_foreach(nodes, i, node) {
		const char *row[65];
		char cells[65][16];
		json_t *d = json_object_get(node, "distances");
		row[0] = names[i + 1];
		for (j = 0; j < n; j++) {
			out_scalar(json_object_get(d, names[j + 1]), cells[j + 1], sizeof cells[j + 1]);
			row[j + 1] = cells[j + 1];
		}
		table_rowv(t, row);
	}
	fputc('\n', stdout);
	table_print(t, stdout);
}

int cmd_topology(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "NODE", "CPUS", "MEMORY", "FREE", "HUGEPAGES" };
	struct http_result r;
	struct table *t;
	json_t *nodes, *node;
	size_t i;
	int rc;

	(void)cmd;
	(void)a;
	if ((rc = http_show(c, "GET", "/v1/topology", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	nodes = json_object_get(r.body, "nodes");
	t = table_new(5, hdr);
	json_array_foreach(nodes, i, node) {
		char id[32], cpus[1024], tot[32], fr[32], hp[128];
		out_scalar(json_object_get(node, "id"), id, sizeof id);
		out_idlist(json_object_get(node, "cpus"), cpus, sizeof cpus);
		out_bytes((unsigned long long)json_integer_value(json_object_get(node, "memory_total_bytes")), tot,
			  sizeof tot);
		out_bytes((unsigned long long)json_integer_value(json_object_get(node, "memory_free_bytes")), fr,
			  sizeof fr);
		out_scalar(json_object_get(node, "hugepage_sizes"), hp, sizeof hp);
		table_row(t, id, cpus, tot, fr, hp[0] ? hp : "-");
	}
	table_print(t, stdout);
	print_distances(nodes);
	http_result_free(&r);
	return EXIT_OK;
}
