#include "server/kernel/mmcounters.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

static const char *const prefixes[] = { "thp_", "compact_", "htlb_buddy_alloc_", "numa_", "pgmigrate_" };

static int wanted(const char *name)
{
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* "name value" lines into c[] (at most max); lines that do not parse are skipped. */
static int read_pairs(const char *path, int (*keep)(const char *), struct mm_counter *c, int max)
{
	char line[256];
	FILE *f = fopen(path, "re");
	int n = 0;

	if (!f)
		return -errno;
	while (n < max && fgets(line, sizeof line, f)) {
		char *sp = strchr(line, ' ');
		uint64_t v;
		if (!sp || sp - line >= (long)sizeof c->name)
			continue;
		*sp = '\0';
		if ((keep && !keep(line)) || parse_u64(sp + 1, &v) < 0)
			continue;
		memcpy(c[n].name, line, (size_t)(sp - line) + 1);
		c[n++].v = v;
	}
	fclose(f);
	return n;
}

static struct mm_node *node_of(struct mm_snapshot *s, unsigned id)
{
	for (int i = 0; i < s->nnodes; i++)
		if (s->nodes[i].id == id)
			return &s->nodes[i];
	if (s->nnodes == TOPO_MAX_NODES)
		return NULL;
	s->nodes[s->nnodes].id = id;
	return &s->nodes[s->nnodes++];
}

/* "Node 0, zone   Normal   1838   1118 ..." */
static void read_buddyinfo(const char *procfs_root, struct mm_snapshot *s)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/buddyinfo", procfs_root);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f)) {
		unsigned id;
		char zone[16];
		int off = 0, o = 0;
		struct mm_node *nd;
		unsigned long long v;

		if (sscanf(line, "Node %u, zone %15s%n", &id, zone, &off) != 2 || !(nd = node_of(s, id)) ||
		    nd->nzones == MMC_MAX_ZONES)
			continue;
		snprintf(nd->zone[nd->nzones].name, sizeof nd->zone[0].name, "%s", zone);
		for (int used; o < MMC_MAX_ORDERS && sscanf(line + off, "%llu%n", &v, &used) == 1; o++, off += used)
			nd->zone[nd->nzones].nr_free[o] = v;
		nd->nzones++;
		if (o > s->norders)
			s->norders = o;
	}
	fclose(f);
}

int mmc_read(const char *procfs_root, const char *sysfs_root, struct mm_snapshot *s)
{
	char path[PATH_MAX];
	idset online;
	int n;

	memset(s, 0, sizeof *s);
	snprintf(path, sizeof path, "%s/vmstat", procfs_root);
	if ((n = read_pairs(path, wanted, s->c, MMC_MAX_COUNTERS)) < 0)
		return n;
	s->n = n;
	/* The node ids only: the whole topology (distances, meminfo, the hugepage sizes) was read twice
	 * per recorded operation, a knob PUT's included (bench/README.md, knob.put). */
	if (topo_read_online(sysfs_root, &online) == 0)
		for (unsigned id = 0; id < IDSET_MAX; id++) {
			struct mm_node *nd;
			if (!idset_has(&online, id) || !(nd = node_of(s, id)))
				continue;
			snprintf(path, sizeof path, "%s/devices/system/node/node%u/numastat", sysfs_root, id);
			if ((n = read_pairs(path, NULL, nd->stat, MMC_MAX_NUMASTAT)) > 0)
				nd->nstat = n;
		}
	read_buddyinfo(procfs_root, s);
	return 0;
}
