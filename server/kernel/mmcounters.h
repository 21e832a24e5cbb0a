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

/* Reads all three. A file that is missing leaves its part empty (0, not an error: a kernel
 * without NUMA has no numastat). Returns 0, or -errno when /proc/vmstat itself is unreadable. */
int mmc_read(const char *procfs_root, const char *sysfs_root, struct mm_snapshot *s);

#endif
