/* The memory counters an operation records (kernel/mmcounters.c), read from generated procfs and
 * sysfs trees: the vmstat counters of the five families only and in file order, each online
 * node's numastat, buddyinfo's zones and orders per node, and what is skipped rather than
 * guessed (a line that does not parse, a name too long to keep). The machine's real files are read
 * too, for their shape: the parser is the one the daemon runs on this kernel. */
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/kernel/mmcounters.h"
#include "tests/unit/check_main.h"

static char root[64];

#include "tests/unit/tree.h"

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-mmc-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const struct mm_counter *counter(const struct mm_counter *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return &c[i];
	return NULL;
}

START_TEST(generated_tree_reads_as_written)
{
	struct mm_snapshot *s = malloc(sizeof *s);
	char name[80];

	/* one of the families, but 60 characters: longer than a counter keeps, so skipped, not cut */
	memcpy(name, "thp_", 4);
	memset(name + 4, 'x', 56);
	name[60] = '\0';
	char vm[512];
	snprintf(vm, sizeof vm, "nr_free_pages 100\nthp_fault_alloc 7\ncompact_stall 3\nnuma_hit x12\n%s 5\n"
		 "pgmigrate_success 18446744073709551615\nhtlb_buddy_alloc_success 2\npgfault 99\nnuma_miss 4", name);
	put(root, "proc/vmstat", vm);
	put(root, "sys/devices/system/node/online", "0,2");
	put(root, "sys/devices/system/node/node0/numastat", "numa_hit 10\nnuma_miss 1\nother_node 2");
	put(root, "sys/devices/system/node/node2/numastat", "numa_hit 20");
	put(root, "proc/buddyinfo", "Node 0, zone      DMA      1      2      3\n"
	    "Node 0, zone   Normal   1838   1118    5    4\n"
	    "Node 2, zone   Normal     9      8\n"
	    "garbage line\n"
	    "Node x, zone Normal 1");

	char procfs[PATH_MAX], sysfs[PATH_MAX];
	snprintf(procfs, sizeof procfs, "%s/proc", root);
	snprintf(sysfs, sizeof sysfs, "%s/sys", root);
	ck_assert_int_eq(mmc_read(procfs, sysfs, s), 0);

	ck_assert_int_eq(s->n, 5);   /* thp_, compact_, pgmigrate_, htlb_buddy_alloc_, numa_miss */
	ck_assert_str_eq(s->c[0].name, "thp_fault_alloc");
	ck_assert_uint_eq(s->c[0].v, 7);
	ck_assert_str_eq(s->c[1].name, "compact_stall");
	ck_assert_uint_eq(counter(s->c, s->n, "pgmigrate_success")->v, UINT64_MAX);
	ck_assert_uint_eq(counter(s->c, s->n, "numa_miss")->v, 4);   /* the last line, no newline */
	ck_assert_ptr_null(counter(s->c, s->n, "numa_hit"));         /* "x12" does not parse */
	ck_assert_ptr_null(counter(s->c, s->n, "pgfault"));          /* not one of the families */

	ck_assert_int_eq(s->nnodes, 2);
	ck_assert_uint_eq(s->nodes[0].id, 0);
	ck_assert_int_eq(s->nodes[0].nstat, 3);
	ck_assert_str_eq(s->nodes[0].stat[2].name, "other_node");
	ck_assert_uint_eq(s->nodes[1].id, 2);
	ck_assert_int_eq(s->nodes[1].nstat, 1);
	ck_assert_uint_eq(s->nodes[1].stat[0].v, 20);

	ck_assert_int_eq(s->nodes[0].nzones, 2);
	ck_assert_str_eq(s->nodes[0].zone[0].name, "DMA");
	ck_assert_uint_eq(s->nodes[0].zone[0].nr_free[2], 3);
	ck_assert_str_eq(s->nodes[0].zone[1].name, "Normal");
	ck_assert_uint_eq(s->nodes[0].zone[1].nr_free[0], 1838);
	ck_assert_uint_eq(s->nodes[0].zone[1].nr_free[3], 4);
	ck_assert_int_eq(s->nodes[1].nzones, 1);
	ck_assert_uint_eq(s->nodes[1].zone[0].nr_free[1], 8);
	ck_assert_int_eq(s->norders, 4);
	free(s);
}
END_TEST

START_TEST(missing_files)
{
	struct mm_snapshot *s = malloc(sizeof *s);
	char procfs[PATH_MAX];

	snprintf(procfs, sizeof procfs, "%s/proc", root);
	/* no vmstat: an error; no numastat, no buddyinfo: empty parts */
	ck_assert_int_eq(mmc_read(procfs, root, s), -ENOENT);
	put(root, "proc/vmstat", "thp_fault_alloc 1");
	ck_assert_int_eq(mmc_read(procfs, root, s), 0);
	ck_assert_int_eq(s->n, 1);
	ck_assert_int_eq(s->nnodes, 0);
	free(s);
}
END_TEST

/* This kernel's files: every node online has its numastat and at least one zone, 11 orders on
 * x86-64 (MAX_PAGE_ORDER 10), and the families the conditions record are there. */
START_TEST(this_kernel)
{
	struct mm_snapshot *s = malloc(sizeof *s);

	ck_assert_int_eq(mmc_read("/proc", "/sys", s), 0);
	ck_assert_ptr_nonnull(counter(s->c, s->n, "numa_hit"));
	ck_assert_ptr_nonnull(counter(s->c, s->n, "compact_stall"));
	ck_assert_int_ge(s->nnodes, 1);
	for (int i = 0; i < s->nnodes; i++) {
		ck_assert_int_ge(s->nodes[i].nstat, 6);
		ck_assert_int_ge(s->nodes[i].nzones, 1);
	}
#ifdef __x86_64__
	ck_assert_int_eq(s->norders, 11);
#endif
	free(s);
}
END_TEST

static Suite *mmcounters_suite(void)
{
	Suite *s = suite_create("mmcounters");
	TCase *tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, generated_tree_reads_as_written);
	tcase_add_test(tc, missing_files);
	tcase_add_test(tc, this_kernel);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(mmcounters_suite)
