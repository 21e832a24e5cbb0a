/* The kernel's unusable and fragmentation indices (mm/vmstat.c), on free-block counts whose answer
 * follows from the definitions by hand. */
#include "common/extfrag.h"
#include "tests/unit/check_main.h"

static void idx(const uint64_t *nr_free, unsigned order, int *unusable, int *frag)
{
	struct frag_info fi;

	frag_fill(nr_free, 11, order, &fi);
	*unusable = frag_unusable_index(order, &fi);
	*frag = frag_fragmentation_index(order, &fi);
}

START_TEST(nothing_free_is_all_unusable_and_no_fragmentation)
{
	uint64_t nr[11] = { 0 };
	int u, f;

	idx(nr, 9, &u, &f);
	ck_assert_int_eq(u, 1000);
	ck_assert_int_eq(f, 0);
}
END_TEST

START_TEST(a_free_block_large_enough_means_the_allocation_would_succeed)
{
	uint64_t nr[11] = { [0] = 512, [9] = 1 };   /* 1024 free pages, half in one order-9 block */
	int u, f;

	idx(nr, 9, &u, &f);
	ck_assert_int_eq(u, 500);        /* the 512 single pages cannot serve order 9 */
	ck_assert_int_eq(f, -1000);      /* a suitable block exists */
	idx(nr, 0, &u, &f);
	ck_assert_int_eq(u, 0);          /* every free page serves order 0 */
}
END_TEST

START_TEST(only_base_pages_free_is_fragmentation)
{
	uint64_t nr[11] = { [0] = 1000 };
	int u, f;

	idx(nr, 9, &u, &f);
	ck_assert_int_eq(u, 1000);
	/* 1000 - (1000 + 1000 * 1000 / 512) / 1000 = 1000 - 2953 / 1000 = 998 */
	ck_assert_int_eq(f, 998);
}
END_TEST

START_TEST(few_large_blocks_short_of_the_order_is_lack_of_memory)
{
	uint64_t nr[11] = { [9] = 4 };    /* 2048 free pages in 4 order-9 blocks; order 10 asked */
	int u, f;

	idx(nr, 10, &u, &f);
	ck_assert_int_eq(u, 1000);
	/* 1000 - (1000 + 2048 * 1000 / 1024) / 4 = 1000 - 750 = 250 */
	ck_assert_int_eq(f, 250);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("extfrag");
	TCase *t = tcase_create("indices");
	tcase_add_test(t, nothing_free_is_all_unusable_and_no_fragmentation);
	tcase_add_test(t, a_free_block_large_enough_means_the_allocation_would_succeed);
	tcase_add_test(t, only_base_pages_free_is_fragmentation);
	tcase_add_test(t, few_large_blocks_short_of_the_order_is_lack_of_memory);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
