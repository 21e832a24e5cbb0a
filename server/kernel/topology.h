/* The NUMA topology as sysfs publishes it (devices/system/node): which nodes exist, their CPUs,
 * memory, distances and hugetlb page sizes. Read fresh on every call: nodes and memory can be
 * hot-plugged, and a snapshot costs a few dozen small reads. CPU-less and memory-less nodes are
 * ordinary nodes here, with an empty CPU set or zero memory. */
#ifndef MPD_KERNEL_TOPOLOGY_H
#define MPD_KERNEL_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/parse.h"
#include "server/kernel/caps.h"

/* At most this many online nodes (ids themselves may be sparse, anything below IDSET_MAX). */
#define TOPO_MAX_NODES 64

struct topo_node {
	unsigned id;
	idset cpus;                        /* from nodeN/cpulist; empty on a CPU-less node */
	bool has_cpu;                      /* in node/has_cpu (or, without that file, cpus non-empty) */
	bool has_memory;                   /* in node/has_memory (or, without it, MemTotal > 0) */
	uint64_t mem_total_kb;             /* "Node N MemTotal:" */
	uint64_t mem_free_kb;              /* "Node N MemFree:" */
	unsigned distance[TOPO_MAX_NODES]; /* distance[i] is to the i-th online node, t->nodes[i] */
	int n_hp_sizes;                    /* hugetlb sizes this node has a pool for, ascending */
	uint64_t hp_sizes_kb[CAPS_MAX_SIZES];
};

struct topology {
	idset possible;
	idset online;
	int n_nodes;                       /* online nodes, ascending id */
	struct topo_node nodes[TOPO_MAX_NODES];
};

/* Reads the topology under sysfs_root (the "/sys" directory or a generated one) into *t, which
 * is about 40 KiB: callers allocate it on the heap. Returns 0 or -errno: the errno of a file that
 * could not be read, -EINVAL for text that does not parse (a distance row whose length is not the
 * number of online nodes, a meminfo without MemTotal), -E2BIG for more than TOPO_MAX_NODES. */
int topo_read(const char *sysfs_root, struct topology *t);

/* What a launch checks its node and CPU lists against (ops/launch_req.c): t->online and the
 * ids in t->nodes, each node's has_memory (node/has_memory; nodeN/meminfo on a kernel without
 * that file) and, with_cpus, its CPU list. Nothing else is read: possible, has_cpu, distances,
 * mem_*_kb (unless meminfo was the fallback) and the hugepage sizes stay zero. Two files and one
 * a node with_cpus, where topo_read opens two more and four a node. Same return values. */
int topo_read_nodes(const char *sysfs_root, struct topology *t, bool with_cpus);

/* node/online and node/has_memory held open for topo_read_nodes_held, the launches' read: each a
 * pread(2) at offset 0 (sysfs regenerates the text there, so a hot-plugged node is seen at once)
 * instead of an open, two reads and a close, which were a tenth of a launch's time in the daemon
 * (bench/README.md section 8). Held only when the root is sysfs itself (kfs_on_kernel_fs): a
 * generated tree's files are read by path, since a test may replace them. Each file is opened by
 * the first read that needs it, from any thread; one that is absent (has_memory before 2.6.x) or
 * cannot be held is read by path, as topo_read_nodes does. */
struct topo_held;
struct topo_held *topo_held_new(const char *sysfs_root);   /* NULL: out of memory; root borrowed */
void topo_held_free(struct topo_held *h);                   /* NULL is fine */
/* topo_read_nodes through h: the same results and return values. */
int topo_read_nodes_held(struct topo_held *h, struct topology *t, bool with_cpus);

/* Only the online nodes (node/online): for a caller that needs their ids and nothing of the rest
 * topo_read reads, about nine more files a node. 0 or -errno (-EINVAL: text that does not parse). */
int topo_read_online(const char *sysfs_root, idset *online);

/* Index of node id in t->nodes, or -1. */
int topo_index(const struct topology *t, unsigned id);

/* Parses a nodeN/meminfo text ("Node 0 MemTotal:   123 kB", column widths vary) for one key
 * ("MemTotal"). The node number in each line must be `node`. 0, or -EINVAL / -ENOENT. */
int topo_meminfo_value(const char *text, unsigned node, const char *key, uint64_t *kb);

#endif
