/* HugeTLB pools: kernel/mm/hugepages/hugepages-<kB>kB/ (global, per size) and
 * devices/system/node/nodeN/hugepages/hugepages-<kB>kB/ (per node, only on nodes with memory).
 * A write of nr_hugepages "succeeds" even when the kernel got fewer pages: callers read back.
 * Every function returns 0 or -errno. */
#ifndef MPD_KERNEL_HUGETLB_H
#define MPD_KERNEL_HUGETLB_H

#include <stdbool.h>
#include <stdint.h>

#include "server/kernel/sysfs.h"
#include "server/kernel/topology.h"

struct htlb_node {
	unsigned id;
	uint64_t nr, free, surplus;
};

struct htlb_pool {
	uint64_t size_kb;
	uint64_t nr, free, resv, surplus, overcommit;
	int n_nodes;                        /* nodes that have a pool of this size, ascending id */
	struct htlb_node nodes[TOPO_MAX_NODES];
};

/* 1 if the kernel has hugetlb pages of this size, 0 if not. */
int htlb_size_exists(const char *sysfs_root, uint64_t size_kb);
/* 1 if node has a pool of this size (an online node with memory), 0 if not. */
int htlb_node_exists(const char *sysfs_root, uint64_t size_kb, unsigned node);

/* The pool of one size: global counters and every online node that has the per-node directory. */
int htlb_read_pool(const char *sysfs_root, uint64_t size_kb, struct htlb_pool *p);

/* nr_hugepages, globally (node < 0) or of one node. */
int htlb_read_nr(const char *sysfs_root, uint64_t size_kb, int node, uint64_t *nr);
/* Writes nr_hugepages with one write(2), globally (node < 0) or of one node. */
int htlb_write_nr(const char *sysfs_root, uint64_t size_kb, int node, uint64_t count);

/* Opens nr_hugepages (global when node < 0) for a run of writes and read-backs. */
int htlb_open_nr(const char *sysfs_root, uint64_t size_kb, int node, struct kfs_file *f);

/* One step of a resize: nr_hugepages written, then read back (the kernel reports success while
 * giving fewer pages). elapsed_ns is CLOCK_MONOTONIC around the two, taken where they happen. */
struct htlb_step {
	uint64_t written, after;
	int64_t elapsed_ns;
	int64_t started_ns;     /* CLOCK_REALTIME when the write began */
};

/* What the next step from now writes: batch pages toward goal, fewer to land on it. */
static inline uint64_t htlb_next_count(uint64_t now, uint64_t goal, uint64_t batch)
{
	if (goal > now)
		return goal - now < batch ? goal : now + batch;
	return now - goal < batch ? goal : now - batch;
}

/* Steps in one run at most: a run's answer through the helper is one fixed-size message
 * (server/priv/proto.h). */
#define HTLB_RUN_MAX 32

/* Steps from `from` toward `goal` (up or down), `batch` pages per write, back to back: stops at the
 * goal, after `max` steps, after a step that moved nothing toward the goal, once budget_ns has
 * passed since the first write, or at an error. Steps are run back to back because the kernel's
 * allocation measurably slows when the CPU idled between them (a thread woken for each step: +5 to
 * 12 % per page, bench/README.md): the runs keep the measurement the kernel's work. Fills
 * steps[0 .. *n - 1], also when it fails (the steps before the error). 0 or -errno. */
int htlb_run_steps(struct kfs_file *f, uint64_t from, uint64_t goal, uint64_t batch, unsigned max, int64_t budget_ns,
		   struct htlb_step *steps, unsigned *n);

/* Compacts all memory once (procfs sys/vm/compact_memory). */
int htlb_compact(const char *procfs_root);

/* The /proc/vmstat counters that explain a resize; absent ones read 0. */
struct htlb_vmstat {
	uint64_t buddy_alloc_success, buddy_alloc_fail;
	uint64_t compact_stall, compact_success, compact_fail;
};
int htlb_vmstat_read(const char *procfs_root, struct htlb_vmstat *v);

#endif
