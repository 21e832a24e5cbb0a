#include "server/kernel/mmcounters.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/kernel/sysfs.h"

#define NODE_DIR "devices/system/node"
/* nodeN/numastat held for N below this, by path above: at most 11 files held in all, within the
 * daemon's open-file budget for its own work (api/conn.h's CONN_FDS_SELF), on a host of any size. */
#define MMC_HELD_NODES 8

/* The vmstat families recorded, by their first letter: one compare a line for most of the ~180
 * lines, not five prefixes each. */
static bool wanted(const char *name, size_t len)
{
#define HAS(p) (len > sizeof p - 1 && !memcmp(name, p, sizeof p - 1))
	switch (name[0]) {
	case 't': return HAS("thp_");
	case 'c': return HAS("compact_");
	case 'h': return HAS("htlb_buddy_alloc_");
	case 'n': return HAS("numa_");
	case 'p': return HAS("pgmigrate_");
	default: return false;
	}
#undef HAS
}

/* A file's text: on the stack (vmstat is ~4-5 KiB on 6.x, buddyinfo ~0.1 KiB a zone), or for a
 * host whose text does not fit there, MMC_FILE_MAX bytes from the heap, allocated once a snapshot.
 * Neither is zeroed: the text is NUL-terminated by the read. */
#define MMC_TEXT_STACK 16384
#define MMC_FILE_MAX   65536
struct text {
	char stack[MMC_TEXT_STACK];
	char *heap;                  /* owned: NULL until a text needs it */
	char *p;                     /* the text last read: stack or heap */
};

/* root/rel into t, through *slot when it is given (the held file), else by path. */
static int text_read(struct text *t, _Atomic int *slot, const char *root, const char *rel)
{
	int rc = slot ? kfs_held_read(slot, root, rel, t->stack, sizeof t->stack)
		      : kfs_read(root, rel, t->stack, sizeof t->stack);

	t->p = t->stack;
	if (rc != -EFBIG)
		return rc;
	if (!t->heap && !(t->heap = malloc(MMC_FILE_MAX)))
		return -ENOMEM;
	t->p = t->heap;
	return slot ? kfs_held_read(slot, root, rel, t->heap, MMC_FILE_MAX) : kfs_read(root, rel, t->heap, MMC_FILE_MAX);
}

