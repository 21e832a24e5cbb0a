/* server/kernel/topology.c: topo_read over files whose text is the input, in the generated tree of
 * tests/fuzz/tree.h (node directories 0, 1 and 3 exist). The input is NUL-separated sections that
 * replace, in order: node/online, node/possible, node/has_cpu, node/has_memory, node0/cpulist,
 * node0/distance, node0/meminfo, node3/meminfo; a missing section keeps the tree's text, a
 * section "-" removes the file. Properties:
 *   - a failure is -EINVAL, -ENOENT, -E2BIG or -EFBIG (text too long), never anything else;
 *   - a success lists exactly the online nodes, ascending, each one whose directory exists;
 *     distances fit in a byte; without has_cpu / has_memory files, a node has a CPU / memory
 *     exactly when its cpulist is non-empty / its MemTotal is positive;
 *   - topo_meminfo_value on the raw meminfo text: a value found is a number written in the text
 *     on a "Node N Key:" line of that node. */
#include <errno.h>

#include "server/kernel/topology.h"
#include "tests/fuzz/tree.h"

#define NODE "devices/system/node/"
static const char *const files[] = { NODE "online", NODE "possible", NODE "has_cpu", NODE "has_memory",
				     NODE "node0/cpulist", NODE "node0/distance", NODE "node0/meminfo",
				     NODE "node3/meminfo" };
#define NFILES (sizeof files / sizeof files[0])
static char defaults[NFILES][256];
static struct topology *topo;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_tree_make();
	for (size_t i = 0; i < NFILES; i++) {
		char path[512];
		FILE *f;
		snprintf(path, sizeof path, "%s/%s", fz_sys, files[i]);
		FZ_ASSERT((f = fopen(path, "r")), "%s", path);
		defaults[i][fread(defaults[i], 1, sizeof defaults[i] - 1, f)] = '\0';
		fclose(f);
	}
	FZ_ASSERT((topo = malloc(sizeof *topo)), "malloc");
	return 0;
}

static void check_meminfo(const char *text, unsigned node, const char *key)
{
	uint64_t kb = 0;
	int rc = topo_meminfo_value(text, node, key, &kb);
	char num[32], head[64];

	FZ_ASSERT(rc == 0 || rc == -EINVAL || rc == -ENOENT, "topo_meminfo_value: %d", rc);
	if (rc < 0)
		return;
	snprintf(num, sizeof num, "%llu", (unsigned long long)kb);
	snprintf(head, sizeof head, "%s:", key);
	/* Some line holds "Node", the key and the number (leading zeros aside). */
	bool found = false;
	for (const char *l = text; l && *l && !found; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strcspn(l, "\n");
		char line[512];
		snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), l);
		found = strstr(line, "Node") && strstr(line, head) && strstr(line, num);
	}
	FZ_ASSERT(found, "%s = %s for node %u, but no line says so", key, num, node);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fz_cstr(data, size), *sec[NFILES] = { 0 };
	bool removed[NFILES] = { 0 };
	size_t i = 0, n = 0;
	int rc;

	/* fz_cstr cut at the first NUL; the sections are the NUL-separated pieces of data. */
	free(buf);
	buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	while (i < size && n < NFILES) {
		sec[n++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	for (size_t f = 0; f < NFILES; f++) {
		char path[512];
		snprintf(path, sizeof path, "%s/%s", fz_sys, files[f]);
		if (sec[f] && !strcmp(sec[f], "-")) {
			unlink(path);
			removed[f] = true;
		} else {
			fz_write(fz_sys, files[f], sec[f] ? sec[f] : defaults[f]);
		}
	}

	rc = topo_read(fz_sys, topo);
	if (rc < 0) {
		FZ_ASSERT(rc == -EINVAL || rc == -ENOENT || rc == -E2BIG || rc == -EFBIG, "topo_read: %d", rc);
	} else {
		FZ_ASSERT(rc == 0, "topo_read: %d", rc);
		FZ_ASSERT(topo->n_nodes >= 0 && (unsigned)topo->n_nodes == idset_count(&topo->online) &&
			  topo->n_nodes <= TOPO_MAX_NODES, "%d nodes, %u online", topo->n_nodes, idset_count(&topo->online));
		for (int k = 0; k < topo->n_nodes; k++) {
			const struct topo_node *nd = &topo->nodes[k];
			FZ_ASSERT(idset_has(&topo->online, nd->id) && (k == 0 || nd->id > topo->nodes[k - 1].id),
				  "node %u out of order or not online", nd->id);
			FZ_ASSERT(nd->id == 0 || nd->id == 1 || nd->id == 3, "node %u has no directory", nd->id);
			for (int d = 0; d < topo->n_nodes; d++)
				FZ_ASSERT(nd->distance[d] <= 255, "distance %u", nd->distance[d]);
			if (removed[2])
				FZ_ASSERT(nd->has_cpu == (idset_count(&nd->cpus) > 0), "node %u has_cpu derived wrongly", nd->id);
			if (removed[3])
				FZ_ASSERT(nd->has_memory == (nd->mem_total_kb > 0), "node %u has_memory derived wrongly", nd->id);
		}
	}
	for (size_t f = 6; f < NFILES; f++)
		if (sec[f] && !removed[f]) {
			check_meminfo(sec[f], f == 6 ? 0 : 3, "MemTotal");
			check_meminfo(sec[f], f == 6 ? 0 : 3, "MemFree");
		}
	free(buf);
	return 0;
}
