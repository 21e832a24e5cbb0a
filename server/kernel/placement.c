/* Summing a placement per node and reading a live process's files (the parsers are in
 * placement_parse.c). */
#include "server/kernel/placement.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	for (size_t i = 0; i < p->n_policies; i++)
		p->policies[i].mappings = p->policies[i].bytes = p->policies[i].local_bytes = 0;
	for (size_t i = 0; i < p->n_mappings; i++) {
		const struct pl_mapping *m = &p->mappings[i];
		struct pl_policy *pol = &p->policies[m->policy];
		bool names_nodes = pol->names_nodes;
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
		pol->mappings++;
		pol->bytes += total;
		pol->local_bytes += local;
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

/* What a second thread reads while the first walks numa_maps: smaps_rollup (whether there is THP
 * at all) and, when ends are wanted, maps. Each is a walk of the VMA list by the kernel, so on a
 * process with 100 000 mappings reading them beside numa_maps rather than after it takes about a
 * third off the wall time (bench/b_proc.py). */
struct side_read {
	const char *root;              /* borrowed */
	proc_open_fn open;
	pid_t pid;
	bool want_rollup;              /* false: no anonymous THP in the system, the rollup would say 0 */
	bool want_ends;
	int rc;
	uint64_t rollup_thp_kb;
	uint64_t (*ends)[2];           /* owned: (start, end) of each VMA in maps, ascending */
	size_t n_ends, cap_ends;
};

static int maps_line_cb(void *arg, const char *line, size_t len)
{
	struct side_read *sr = arg;
	const char *dash = memchr(line, '-', len), *sp = memchr(line, ' ', len);
	uint64_t v[2] = { 0, 0 };

	if (!dash || !sp || dash > sp)
		return -EINVAL;
	for (int i = 0; i < 2; i++) {
		const char *c = i ? dash + 1 : line, *e = i ? sp : dash;
		if (c == e || e - c > 16)
			return -EINVAL;
		for (; c < e; c++) {
			unsigned d = *c >= '0' && *c <= '9' ? (unsigned)(*c - '0')
				   : *c >= 'a' && *c <= 'f' ? (unsigned)(*c - 'a' + 10) : 16;
			if (d == 16)
				return -EINVAL;
			v[i] = v[i] << 4 | d;
		}
	}
	if (sr->n_ends == sr->cap_ends) {
		size_t nc = sr->cap_ends ? sr->cap_ends * 2 : 1024;
		void *na = realloc(sr->ends, nc * sizeof *sr->ends);
		if (!na)
			return -ENOMEM;
		sr->ends = na;
		sr->cap_ends = nc;
	}
	sr->ends[sr->n_ends][0] = v[0];
	sr->ends[sr->n_ends++][1] = v[1];
	return 0;
}

static void *side_read(void *arg)
{
	struct side_read *sr = arg;
	char *text = NULL; /* owned */
	size_t len;

	if (sr->want_rollup) {
		sr->rc = proc_read_guarded(sr->root, sr->open, sr->pid, PROC_SMAPS_ROLLUP, 64 * 1024, &text, &len);
		/* A kernel thread has no mm: an empty rollup (and an empty numa_maps). */
		if (sr->rc == 0 && len)
			sr->rc = pl_parse_rollup_thp(text, &sr->rollup_thp_kb);
		free(text);
	}
	if (sr->rc == 0 && sr->want_ends)
		sr->rc = proc_read_lines(sr->root, sr->open, sr->pid, PROC_MAPS, maps_line_cb, sr);
	return NULL;
}

/* Whether any process may have anonymous THP: /proc/meminfo's AnonHugePages is the sum of what
 * every smaps_rollup's AnonHugePages counts (PMD-mapped anonymous THP), so 0 there means 0 in the
 * rollup, and the rollup's walk of every VMA (a third of numa_maps' cost at 100 000 mappings) can
 * be skipped. A THP made between the two reads is the same race as between numa_maps and the
 * rollup, which were never read at one instant either. true when meminfo cannot say (a generated
 * tree without the line): then the rollup is read. */
static bool system_has_anon_thp(const char *procfs_root)
{
	char path[4096], buf[8192];
	uint64_t kb;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof path, "%s/meminfo", procfs_root) >= (int)sizeof path ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return true;
	n = read(fd, buf, sizeof buf - 1);   /* about 1.5 KiB: one read of a seq_file gives it all */
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	return pl_parse_rollup_thp(buf, &kb) < 0 || kb > 0;
}

/* Whether every resident base page (not hugetlb) lies on one node: then every mapping with THP is
 * wholly on it, so smaps' per-mapping AnonHugePages would give that node the rollup's figure and
 * nothing else. The node's id in *node; false when there are none or several. */
static bool base_on_one_node(const struct placement *p, unsigned *node)
{
	bool seen = false;

	for (size_t i = 0; i < p->n_mappings; i++) {
		const struct pl_mapping *m = &p->mappings[i];
		if (m->huge)
			continue;
		for (uint32_t c = 0; c < m->n_counts; c++) {
			unsigned id = p->counts[m->first_count + c].node;
			if (seen && id != *node)
				return false;
			*node = id;
			seen = true;
		}
	}
	return seen;
}

/* A summary without smaps (base_on_one_node): the rollup's THP to that node, as pl_summarise gives
 * smaps' figures, never more than the node's base bytes (the two files are read apart). */
static void attribute_rollup(struct placement *p, unsigned node)
{
	uint64_t thp = p->rollup_thp_kb * 1024;

	p->thp_bytes = thp;
	for (int i = 0; i < p->n_nodes; i++) {
		struct pl_node *nd = &p->nodes[i];
		if (nd->id != node)
			continue;
		if (thp > nd->base_bytes)
			thp = nd->base_bytes;
		nd->thp_bytes += thp;
		nd->base_bytes -= thp;
	}
}