/* Decimal digits [p, end) as one value: false for anything else, an empty field or an overflow. */
static bool digits(const char *p, const char *end, uint64_t *v)
{
	uint64_t x = 0;

	if (p == end)
		return false;
	for (; p < end; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

/* "name value" lines of text into c[] (at most max), only the names keep accepts when it is
 * given; a line that does not parse, or whose name is too long to keep, is skipped. The count. */
static int parse_pairs(const char *text, bool (*keep)(const char *, size_t), struct mm_counter *c, int max)
{
	const char *p = text;
	int n = 0;

	while (*p && n < max) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		size_t len = sp ? (size_t)(sp - p) : 0;
		if (sp && len < sizeof c->name && (!keep || keep(p, len)) && digits(sp + 1, end, &c[n].v)) {
			memcpy(c[n].name, p, len);
			c[n++].name[len] = '\0';
		}
		p = nl ? nl + 1 : end;
	}
	return n;
}

/* The node id's entry, added (zeroed) if it is new and there is room for it (cap). */
static struct mm_node *node_of(struct mm_snapshot *s, int cap, unsigned id)
{
	for (int i = 0; i < s->nnodes; i++)
		if (s->nodes[i].id == id)
			return &s->nodes[i];
	if (s->nnodes == cap)
		return NULL;
	memset(&s->nodes[s->nnodes], 0, sizeof s->nodes[0]);
	s->nodes[s->nnodes].id = id;
	return &s->nodes[s->nnodes++];
}

/* "Node 0, zone   Normal   1838   1118 ..." */
static void parse_buddyinfo(char *text, struct mm_snapshot *s, int cap)
{
	char *line = text;

	while (line && *line) {
		char *nl = strchr(line, '\n'), *q, *end;
		unsigned long id;
		size_t zl;
		int o = 0;
		struct mm_node *nd;

		if (nl)
			*nl = '\0';
		if (strncmp(line, "Node ", 5) != 0)
			goto next;
		errno = 0;
		id = strtoul(line + 5, &end, 10);
		if (end == line + 5 || errno || id >= IDSET_MAX || strncmp(end, ", zone", 6) != 0)
			goto next;
		q = end + 6 + strspn(end + 6, " ");
		zl = strcspn(q, " ");
		if (!zl || zl >= sizeof nd->zone[0].name || !(nd = node_of(s, cap, (unsigned)id)) ||
		    nd->nzones == MMC_MAX_ZONES)
			goto next;
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
next:
		line = nl ? nl + 1 : NULL;
	}
}

struct mmc_files {
	const char *procfs, *sysfs;            /* borrowed */
	bool hold_proc, hold_sys;              /* the root is procfs / sysfs itself */
	_Atomic int vmstat, buddyinfo, online; /* each the file (kfs_open_held), owned; or KFS_HELD_* */
	_Atomic int numastat[MMC_HELD_NODES];  /* nodeN/numastat by N, the same */
};

struct mmc_files *mmc_files_new(const char *procfs_root, const char *sysfs_root)
{
	struct mmc_files *f = calloc(1, sizeof *f);

	if (!f)
		return NULL;
	f->procfs = procfs_root;
	f->sysfs = sysfs_root;
	f->hold_proc = kfs_on_kernel_fs(procfs_root) == 1;
	f->hold_sys = kfs_on_kernel_fs(sysfs_root) == 1;
	atomic_init(&f->vmstat, f->hold_proc ? KFS_HELD_UNTRIED : KFS_HELD_NO);
	atomic_init(&f->buddyinfo, f->hold_proc ? KFS_HELD_UNTRIED : KFS_HELD_NO);
	atomic_init(&f->online, f->hold_sys ? KFS_HELD_UNTRIED : KFS_HELD_NO);
	for (int i = 0; i < MMC_HELD_NODES; i++)
		atomic_init(&f->numastat[i], f->hold_sys ? KFS_HELD_UNTRIED : KFS_HELD_NO);
	return f;
}

static void close_slot(_Atomic int *slot)
{
	int fd = atomic_load(slot);

	if (fd >= 0)
		close(fd);
}

void mmc_files_free(struct mmc_files *f)
{
	if (!f)
		return;
	close_slot(&f->vmstat);
	close_slot(&f->buddyinfo);
	close_slot(&f->online);
	for (int i = 0; i < MMC_HELD_NODES; i++)
		close_slot(&f->numastat[i]);
	free(f);
}

/* f's slot for a file, or NULL to read it by path (no f, or a root that is not held). */
#define SLOT(f, hold, member) ((f) && (f)->hold ? &(f)->member : NULL)

/* The snapshot into s, whose nodes[] has room for cap; online the nodes to read the numastat of. */
static int fill(struct mmc_files *f, const char *procfs_root, const char *sysfs_root, const idset *online,
		struct mm_snapshot *s, int cap, struct text *t)
{
	char rel[64];
	int rc;

	s->n = s->norders = s->nnodes = 0;
	if ((rc = text_read(t, SLOT(f, hold_proc, vmstat), procfs_root, "vmstat")) < 0)
		return rc;
	s->n = parse_pairs(t->p, wanted, s->c, MMC_MAX_COUNTERS);
	for (int id = online ? idset_next(online, 0) : -1; id >= 0; id = idset_next(online, (unsigned)id + 1)) {
		struct mm_node *nd;
		if (!(nd = node_of(s, cap, (unsigned)id)))
			continue;
		snprintf(rel, sizeof rel, NODE_DIR "/node%d/numastat", id);
		if (text_read(t, id < MMC_HELD_NODES ? SLOT(f, hold_sys, numastat[id]) : NULL, sysfs_root, rel) >= 0)
			nd->nstat = parse_pairs(t->p, NULL, nd->stat, MMC_MAX_NUMASTAT);
	}
	if (text_read(t, SLOT(f, hold_proc, buddyinfo), procfs_root, "buddyinfo") >= 0)
		parse_buddyinfo(t->p, s, cap);
	return 0;
}

/* The node ids only: the whole topology (distances, meminfo, the hugepage sizes) was read twice
 * per recorded operation, a knob PUT's included (bench/README.md, knob.put). */
static bool read_online(struct mmc_files *f, const char *sysfs_root, struct text *t, idset *online)
{
	return text_read(t, SLOT(f, hold_sys, online), sysfs_root, NODE_DIR "/online") >= 0 &&
	       idset_parse(t->p, online) == 0;
}

int mmc_read(const char *procfs_root, const char *sysfs_root, struct mm_snapshot *s)
{
	struct text t;
	idset online;
	int rc;

	t.heap = NULL;
	rc = fill(NULL, procfs_root, sysfs_root, read_online(NULL, sysfs_root, &t, &online) ? &online : NULL, s,
		  TOPO_MAX_NODES, &t);
	free(t.heap);
	return rc;
}

struct mm_snapshot *mmc_snap(struct mmc_files *f, const char *procfs_root, const char *sysfs_root, int *err)
{
	struct mm_snapshot *s = NULL;   /* owned until returned */
	struct text t;
	idset online;
	bool have = false;
	int cap = 1, rc;

	t.heap = NULL;
	if (f) {
		procfs_root = f->procfs;
		sysfs_root = f->sysfs;
	}
	if ((have = read_online(f, sysfs_root, &t, &online)))
		cap = (int)idset_count(&online);
	/* Room for buddyinfo's nodes when no node list could be read; never more than mmc_read's. */
	cap = !have ? TOPO_MAX_NODES : cap < 1 ? 1 : cap > TOPO_MAX_NODES ? TOPO_MAX_NODES : cap;
	if (!(s = malloc(offsetof(struct mm_snapshot, nodes) + (size_t)cap * sizeof s->nodes[0]))) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = fill(f, procfs_root, sysfs_root, have ? &online : NULL, s, cap, &t)) < 0) {
		free(s);
		s = NULL;
	}
out:
	free(t.heap);
	*err = rc;
	return s;
}
