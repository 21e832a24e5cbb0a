/* What this kernel offers, detected once at start by probing files and syscalls. */
#ifndef MPD_KERNEL_CAPS_H
#define MPD_KERNEL_CAPS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/kernel/mpol.h"

#define CAPS_MAX_SIZES 16

struct caps {
	char kernel_release[65];
	bool thp;                        /* transparent_hugepage/ exists */
	int n_mthp_sizes;                /* per-size THP directories (6.8+) */
	uint64_t mthp_sizes_kb[CAPS_MAX_SIZES];
	int n_hugetlb_sizes;             /* hugetlb page sizes (kernel/mm/hugepages) */
	uint64_t hugetlb_sizes_kb[CAPS_MAX_SIZES];
	bool weighted_interleave;        /* kernel/mm/mempolicy/weighted_interleave (6.9) */
	bool numa_balancing;             /* /proc/sys/kernel/numa_balancing */
	bool madv_collapse;              /* madvise(MADV_COLLAPSE) accepted (6.1) */
	int cgroup_version;              /* 1, 2, or 0 when neither is mounted */
	struct mpol_caps mpol;           /* policy modes, flags and THP prctl this kernel takes */
};

/* Fills *c from the given roots. Never fails: what is missing is reported as absent. Forks once
 * (mpol_probe): call before any thread starts. */
void caps_detect(struct caps *c, const char *sysfs_root, const char *procfs_root);

#endif
