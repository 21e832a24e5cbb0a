/* The kernel's fragmentation measures, computed from /proc/buddyinfo's free blocks per order the
 * way mm/vmstat.c computes them for /sys/kernel/debug/extfrag (fill_contig_page_info,
 * unusable_free_index, __fragmentation_index), in thousandths as the kernel keeps them:
 *   free_pages           = sum over orders o of nr_free[o] << o
 *   free_blocks_total    = sum of nr_free[o]
 *   free_blocks_suitable = sum over o >= order of nr_free[o] << (o - order)
 *   unusable index       = (free_pages - (free_blocks_suitable << order)) * 1000 / free_pages
 *                          (1000 when nothing is free): the share of free memory that cannot
 *                          serve an allocation of this order;
 *   fragmentation index  = -1000 when a suitable block exists (the allocation would succeed);
 *                          0 when nothing is free; else
 *                          1000 - (1000 + free_pages * 1000 / 2^order) / free_blocks_total:
 *                          towards 0 a failure would be for lack of memory, towards 1000 for
 *                          fragmentation (the kernel's extfrag_threshold, 500, decides between
 *                          compaction and reclaim on it).
 * The kernel computes them per zone; mempolicyd sums a node's zones' counts first (per node). */
#ifndef MPD_EXTFRAG_H
#define MPD_EXTFRAG_H

#include <jansson.h>
#include <stdint.h>

struct frag_info {
	uint64_t free_pages, free_blocks_total, free_blocks_suitable;
};

void frag_fill(const uint64_t *nr_free, int norders, unsigned order, struct frag_info *fi);
int frag_unusable_index(unsigned order, const struct frag_info *fi);
int frag_fragmentation_index(unsigned order, const struct frag_info *fi);

/* One node's free blocks as JSON, everything derived from nr_free (its zones' counts summed per
 * order): {"zones", "free_blocks": [per order], "free_pages", "unusable_index": [per order,
 * 0..1], "fragmentation_index": [per order, -1 or 0..1]}. zones (an array of names) is stolen.
 * NULL when out of memory. The one builder of this shape: the conditions of an operation when
 * measured (ops/conditions.c) and when read back from their stored form (store/conditions.c). */
json_t *frag_node_json(json_t *zones, const uint64_t *nr_free, int norders);

#endif
