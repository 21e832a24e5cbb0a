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

json_t *frag_node_json(json_t *zones, const uint64_t *nr_free, int norders)
{
	json_t *blocks = json_array(), *unusable = json_array(), *frag = json_array();
	struct frag_info fi = { 0 };

	for (int o = 0; o < norders; o++) {
		frag_fill(nr_free, norders, (unsigned)o, &fi);
		json_array_append_new(blocks, json_integer((json_int_t)nr_free[o]));
		json_array_append_new(unusable, json_real(frag_unusable_index((unsigned)o, &fi) / 1000.0));
		json_array_append_new(frag, json_real(frag_fragmentation_index((unsigned)o, &fi) / 1000.0));
	}
	if (norders == 0)
		frag_fill(nr_free, 0, 0, &fi);
	return json_pack("{s:o, s:o, s:I, s:o, s:o}", "zones", zones, "free_blocks", blocks, "free_pages",
			 (json_int_t)fi.free_pages, "unusable_index", unusable, "fragmentation_index", frag);
}
