#include "server/kernel/hugetlb.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/kernel/sysfs.h"

#define GLOBAL_DIR "kernel/mm/hugepages"
#define NODE_DIR   "devices/system/node"

static void global_path(char *buf, size_t len, uint64_t kb, const char *file)
{
	snprintf(buf, len, GLOBAL_DIR "/hugepages-%llukB/%s", (unsigned long long)kb, file);
}

static void node_path(char *buf, size_t len, uint64_t kb, unsigned node, const char *file)
{
	snprintf(buf, len, NODE_DIR "/node%u/hugepages/hugepages-%llukB/%s", node, (unsigned long long)kb, file);
}

int htlb_size_exists(const char *sysfs_root, uint64_t size_kb)
{
	char rel[128];

	global_path(rel, sizeof rel, size_kb, "nr_hugepages");
	return kfs_exists(sysfs_root, rel);
}

int htlb_node_exists(const char *sysfs_root, uint64_t size_kb, unsigned node)
{
	char rel[160];

	node_path(rel, sizeof rel, size_kb, node, "nr_hugepages");
	return kfs_exists(sysfs_root, rel);
}

int htlb_read_nr(const char *sysfs_root, uint64_t size_kb, int node, uint64_t *nr)
{
	char rel[160];

	if (node < 0)
		global_path(rel, sizeof rel, size_kb, "nr_hugepages");
	else
		node_path(rel, sizeof rel, size_kb, (unsigned)node, "nr_hugepages");
	return kfs_read_u64(sysfs_root, rel, nr);
}

int htlb_write_nr(const char *sysfs_root, uint64_t size_kb, int node, uint64_t count)
{
	char rel[160];

	if (node < 0)
		global_path(rel, sizeof rel, size_kb, "nr_hugepages");
	else
		node_path(rel, sizeof rel, size_kb, (unsigned)node, "nr_hugepages");
	return kfs_write_u64(sysfs_root, rel, count);
}

int htlb_open_nr(const char *sysfs_root, uint64_t size_kb, int node, struct kfs_file *f)
{
	char rel[160];

	if (node < 0)
		global_path(rel, sizeof rel, size_kb, "nr_hugepages");
	else
		node_path(rel, sizeof rel, size_kb, (unsigned)node, "nr_hugepages");
	return kfs_open(sysfs_root, rel, f);
}

int htlb_read_pool(const char *sysfs_root, uint64_t size_kb, struct htlb_pool *p)
{
	static const struct { const char *file; size_t off; } global[] = {
		{ "nr_hugepages",            offsetof(struct htlb_pool, nr) },
		{ "free_hugepages",          offsetof(struct htlb_pool, free) },
		{ "resv_hugepages",          offsetof(struct htlb_pool, resv) },
		{ "surplus_hugepages",       offsetof(struct htlb_pool, surplus) },
		{ "nr_overcommit_hugepages", offsetof(struct htlb_pool, overcommit) },
	};
	char rel[160], buf[4096];
	idset online;
	int rc;

	memset(p, 0, sizeof *p);
	p->size_kb = size_kb;
	if (!htlb_size_exists(sysfs_root, size_kb))
		return -ENOENT;
	for (size_t i = 0; i < sizeof global / sizeof global[0]; i++) {
		global_path(rel, sizeof rel, size_kb, global[i].file);
		if ((rc = kfs_read_u64(sysfs_root, rel, (uint64_t *)((char *)p + global[i].off))) < 0)
			return rc;
	}
	if ((rc = kfs_read(sysfs_root, NODE_DIR "/online", buf, sizeof buf)) < 0)
		return rc == -ENOENT ? 0 : rc;   /* !CONFIG_NUMA: no per-node pools */
	if (idset_parse(buf, &online) < 0)
		return -EINVAL;
	for (unsigned id = 0; id < IDSET_MAX; id++) {
		struct htlb_node *n;
		if (!idset_has(&online, id) || !htlb_node_exists(sysfs_root, size_kb, id))
			continue;
		if (p->n_nodes == TOPO_MAX_NODES)
			return -E2BIG;
		n = &p->nodes[p->n_nodes];
		n->id = id;
		node_path(rel, sizeof rel, size_kb, id, "nr_hugepages");
		if ((rc = kfs_read_u64(sysfs_root, rel, &n->nr)) < 0)
			return rc;
		node_path(rel, sizeof rel, size_kb, id, "free_hugepages");
		if ((rc = kfs_read_u64(sysfs_root, rel, &n->free)) < 0)
			return rc;
		node_path(rel, sizeof rel, size_kb, id, "surplus_hugepages");
		if ((rc = kfs_read_u64(sysfs_root, rel, &n->surplus)) < 0)
			return rc;
		p->n_nodes++;
	}
	return 0;
}

int htlb_compact(const char *procfs_root)
{
	return kfs_write(procfs_root, "sys/vm/compact_memory", "1");
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int htlb_run_steps(struct kfs_file *f, uint64_t from, uint64_t goal, uint64_t batch, unsigned max, int64_t budget_ns,
		   struct htlb_step *steps, unsigned *n)
{
	bool grow = goal > from;
	uint64_t now = from;
	int64_t first = clock_ns(CLOCK_MONOTONIC);
	int rc = 0;

	*n = 0;
	/* Another writer may move the pool past the goal: that ends the run like reaching it. */
	while (*n < max && (grow ? now < goal : now > goal)) {
		struct htlb_step *s = &steps[*n];
		int64_t t0;

		s->written = htlb_next_count(now, goal, batch);
		s->after = now;
		s->started_ns = clock_ns(CLOCK_REALTIME);
		t0 = clock_ns(CLOCK_MONOTONIC);
		rc = kfs_file_write_u64(f, s->written);
		if (rc == 0)
			rc = kfs_file_read_u64(f, &s->after);
		s->elapsed_ns = clock_ns(CLOCK_MONOTONIC) - t0;
		if (rc < 0)
			break;
		(*n)++;
		if (grow ? s->after <= now : s->after >= now)
			break;   /* no progress: the caller decides (compact and retry, or stop) */
		now = s->after;
		if (clock_ns(CLOCK_MONOTONIC) - first >= budget_ns)
			break;
	}
	return rc;
}

int htlb_vmstat_read(const char *procfs_root, struct htlb_vmstat *v)
{
	static const struct { const char *name; size_t off; } want[] = {
		{ "htlb_buddy_alloc_success", offsetof(struct htlb_vmstat, buddy_alloc_success) },
		{ "htlb_buddy_alloc_fail",    offsetof(struct htlb_vmstat, buddy_alloc_fail) },
		{ "compact_stall",            offsetof(struct htlb_vmstat, compact_stall) },
		{ "compact_success",          offsetof(struct htlb_vmstat, compact_success) },
		{ "compact_fail",             offsetof(struct htlb_vmstat, compact_fail) },
	};
	char buf[16384], *line, *save = NULL;
	int rc;

	memset(v, 0, sizeof *v);
	if ((rc = kfs_read(procfs_root, "vmstat", buf, sizeof buf)) < 0)
		return rc;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
			if (!strcmp(line, want[i].name))
				parse_u64(sp + 1, (uint64_t *)((char *)v + want[i].off));
	}
	return 0;
}
