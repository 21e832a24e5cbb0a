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

/* A resize's pool file: opened once, then a run of steps. Each step writes count and reads
 * nr_hugepages back; elapsed_ns is the time of the two, measured where they happen (in the
 * privileged helper when one runs, so the socket round trip is not in it). */
struct htlb_nr {
	uint64_t size_kb;
	int node;
	struct kfs_file f;      /* owned; unused (fd -1) with the helper */
};
int htlb_nr_open(const char *sysfs_root, uint64_t size_kb, int node, struct htlb_nr *h);
int htlb_nr_step(struct htlb_nr *h, uint64_t count, uint64_t *after, int64_t *elapsed_ns);
void htlb_nr_close(struct htlb_nr *h);

/* Compacts all memory once (procfs sys/vm/compact_memory). */
int htlb_compact(const char *procfs_root);

/* The /proc/vmstat counters that explain a resize; absent ones read 0. */
struct htlb_vmstat {
	uint64_t buddy_alloc_success, buddy_alloc_fail;
	uint64_t compact_stall, compact_success, compact_fail;
};
int htlb_vmstat_read(const char *procfs_root, struct htlb_vmstat *v);

#endif
