#include "server/kernel/mmcounters.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/kernel/sysfs.h"

static const char *const prefixes[] = { "thp_", "compact_", "htlb_buddy_alloc_", "numa_", "pgmigrate_" };

static int wanted(const char *name)
{
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* Each file is read whole with one read(2) into buf (vmstat is ~5 KiB on 6.x) and parsed in
 * place: stdio's 1 KiB buffer on procfs took five reads for vmstat, and fgets, sscanf and the
 * line copies were half of a snapshot's time (bench/README.md section 20, knob.put). */
#define MMC_FILE_MAX 65536

/* The next line of *p (NUL-terminated in place), or NULL at the end. */
static char *next_line(char **p)
{
	char *line = *p, *nl;

	if (!*line)
		return NULL;
	if ((nl = strchr(line, '\n'))) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = line + strlen(line);
	}
	return line;
}

/* "name value" lines of root/rel into c[] (at most max); lines that do not parse are skipped.
 * The count, or -errno when the file cannot be read. */
static int read_pairs(const char *root, const char *rel, int (*keep)(const char *), struct mm_counter *c, int max,
		      char *buf)
{
	char *p = buf, *line;
	int n = 0, rc;

	if ((rc = kfs_read(root, rel, buf, MMC_FILE_MAX)) < 0)
		return rc;
	while (n < max && (line = next_line(&p))) {
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
static void read_buddyinfo(const char *procfs_root, struct mm_snapshot *s, char *buf)
{
	char *p = buf, *line;

	if (kfs_read(procfs_root, "buddyinfo", buf, MMC_FILE_MAX) < 0)
		return;
	while ((line = next_line(&p))) {
		char *q, *end;
		unsigned long id;
		size_t zl;
		int o = 0;
		struct mm_node *nd;

		if (strncmp(line, "Node ", 5) != 0)
			continue;
		errno = 0;
		id = strtoul(line + 5, &end, 10);
		if (end == line + 5 || errno || id >= IDSET_MAX || strncmp(end, ", zone", 6) != 0)
			continue;
		q = end + 6 + strspn(end + 6, " ");
		zl = strcspn(q, " ");
		if (!zl || zl >= sizeof nd->zone[0].name || !(nd = node_of(s, (unsigned)id)) ||
		    nd->nzones == MMC_MAX_ZONES)
			continue;
		memcpy(nd->zone[nd->nzones].name, q, zl);
		nd->zone[nd->nzones].name[zl] = '\0';
		for (q += zl; o < MMC_MAX_ORDERS; o++, q = end) {
			unsigned long long v = strtoull(q, &end, 10);
			if (end == q)
				break;
			nd->zone[nd->nzones].nr_free[o] = v;
		}
		nd->nzones++;
		if (o > s->norders)
			s->norders = o;
	}
}

int mmc_read(const char *procfs_root, const char *sysfs_root, struct mm_snapshot *s)
{
	char rel[64], *buf = malloc(MMC_FILE_MAX);   /* owned: each file's text in turn */
	idset online;
	int n;

	memset(s, 0, sizeof *s);
	if (!buf)
		return -ENOMEM;
	if ((n = read_pairs(procfs_root, "vmstat", wanted, s->c, MMC_MAX_COUNTERS, buf)) < 0) {
		free(buf);
		return n;
	}
	s->n = n;
	/* The node ids only: the whole topology (distances, meminfo, the hugepage sizes) was read twice
	 * per recorded operation, a knob PUT's included (bench/README.md, knob.put). */
	if (topo_read_online(sysfs_root, &online) == 0)
		for (int id = idset_next(&online, 0); id >= 0; id = idset_next(&online, (unsigned)id + 1)) {
			struct mm_node *nd;
			if (!(nd = node_of(s, (unsigned)id)))
				continue;
			snprintf(rel, sizeof rel, "devices/system/node/node%u/numastat", id);
			if ((n = read_pairs(sysfs_root, rel, NULL, nd->stat, MMC_MAX_NUMASTAT, buf)) > 0)
				nd->nstat = n;
		}
	read_buddyinfo(procfs_root, s, buf);
	free(buf);
	return 0;
}
