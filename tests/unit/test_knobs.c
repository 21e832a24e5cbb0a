/* The knob catalogue against a tree generated here: static and discovered entries, lookups that
 * must not turn names into paths, typed reads, value checks, unavailable knobs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/kernel/knobs.h"
#include "server/api/api.h"
#include "server/ops/knobs.h"
#include "tests/unit/check_main.h"

static char root[64], sys_root[96], proc_root[96];

#include "tests/unit/tree.h"

#define THP "kernel/mm/transparent_hugepage/"

static void make_tree(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-knobs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(sys_root, sizeof sys_root, "%s/sys", root);
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	put(sys_root, THP "enabled", "always [madvise] never");
	put(sys_root, THP "defrag", "always defer defer+madvise [madvise] never");
	put(sys_root, THP "shmem_enabled", "always within_size advise [never] deny force");
	put(sys_root, THP "use_zero_page", "1");
	put(sys_root, THP "khugepaged/defrag", "1");
	put(sys_root, THP "khugepaged/pages_to_scan", "4096");
	put(sys_root, THP "khugepaged/scan_sleep_millisecs", "10000");
	put(sys_root, THP "khugepaged/alloc_sleep_millisecs", "60000");
	put(sys_root, THP "khugepaged/max_ptes_none", "511");
	put(sys_root, THP "khugepaged/max_ptes_swap", "64");
	/* max_ptes_shared missing: a pre-5.8 kernel */
	put(sys_root, THP "hugepages-2048kB/enabled", "always [inherit] madvise never");
	put(sys_root, THP "hugepages-2048kB/shmem_enabled", "always [inherit] within_size advise never");
	put(sys_root, THP "hugepages-64kB/enabled", "always inherit madvise [never]");
	put(sys_root, THP "hugepages-8kB/shmem_enabled", "always inherit within_size advise [never]");
	put(sys_root, THP "hugepages-064kB/enabled", "always inherit madvise [never]");   /* not canonical */
	put(sys_root, THP "hugepages-xkB/enabled", "always inherit madvise [never]");
	put(sys_root, "kernel/mm/mempolicy/weighted_interleave/node10", "3");
	put(sys_root, "kernel/mm/mempolicy/weighted_interleave/node0", "1");
	put(sys_root, "kernel/mm/mempolicy/weighted_interleave/node2", "5");
	put(sys_root, "kernel/mm/mempolicy/weighted_interleave/node01", "1");
	put(sys_root, "kernel/mm/mempolicy/weighted_interleave/auto", "true");
	put(proc_root, "sys/kernel/numa_balancing", "0");
	put(proc_root, "sys/vm/compaction_proactiveness", "20");
	put(proc_root, "sys/vm/zone_reclaim_mode", "0");
	put(proc_root, "sys/vm/nr_overcommit_hugepages", "banana");
}

