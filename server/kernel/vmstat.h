/* Named counters of /proc/vmstat, for the deltas an operation records (pgmigrate_*, thp_*). */
#ifndef MPD_KERNEL_VMSTAT_H
#define MPD_KERNEL_VMSTAT_H

#include <stdint.h>

/* Fills vals[i] with the counter names[i] (0 when this kernel lacks it). 0 or -errno. */
int vmstat_read(const char *procfs_root, const char *const *names, int n, uint64_t *vals);

#endif
