/* A small generated sys/ + proc/ tree for the harnesses that need a catalogue or a topology,
 * made once per process under /tmp and removed at exit by the process that made it (the replay
 * driver's children inherit it and leave it alone). Nodes 0, 1 and 3 are online (2 is possible
 * only); 0 and 3 have memory and 2M / 1G pools, 1 has neither. */
#ifndef MPD_FUZZ_TREE_H
#define MPD_FUZZ_TREE_H

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

static char fz_root[64], fz_sys[80], fz_proc[80];   /* fz_root: at most 40 + 15 bytes */
static pid_t fz_owner;

static void fz_write(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	for (char *p = path + strlen(fz_root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FZ_ASSERT((f = fopen(path, "w")) && fputs(text, f) >= 0 && fclose(f) == 0, "writing %s", path);
}

static int fz_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void fz_tree_remove(void)
{
	if (getpid() == fz_owner)
		nftw(fz_root, fz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *const fz_pool_files[] = { "nr_hugepages", "free_hugepages", "surplus_hugepages", NULL };

static void fz_pool(const char *dir)
{
	char rel[256];
	for (int i = 0; fz_pool_files[i]; i++) {
		snprintf(rel, sizeof rel, "%s/%s", dir, fz_pool_files[i]);
		fz_write(fz_sys, rel, "0\n");
	}
}

static void fz_tree_make(void)
{
	static const char *const sizes[] = { "hugepages-2048kB", "hugepages-1048576kB" };
	char rel[256];

	if (fz_root[0])
		return;
	/* Under $TMPDIR when set: a crash skips the clean-up, and `make fuzz` removes its own. */
	snprintf(fz_root, sizeof fz_root, "%.40s/mpd-fuzz-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	FZ_ASSERT(mkdtemp(fz_root), "mkdtemp");
	fz_owner = getpid();
	atexit(fz_tree_remove);
	snprintf(fz_sys, sizeof fz_sys, "%s/sys", fz_root);
	snprintf(fz_proc, sizeof fz_proc, "%s/proc", fz_root);

#define THP "kernel/mm/transparent_hugepage/"
	fz_write(fz_sys, THP "enabled", "always [madvise] never\n");
	fz_write(fz_sys, THP "defrag", "always defer defer+madvise [madvise] never\n");
	fz_write(fz_sys, THP "shmem_enabled", "always within_size advise [never] deny force\n");
	fz_write(fz_sys, THP "use_zero_page", "1\n");
	fz_write(fz_sys, THP "khugepaged/defrag", "1\n");
	fz_write(fz_sys, THP "khugepaged/pages_to_scan", "4096\n");
	fz_write(fz_sys, THP "khugepaged/scan_sleep_millisecs", "10000\n");
	fz_write(fz_sys, THP "khugepaged/alloc_sleep_millisecs", "60000\n");
	fz_write(fz_sys, THP "khugepaged/max_ptes_none", "511\n");
	fz_write(fz_sys, THP "khugepaged/max_ptes_swap", "64\n");
	fz_write(fz_sys, THP "khugepaged/max_ptes_shared", "256\n");
	fz_write(fz_sys, THP "hugepages-2048kB/enabled", "always inherit madvise [never]\n");
	fz_write(fz_sys, THP "hugepages-2048kB/shmem_enabled", "always inherit within_size advise [never] deny force\n");
	fz_write(fz_sys, THP "hugepages-64kB/enabled", "always [inherit] madvise never\n");
#undef THP
	fz_write(fz_sys, "kernel/mm/mempolicy/weighted_interleave/node0", "1\n");
	fz_write(fz_sys, "kernel/mm/mempolicy/weighted_interleave/node3", "4\n");
	fz_write(fz_proc, "sys/kernel/numa_balancing", "0\n");
	fz_write(fz_proc, "sys/vm/compaction_proactiveness", "20\n");
	fz_write(fz_proc, "sys/vm/zone_reclaim_mode", "garbage\n");   /* unavailable: does not parse */
	fz_write(fz_proc, "sys/vm/nr_overcommit_hugepages", "0\n");

	for (int s = 0; s < 2; s++) {
		snprintf(rel, sizeof rel, "kernel/mm/hugepages/%s", sizes[s]);
		fz_pool(rel);
		snprintf(rel, sizeof rel, "kernel/mm/hugepages/%s/resv_hugepages", sizes[s]);
		fz_write(fz_sys, rel, "0\n");
		snprintf(rel, sizeof rel, "kernel/mm/hugepages/%s/nr_overcommit_hugepages", sizes[s]);
		fz_write(fz_sys, rel, "0\n");
	}
#define NODE "devices/system/node/"
	fz_write(fz_sys, NODE "possible", "0-3\n");
	fz_write(fz_sys, NODE "online", "0-1,3\n");
	fz_write(fz_sys, NODE "has_cpu", "0\n");
	fz_write(fz_sys, NODE "has_memory", "0,3\n");
	fz_write(fz_sys, NODE "node0/cpulist", "0-1\n");
	fz_write(fz_sys, NODE "node0/distance", "10 20 30\n");
	fz_write(fz_sys, NODE "node0/meminfo", "Node 0 MemTotal:       4194304 kB\nNode 0 MemFree:        3000000 kB\n");
	fz_write(fz_sys, NODE "node1/cpulist", "\n");
	fz_write(fz_sys, NODE "node1/distance", "20 10 20\n");
	fz_write(fz_sys, NODE "node1/meminfo", "Node 1 MemTotal:       0 kB\nNode 1 MemFree:        0 kB\n");
	fz_write(fz_sys, NODE "node3/cpulist", "\n");
	fz_write(fz_sys, NODE "node3/distance", "30 20 10\n");
	fz_write(fz_sys, NODE "node3/meminfo", "Node 3 MemTotal:       2097152 kB\nNode 3 MemFree:        2000000 kB\n");
	for (int n = 0; n < 4; n += 3)
		for (int s = 0; s < 2; s++) {
			snprintf(rel, sizeof rel, NODE "node%d/hugepages/%s", n, sizes[s]);
			fz_pool(rel);
		}
#undef NODE
}

#endif
