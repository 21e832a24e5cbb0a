/* The kernel's memory counters an operation records the deltas of, and the free blocks it records
 * before and after: /proc/vmstat (thp_*, compact_*, htlb_buddy_alloc_*, numa_*, pgmigrate_*:
 * numa_hint_faults*, numa_pages_migrated and numa_pte_updates among them), each node's numastat
 * (numa_hit, numa_miss, ..., other_node) and /proc/buddyinfo (free blocks per order per zone). */
#ifndef MPD_KERNEL_MMCOUNTERS_H
#define MPD_KERNEL_MMCOUNTERS_H

#include <stdint.h>

#include "server/kernel/topology.h"

#define MMC_MAX_COUNTERS 128
#define MMC_MAX_NUMASTAT 8
#define MMC_MAX_ORDERS   16
#define MMC_MAX_ZONES    4

struct mm_counter {
	char name[48];
	uint64_t v;
};

struct mm_node {
	unsigned id;
	int nstat;
	struct mm_counter stat[MMC_MAX_NUMASTAT];      /* nodeN/numastat, in file order */
	int nzones;
	struct {
		char name[16];                             /* DMA, DMA32, Normal, Movable */
		uint64_t nr_free[MMC_MAX_ORDERS];
	} zone[MMC_MAX_ZONES];
};

struct mm_snapshot {
	int n;
	struct mm_counter c[MMC_MAX_COUNTERS];         /* the vmstat counters above, in file order */
	int norders;                                   /* columns of buddyinfo (11 on x86-64) */
	int nnodes;
	struct mm_node nodes[TOPO_MAX_NODES];
};

/* Reads all three into the whole of *s (TOPO_MAX_NODES nodes). A file that is missing leaves its
 * part empty (0, not an error: a kernel without NUMA has no numastat). Returns 0, or -errno when
 * /proc/vmstat itself is unreadable. Each file by path. */
int mmc_read(const char *procfs_root, const char *sysfs_root, struct mm_snapshot *s);

/* The files of a snapshot held open, for the conditions every recorded operation measures twice:
 * each a pread(2) at offset 0, which regenerates its text (procfs's seq_files restart there,
 * sysfs shows the attribute again), instead of an open, two reads and a close, four times a
 * snapshot. Held only under a root that is sysfs or procfs itself (kfs_on_kernel_fs): a generated
 * tree's files are read by path, since a test may replace them. Each file is opened by the first
 * snapshot that needs it, from any thread; nodeN/numastat for N < 8 (a higher id is read by path:
 * 11 files at most, in the daemon's open-file budget for its own work). A held read that fails
 * (a node taken offline) reads by path. */
struct mmc_files;
struct mmc_files *mmc_files_new(const char *procfs_root, const char *sysfs_root); /* NULL: out of memory;
                                                                                   * the roots borrowed */
void mmc_files_free(struct mmc_files *f);                                         /* NULL is fine */

/* A snapshot as mmc_read reads it, through f (NULL: by path under the roots), allocated for this
 * host's online nodes only: nodes[] has room for nnodes, not TOPO_MAX_NODES (a snapshot is then
 * ~8 KiB, not 74), so it is never copied whole. The caller frees it with free(). NULL with *err
 * set (-errno) when /proc/vmstat is unreadable or memory is short. */
struct mm_snapshot *mmc_snap(struct mmc_files *f, const char *procfs_root, const char *sysfs_root, int *err);

#endif
