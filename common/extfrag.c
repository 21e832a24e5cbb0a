#include "common/extfrag.h"

void frag_fill(const uint64_t *nr_free, int norders, unsigned order, struct frag_info *fi)
{
	fi->free_pages = fi->free_blocks_total = fi->free_blocks_suitable = 0;
	for (int o = 0; o < norders; o++) {
		fi->free_blocks_total += nr_free[o];
		fi->free_pages += nr_free[o] << o;
		if ((unsigned)o >= order)
			fi->free_blocks_suitable += nr_free[o] << (o - (int)order);
	}
}

int frag_unusable_index(unsigned order, const struct frag_info *fi)
{
	if (fi->free_pages == 0)
		return 1000;
	return (int)((fi->free_pages - (fi->free_blocks_suitable << order)) * 1000ULL / fi->free_pages);
}

int frag_fragmentation_index(unsigned order, const struct frag_info *fi)
{
	uint64_t requested = 1ULL << order;

	if (!fi->free_blocks_total)
		return 0;
	if (fi->free_blocks_suitable)
		return -1000;
	return 1000 - (int)((1000 + fi->free_pages * 1000ULL / requested) / fi->free_blocks_total);
}
