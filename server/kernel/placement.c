/* Summing a placement per node and reading a live process's files (the parsers are in
 * placement_parse.c). */
#include "server/kernel/placement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/kernel/proc.h"

static struct pl_node *node_of(struct placement *p, unsigned id)
{
	int i;

	for (i = 0; i < p->n_nodes && p->nodes[i].id < id; i++)
		;
	if (i < p->n_nodes && p->nodes[i].id == id)
		return &p->nodes[i];
	if (p->n_nodes == PL_MAX_NODES)
		return NULL;
	memmove(&p->nodes[i + 1], &p->nodes[i], (size_t)(p->n_nodes - i) * sizeof p->nodes[0]);
	memset(&p->nodes[i], 0, sizeof p->nodes[i]);
	p->nodes[i].id = id;
	p->n_nodes++;
	return &p->nodes[i];
}

static int hsize_index(struct placement *p, uint64_t kb)
{
	int i;

	for (i = 0; i < p->n_hsizes; i++)
		if (p->hsize_kb[i] == kb)
			return i;
	if (p->n_hsizes == PL_MAX_HSIZES)
		return -1;
	p->hsize_kb[p->n_hsizes] = kb;
	return p->n_hsizes++;
}

int pl_summarise(struct placement *p)
{
	p->n_nodes = 0;
	p->n_hsizes = 0;
	p->resident_bytes = p->thp_bytes = p->thp_unattributed_bytes = 0;
	p->policy_bytes = p->policy_local_bytes = 0;
	for (size_t i = 0; i < p->n_mappings; i++) {
		const struct pl_mapping *m = &p->mappings[i];
		const struct pl_policy *pol = &p->policies[m->policy];
		bool names_nodes = idset_count(&pol->nodes) > 0;
		uint64_t total = 0, local = 0;
		int h = -1;

		if (m->huge && m->n_counts && (h = hsize_index(p, m->page_kb)) < 0)
			return -E2BIG;
		for (uint32_t c = 0; c < m->n_counts; c++) {
			const struct pl_count *pc = &p->counts[m->first_count + c];
			struct pl_node *nd = node_of(p, pc->node);
			uint64_t b = pl_count_bytes(m, pc);
			if (!nd)
				return -E2BIG;
			if (m->huge) {
				nd->hugetlb_bytes += b;
				nd->hugetlb_pages[h] += pc->pages;
			} else {
				nd->base_bytes += b;
			}
			total += b;
			if (names_nodes && idset_has(&pol->nodes, pc->node))
				local += b;
		}
		p->resident_bytes += total;
		if (names_nodes) {
			p->policy_bytes += total;
			p->policy_local_bytes += local;
		}
		if (!m->huge && m->thp_kb) {
			uint64_t thp = m->thp_kb * 1024;
			p->thp_bytes += thp;
			if (m->n_counts == 1) {
				struct pl_node *nd = node_of(p, p->counts[m->first_count].node);
				/* The two files are read apart: never more THP than the node has. */
				if (thp > nd->base_bytes)
					thp = nd->base_bytes;
				nd->thp_bytes += thp;
				nd->base_bytes -= thp;
			} else {
				p->thp_unattributed_bytes += thp;
			}
		}
	}
	return 0;
}

static int numa_maps_cb(void *arg, const char *line, size_t len)
{
	struct placement *p = arg;
	int rc = pl_parse_numa_maps_line(p, line, len);
	if (rc < 0)
		p->bad_line = (int)p->n_mappings + 1;
	return rc;
}

static int smaps_cb(void *arg, const char *line, size_t len)
{
	return pl_parse_smaps_line(arg, line, len);
}

int pl_read(const char *procfs_root, pid_t pid, uint64_t expect_start, struct placement *p)
{
	char *text = NULL; /* owned: status, then smaps_rollup */
	size_t len;
	uint64_t st0, st1;
	int rc;

	pl_init(p);
	p->pid = pid;
	if ((rc = proc_start_time(procfs_root, pid, &st0)) < 0)
		goto out;
	if (expect_start && st0 != expect_start) {
		rc = -ESTALE;
		goto out;
	}
	p->start_time = st0;
	if ((rc = proc_read_file(procfs_root, pid, "status", 64 * 1024, &text, &len)) < 0)
		goto out;
	if ((rc = pl_parse_status(p, text)) < 0)
		goto out;
	/* A zombie has no memory left to place; its files read empty. */
	if (p->zombie) {
		rc = -ESRCH;
		goto out;
	}
	free(text);
	text = NULL;
	if ((rc = proc_read_file(procfs_root, pid, "smaps_rollup", 64 * 1024, &text, &len)) < 0)
		goto out;
	/* A kernel thread has no mm: an empty rollup and an empty numa_maps. */
	if (len && (rc = pl_parse_rollup_thp(text, &p->rollup_thp_kb)) < 0)
		goto out;
	if ((rc = proc_read_lines(procfs_root, pid, "numa_maps", numa_maps_cb, p)) < 0)
		goto out;
	{
		struct pl_smaps_reader st;
		/* smaps walks the page tables again (100 MB of text at 100 000 mappings): only when
		 * there is THP to attribute. maps gives the ends without a walk. */
		p->smaps_read = p->rollup_thp_kb > 0;
		pl_smaps_begin(&st, p);
		if ((rc = proc_read_lines(procfs_root, pid, p->smaps_read ? "smaps" : "maps",
					  smaps_cb, &st)) < 0)
			goto out;
	}
	if ((rc = proc_start_time(procfs_root, pid, &st1)) < 0)
		goto out;
	if (st1 != st0) {
		rc = -ESTALE;
		goto out;
	}
	rc = pl_summarise(p);
out:
	free(text);
	if (rc < 0) {
		int line = p->bad_line;
		pl_free(p);
		p->bad_line = line;
	}
	return rc;
}