/* The ends from maps, matched to the mappings by start (both lists ascend). */
static void apply_ends(struct placement *p, const struct side_read *sr)
{
	size_t j = 0;

	for (size_t i = 0; i < p->n_mappings; i++) {
		while (j < sr->n_ends && sr->ends[j][0] < p->mappings[i].start)
			j++;
		if (j < sr->n_ends && sr->ends[j][0] == p->mappings[i].start)
			p->mappings[i].end = sr->ends[j][1];
	}
}

int pl_read(const char *procfs_root, proc_open_fn open, pid_t pid, uint64_t expect_start, struct placement *p)
{
	return pl_read_opts(procfs_root, open, pid, expect_start, 0, p);
}

int pl_read_opts(const char *procfs_root, proc_open_fn open, pid_t pid, uint64_t expect_start, unsigned flags,
		 struct placement *p)
{
	return pl_read_gated(procfs_root, open, pid, expect_start, flags, NULL, p);
}

/* status into p, and the gate's verdict on it. */
static int read_status(const char *procfs_root, pid_t pid, const struct pl_gate *gate, struct placement *p)
{
	char *text = NULL; /* owned */
	size_t len;
	int rc;

	if ((rc = proc_read_file(procfs_root, pid, "status", 64 * 1024, &text, &len)) == 0 &&
	    (rc = pl_parse_status(p, text)) == 0 && gate)
		rc = gate->may(gate->arg, p) ? PL_REFUSED : 0;
	free(text);
	return rc;
}

int pl_owned_by(const char *procfs_root, pid_t pid, uid_t uid)
{
	struct placement p;
	char path[4096];
	struct stat sb;
	int rc;

	pl_init(&p);
	if ((rc = read_status(procfs_root, pid, NULL, &p)) < 0)
		return rc;
	if (p.uid != (long)uid || p.euid != (long)uid || p.suid != (long)uid)
		return -EPERM;
	/* Dumpable: procfs gives a non-dumpable process's files to root, but not its directory
	 * /proc/PID, which always shows the effective uid (task_dump_owner's exception for procps):
	 * so its status file. */
	if (snprintf(path, sizeof path, "%s/%d/status", procfs_root, (int)pid) >= (int)sizeof path)
		return -ENAMETOOLONG;
	if (stat(path, &sb) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return sb.st_uid == uid ? 0 : -EPERM;
}

int pl_read_gated(const char *procfs_root, proc_open_fn open, pid_t pid, uint64_t expect_start, unsigned flags,
		  const struct pl_gate *gate, struct placement *p)
{
	uint64_t st0, st1;
	unsigned one_node = 0;
	bool rollup_to_node;
	struct side_read sr = { .root = procfs_root, .open = open, .pid = pid, .want_ends = !(flags & PL_NO_ENDS) };
	pthread_t th;
	bool side = false;
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
	/* The caller is judged here, on what anyone may read, before the first guarded open. */
	if ((rc = read_status(procfs_root, pid, gate, p)) != 0)
		goto out;
	/* A zombie has no memory left to place; its files read empty. */
	if (p->zombie) {
		rc = -ESRCH;
		goto out;
	}
	sr.want_rollup = system_has_anon_thp(procfs_root);
	/* Without a second thread (none can be made now) the same reads run one after the other;
	 * with nothing to read beside numa_maps, none is made. */
	if (sr.want_rollup || sr.want_ends) {
		side = pthread_create(&th, NULL, side_read, &sr) == 0;
		if (!side)
			side_read(&sr);
	}
	rc = proc_read_lines(procfs_root, open, pid, PROC_NUMA_MAPS, numa_maps_cb, p);
	if (side)
		pthread_join(th, NULL);
	side = false;
	if (rc < 0 || (rc = sr.rc) < 0)
		goto out;
	p->rollup_thp_kb = sr.rollup_thp_kb;
	/* smaps walks the page tables again (100 MB of text at 100 000 mappings, several times
	 * numa_maps' cost): only when there is THP to attribute to mappings; it gives their ends too.
	 * A summary (no mapping list) of a process whose base pages are all on one node needs no
	 * per-mapping figure: the rollup's THP is that node's (bench/README.md, proc.placement_thp). */
	rollup_to_node = p->rollup_thp_kb > 0 && (flags & PL_NO_ENDS) && base_on_one_node(p, &one_node);
	p->smaps_read = p->rollup_thp_kb > 0 && !rollup_to_node;
	if (p->smaps_read) {
		struct pl_smaps_reader st;
		pl_smaps_begin(&st, p);
		if ((rc = proc_read_lines(procfs_root, open, pid, PROC_SMAPS, smaps_cb, &st)) < 0)
			goto out;
	} else {
		apply_ends(p, &sr);
	}
	/* Again on the status now: the uids may have changed under the reads (an exec of a set-uid
	 * program keeps the pid and the start time), and what was read is shown only if the caller
	 * may see the process as it is after them. */
	if (gate && (rc = read_status(procfs_root, pid, gate, p)) != 0)
		goto out;
	if (p->zombie) {
		rc = -ESRCH;
		goto out;
	}
	if ((rc = proc_start_time(procfs_root, pid, &st1)) < 0)
		goto out;
	if (st1 != st0) {
		rc = -ESTALE;
		goto out;
	}
	if ((rc = pl_summarise(p)) == 0 && rollup_to_node)
		attribute_rollup(p, one_node);
out:
	free(sr.ends);
	if (rc != 0) {
		int line = p->bad_line;
		pl_free(p);
		p->bad_line = line;
	}
	return rc;
}