static void drop_tree(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(static_and_discovered_entries_in_order)
{
	struct knob_catalogue *c;
	static const char *const want[] = {
		"thp.enabled", "thp.defrag", "thp.shmem_enabled", "thp.use_zero_page", "thp.khugepaged.defrag",
		"thp.khugepaged.pages_to_scan", "thp.khugepaged.scan_sleep_millisecs",
		"thp.khugepaged.alloc_sleep_millisecs", "thp.khugepaged.max_ptes_none",
		"thp.khugepaged.max_ptes_swap", "thp.khugepaged.max_ptes_shared", "numa.balancing",
		"vm.compaction_proactiveness", "vm.zone_reclaim_mode", "vm.min_free_kbytes",
		"vm.watermark_scale_factor", "vm.nr_overcommit_hugepages", "thp.size.8kB.shmem_enabled", "thp.size.64kB.enabled", "thp.size.2048kB.enabled",
		"thp.size.2048kB.shmem_enabled", "mempolicy.weighted_interleave.node0",
		"mempolicy.weighted_interleave.node2", "mempolicy.weighted_interleave.node10",
	};

	make_tree();
	ck_assert_ptr_nonnull(c = knobs_build(sys_root, proc_root));
	ck_assert_uint_eq(knobs_count(c), sizeof want / sizeof want[0]);
	for (size_t i = 0; i < knobs_count(c); i++)
		ck_assert_str_eq(knobs_at(c, i)->name, want[i]);
	ck_assert_ptr_null(knobs_at(c, knobs_count(c)));
	knobs_free(c);
	drop_tree();
}
END_TEST

START_TEST(names_are_never_paths)
{
	struct knob_catalogue *c;
	static const char *const bad[] = { "thp.enabled/../x", "../enabled", "thp.enabled/", "enabled",
					   "kernel/mm/transparent_hugepage/enabled", "THP.ENABLED", "thp.enabled ",
					   "", "thp.size.064kB.enabled", "thp.size.xkB.enabled",
					   "mempolicy.weighted_interleave.node01", "mempolicy.weighted_interleave.auto",
					   "thp.size.8kB.enabled" };

	make_tree();
	c = knobs_build(sys_root, proc_root);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(knobs_find(c, bad[i]) == NULL, "'%s' was found", bad[i]);
	ck_assert_ptr_nonnull(knobs_find(c, "thp.enabled"));
	ck_assert_str_eq(knobs_find(c, "mempolicy.weighted_interleave.node10")->rel,
			 "kernel/mm/mempolicy/weighted_interleave/node10");
	knobs_free(c);
	drop_tree();
}
END_TEST

START_TEST(types_ranges_and_paths)
{
	struct knob_catalogue *c;
	const struct knob *k;
	char path[PATH_MAX], want[PATH_MAX];

	make_tree();
	c = knobs_build(sys_root, proc_root);
	k = knobs_find(c, "thp.khugepaged.pages_to_scan");
	ck_assert_int_eq(k->type, KNOB_INTEGER);
	ck_assert_uint_eq(k->min, 1);
	ck_assert_uint_eq(k->max, 4294967295ULL);
	k = knobs_find(c, "thp.khugepaged.max_ptes_shared");
	ck_assert_uint_eq(k->max, 511);
	k = knobs_find(c, "numa.balancing");
	ck_assert_int_eq(k->root, KNOB_PROCFS);
	ck_assert_uint_eq(k->max, 3);
	knob_path(c, k, path, sizeof path);
	snprintf(want, sizeof want, "%s/sys/kernel/numa_balancing", proc_root);
	ck_assert_str_eq(path, want);
	ck_assert_int_eq(knobs_find(c, "thp.use_zero_page")->type, KNOB_BOOLEAN);
	ck_assert_int_eq(knobs_find(c, "thp.size.64kB.enabled")->type, KNOB_CHOICE);
	ck_assert_uint_eq(knobs_find(c, "mempolicy.weighted_interleave.node2")->min, 1);
	ck_assert_uint_eq(knobs_find(c, "mempolicy.weighted_interleave.node2")->max, 255);
	ck_assert_str_eq(knob_type_name(KNOB_CHOICE), "choice");
	ck_assert_str_eq(knob_type_name(KNOB_BOOLEAN), "boolean");
	knobs_free(c);
	drop_tree();
}
END_TEST

START_TEST(reads_choice_integer_and_unavailable)
{
	struct knob_catalogue *c;
	struct knob_state st;

	make_tree();
	c = knobs_build(sys_root, proc_root);
	knob_read(c, knobs_find(c, "thp.defrag"), &st);
	ck_assert(st.available);
	ck_assert_str_eq(st.value, "madvise");
	ck_assert_int_eq(st.nopts, 5);
	ck_assert_str_eq(st.opts[2], "defer+madvise");

	knob_read(c, knobs_find(c, "thp.khugepaged.pages_to_scan"), &st);
	ck_assert(st.available);
	ck_assert_uint_eq(st.num, 4096);
	ck_assert_str_eq(st.value, "4096");

	knob_read(c, knobs_find(c, "thp.khugepaged.max_ptes_shared"), &st);
	ck_assert(!st.available);
	ck_assert(!st.writable);
	ck_assert_int_eq(st.read_err, -ENOENT);

	knob_read(c, knobs_find(c, "vm.nr_overcommit_hugepages"), &st);   /* "banana" */
	ck_assert(!st.available);
	ck_assert_int_eq(st.read_err, -EINVAL);

	put(sys_root, THP "enabled", "always madvise never");   /* no selection: not the kernel's format */
	knob_read(c, knobs_find(c, "thp.enabled"), &st);
	ck_assert(!st.available);
	knobs_free(c);
	drop_tree();
}
END_TEST

START_TEST(value_checks_use_the_live_list_and_ranges)
{
	struct knob_catalogue *c;
	const struct knob *k;
	struct knob_state st;

	make_tree();
	c = knobs_build(sys_root, proc_root);
	k = knobs_find(c, "thp.enabled");
	knob_read(c, k, &st);
	ck_assert_int_eq(knob_check_value(k, &st, "never"), KNOB_OK);
	ck_assert_int_eq(knob_check_value(k, &st, "[never]"), KNOB_NOT_ALLOWED);
	ck_assert_int_eq(knob_check_value(k, &st, "defer"), KNOB_NOT_ALLOWED);
	ck_assert_int_eq(knob_check_value(k, &st, "nev"), KNOB_NOT_ALLOWED);
	/* The allowed set is whatever this kernel prints, not a list compiled in. */
	put(sys_root, THP "enabled", "always [madvise] never defer");
	knob_read(c, k, &st);
	ck_assert_int_eq(knob_check_value(k, &st, "defer"), KNOB_OK);

	k = knobs_find(c, "thp.khugepaged.pages_to_scan");
	ck_assert_int_eq(knob_check_value(k, NULL, "0"), KNOB_OUT_OF_RANGE);
	ck_assert_int_eq(knob_check_value(k, NULL, "1"), KNOB_OK);
	ck_assert_int_eq(knob_check_value(k, NULL, "4294967295"), KNOB_OK);
	ck_assert_int_eq(knob_check_value(k, NULL, "4294967296"), KNOB_OUT_OF_RANGE);
	k = knobs_find(c, "thp.khugepaged.max_ptes_none");
	ck_assert_int_eq(knob_check_value(k, NULL, "511"), KNOB_OK);
	ck_assert_int_eq(knob_check_value(k, NULL, "512"), KNOB_OUT_OF_RANGE);
	k = knobs_find(c, "thp.use_zero_page");
	ck_assert_int_eq(knob_check_value(k, NULL, "2"), KNOB_OUT_OF_RANGE);
	k = knobs_find(c, "mempolicy.weighted_interleave.node0");
	ck_assert_int_eq(knob_check_value(k, NULL, "0"), KNOB_OUT_OF_RANGE);
	ck_assert_int_eq(knob_check_value(k, NULL, "255"), KNOB_OK);
	ck_assert_int_eq(knob_check_value(k, NULL, "256"), KNOB_OUT_OF_RANGE);
	knobs_free(c);
	drop_tree();
}
END_TEST

START_TEST(writes_keep_the_kernel_format_in_generated_trees)
{
	struct knob_catalogue *c;
	const struct knob *k;
	struct knob_state st;
	char buf[256];

	make_tree();
	c = knobs_build(sys_root, proc_root);
	k = knobs_find(c, "thp.defrag");
	ck_assert_int_eq(knob_write(c, k, "defer+madvise"), 0);
	get(sys_root, THP "defrag", buf, sizeof buf);
	ck_assert_str_eq(buf, "always defer [defer+madvise] madvise never");
	knob_read(c, k, &st);
	ck_assert_str_eq(st.value, "defer+madvise");
	ck_assert_int_eq(knob_write(c, k, "sometimes"), -EINVAL);
	get(sys_root, THP "defrag", buf, sizeof buf);
	ck_assert_str_eq(buf, "always defer [defer+madvise] madvise never");

	k = knobs_find(c, "thp.khugepaged.max_ptes_swap");
	ck_assert_int_eq(knob_write(c, k, "128"), 0);
	get(sys_root, THP "khugepaged/max_ptes_swap", buf, sizeof buf);
	ck_assert_str_eq(buf, "128");   /* get() drops the newline the write added */
	ck_assert_int_eq(knob_write(c, knobs_find(c, "thp.khugepaged.max_ptes_shared"), "1"), -ENOENT);
	knobs_free(c);
	drop_tree();
}
END_TEST

START_TEST(a_tree_without_thp_or_weights)
{
	struct knob_catalogue *c;
	struct knob_state st;

	snprintf(root, sizeof root, "/tmp/mpd-knobs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(sys_root, sizeof sys_root, "%s/sys", root);
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	c = knobs_build(sys_root, proc_root);
	ck_assert_uint_eq(knobs_count(c), 17);   /* the static entries, all unavailable */
	for (size_t i = 0; i < knobs_count(c); i++) {
		knob_read(c, knobs_at(c, i), &st);
		ck_assert(!st.available);
	}
	knobs_free(c);
	drop_tree();
}
END_TEST

/* Found by tests/fuzz/fuzz_knobs: a value with "\u0000" in it was cut there and taken
 * ("never\u0000x" as never, "12\u0000x" as 12), and "<huge number>\n" or "<huge>'9" were
 * answered 422 out of range where any other non-decimal text is 400 wrong type. */
START_TEST(request_values_are_whole_decimal_or_whole_tokens)
{
	struct knob_catalogue *c;
	char buf[64];
	mp_err e;
	json_t *v;

	make_tree();
	c = knobs_build(sys_root, proc_root);
	const struct knob *choice = knobs_find(c, "thp.enabled"), *num = knobs_find(c, "thp.khugepaged.max_ptes_none");

	v = json_stringn("never\0x", 7);
	memset(&e, 0, sizeof e);
	ck_assert_int_eq(knob_value_text(choice, v, buf, sizeof buf, &e), -1);
	ck_assert_int_eq(api_status(&e), 422);
	json_decref(v);
	v = json_stringn("12\0x", 4);
	memset(&e, 0, sizeof e);
	ck_assert_int_eq(knob_value_text(num, v, buf, sizeof buf, &e), -1);
	ck_assert_int_eq(api_status(&e), 400);
	json_decref(v);
	static const char *const not_numbers[] = { "99999999999999999999999\n", "999999999999999999999'9", "12\n" };
	for (size_t i = 0; i < sizeof not_numbers / sizeof not_numbers[0]; i++) {
		v = json_string(not_numbers[i]);
		memset(&e, 0, sizeof e);
		ck_assert_int_eq(knob_value_text(num, v, buf, sizeof buf, &e), -1);
		ck_assert_msg(api_status(&e) == 400, "%s: %d", not_numbers[i], api_status(&e));
		json_decref(v);
	}
	/* A number too large is still "out of range", and a plain one still works. */
	v = json_string("99999999999999999999999");
	memset(&e, 0, sizeof e);
	ck_assert_int_eq(knob_value_text(num, v, buf, sizeof buf, &e), -1);
	ck_assert_int_eq(api_status(&e), 422);
	json_decref(v);
	/* One spelling, as a JSON integer has (issue 21: "0012" was 12). */
	static const char *const other_spellings[] = { "0012", "00", "+12", "012" };
	for (size_t i = 0; i < sizeof other_spellings / sizeof other_spellings[0]; i++) {
		v = json_string(other_spellings[i]);
		memset(&e, 0, sizeof e);
		ck_assert_int_eq(knob_value_text(num, v, buf, sizeof buf, &e), -1);
		ck_assert_msg(api_status(&e) == 400, "%s: %d", other_spellings[i], api_status(&e));
		json_decref(v);
	}
	v = json_string("12");
	memset(&e, 0, sizeof e);
	ck_assert_int_eq(knob_value_text(num, v, buf, sizeof buf, &e), 0);
	ck_assert_str_eq(buf, "12");
	json_decref(v);
	v = json_string("0");
	ck_assert_int_eq(knob_value_text(num, v, buf, sizeof buf, &e), 0);
	ck_assert_str_eq(buf, "0");
	json_decref(v);
	knobs_free(c);
	drop_tree();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("knobs");
	TCase *t = tcase_create("catalogue");
	tcase_add_test(t, static_and_discovered_entries_in_order);
	tcase_add_test(t, names_are_never_paths);
	tcase_add_test(t, types_ranges_and_paths);
	tcase_add_test(t, reads_choice_integer_and_unavailable);
	tcase_add_test(t, value_checks_use_the_live_list_and_ranges);
	tcase_add_test(t, writes_keep_the_kernel_format_in_generated_trees);
	tcase_add_test(t, a_tree_without_thp_or_weights);
	tcase_add_test(t, request_values_are_whole_decimal_or_whole_tokens);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
