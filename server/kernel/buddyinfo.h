/* /proc/buddyinfo: free blocks per order, per zone, per node ("Node 0, zone   Normal  13 854 ..."),
 * and the fragmentation figures the kernel derives from the same counts in mm/vmstat.c (its
 * debugfs files extfrag/unusable_index and extfrag/extfrag_index), computed here the same way so a
 * record can say why an order-9 (2 MiB) or order-18 (1 GiB) allocation failed on a node:
 *
 *   fill_contig_page_info(order k):  free_pages          = sum over orders o of  n_o << o
 *                                    free_blocks_total   = sum of n_o
 *                                    free_blocks_suitable = sum over o >= k of n_o << (o - k)
 *   unusable_free_index(k)   = 1000 * (free_pages - (free_blocks_suitable << k)) / free_pages
 *                              (1000 when nothing is free): the share of free memory in blocks too
 *                              small for order k;
 *   __fragmentation_index(k) = 0 when nothing is free; -1000 when a suitable block exists (the
 *                              allocation would succeed: not a fragmentation failure); otherwise
 *                              1000 - (1000 + 1000 * free_pages / 2^k) / free_blocks_total, with
 *                              integer division as in the kernel: towards 0 the failure is for
 *                              lack of memory, towards 1000 for fragmentation.
 * Both are in thousandths (the kernel prints them as d.ddd). The kernel computes them per zone; a
 * node's figure here is computed from the sum of its zones' counts per order (a block of any zone
 * of the node serves a node-bound request that may use any of them). */
#ifndef MPD_KERNEL_BUDDYINFO_H
#define MPD_KERNEL_BUDDYINFO_H

#include <stdint.h>

#define BUDDY_MAX_ORDERS 16          /* NR_PAGE_ORDERS is 11 on x86-64; some configs have more */
#define BUDDY_MAX_ZONES  256         /* lines in all */

struct buddy_zone {
	unsigned node;
	char zone[16];
	int norders;
	uint64_t free[BUDDY_MAX_ORDERS]; /* free blocks of each order */
};

struct buddyinfo {
	int n;
	struct buddy_zone z[BUDDY_MAX_ZONES];
};

/* Parses the text of /proc/buddyinfo. 0, or -EINVAL for a line of another shape (-E2BIG: too
 * many lines or orders). */
int buddy_parse(const char *text, struct buddyinfo *b);
/* Reads and parses procfs_root/buddyinfo. 0 or -errno. */
int buddy_read(const char *procfs_root, struct buddyinfo *b);
/* The free blocks per order of one node, summed over its zones; returns the number of orders
 * (0 when the node has no line). */
int buddy_node(const struct buddyinfo *b, unsigned node, uint64_t free[BUDDY_MAX_ORDERS]);

struct buddy_index {
	uint64_t free_pages, free_blocks_total, free_blocks_suitable;
	int unusable;                    /* thousandths, 0..1000 */
	int fragmentation;               /* thousandths; -1000: a suitable block is free */
};
/* The kernel's two indices for an allocation of `order` from these counts. */
void buddy_index(const uint64_t *free, int norders, unsigned order, struct buddy_index *out);

#endif
