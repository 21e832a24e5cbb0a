/* history compare's ids (ops/compare.c compare_parse_ids), the query text a client sends: any input
 * either parses into 2..16 columns of distinct positive ids (at most 256), columns in order, or
 * is refused as request.bad_query. */
#include "server/ops/compare.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fz_cstr(data, size);
	struct compare_cols cc;
	mp_err e = { 0 };

	if (compare_parse_ids(s, &cc, &e) == 0) {
		FZ_ASSERT(cc.ncols >= 2 && cc.ncols <= COMPARE_MAX_RUNS, "%d columns", cc.ncols);
		FZ_ASSERT(cc.nids >= cc.ncols && cc.nids <= COMPARE_MAX_IDS, "%d ids", cc.nids);
		FZ_ASSERT(cc.col[0] == 0 && cc.col[cc.nids - 1] == cc.ncols - 1, "columns");
		for (int i = 0; i < cc.nids; i++) {
			FZ_ASSERT(cc.ids[i] > 0, "id %lld", (long long)cc.ids[i]);
			FZ_ASSERT(i == 0 || cc.col[i] == cc.col[i - 1] || cc.col[i] == cc.col[i - 1] + 1, "order");
			for (int j = 0; j < i; j++)
				FZ_ASSERT(cc.ids[i] != cc.ids[j], "id %lld twice", (long long)cc.ids[i]);
		}
	} else {
		FZ_ASSERT(e.code == MPE_REQUEST_BAD_QUERY, "code %d", e.code);
	}
	free(s);
	return 0;
}
