/* The stored form of an operation's conditions (store/conditions.h): shorter than the answer's
 * form, turned back into exactly it, and rows of the full form (written before it existed) read
 * as they were. */
#include <string.h>

#include "common/extfrag.h"
#include "server/store/conditions.h"
#include "tests/unit/check_main.h"

/* A result as ops/conditions.c measures one: node 0 moved at orders 0 and 2, node 1 did not. */
static json_t *measured(void)
{
	static const uint64_t b0[11] = { 8529, 2863, 677, 153, 43, 5, 5, 2, 9, 1, 132 };
	static const uint64_t a0[11] = { 8501, 2863, 679, 153, 43, 5, 5, 2, 9, 1, 132 };
	static const uint64_t b1[11] = { 2, 2, 1, 2, 2, 2, 1, 4, 4, 2, 752 };
	json_t *before = json_pack("{s:o, s:o}", "0", frag_node_json(json_pack("[s, s]", "DMA32", "Normal"), b0, 11),
				   "1", frag_node_json(json_pack("[s]", "Normal"), b1, 11));
	json_t *after = json_pack("{s:o, s:o}", "0", frag_node_json(json_pack("[s, s]", "DMA32", "Normal"), a0, 11),
				  "1", frag_node_json(json_pack("[s]", "Normal"), b1, 11));

	return json_pack("{s:[{s:s}], s:{s:s, s:{s:s}, s:{s:i}, s:{}, s:{s:o, s:o}}}", "changes", "knob", "thp.enabled",
			 "conditions", "kernel_release", "6.12.0", "settings", "thp.enabled", "never", "vmstat_delta",
			 "numa_hit", 58, "numastat_delta", "buddyinfo", "before", before, "after", after);
}

static size_t text_len(const json_t *v)
{
	char *t = json_dumps(v, JSON_COMPACT);
	size_t n = strlen(t);
	free(t);
	return n;
}

START_TEST(stored_form_is_shorter_and_reads_back_as_measured)
{
	json_t *full = measured(), *copy = json_deep_copy(full);
	json_t *stored = cond_stored_form(full);
	const json_t *buddy = json_object_get(json_object_get(stored, "conditions"), "buddyinfo");

	ck_assert(json_equal(full, copy));   /* the caller's result is not changed */
	ck_assert_ptr_null(json_object_get(buddy, "after"));
	ck_assert_ptr_null(json_object_get(json_object_get(json_object_get(buddy, "before"), "0"), "unusable_index"));
	/* Only the node that moved has a difference, and only its orders that moved are not zero. */
	ck_assert_int_eq(json_object_size(json_object_get(buddy, "moved")), 1);
	json_t *d = json_object_get(json_object_get(buddy, "moved"), "0");
	ck_assert_int_eq(json_integer_value(json_array_get(d, 0)), -28);
	ck_assert_int_eq(json_integer_value(json_array_get(d, 2)), 2);
	ck_assert_int_eq(json_integer_value(json_array_get(d, 1)), 0);
	ck_assert_msg(text_len(stored) * 3 < text_len(full), "stored %zu bytes of %zu", text_len(stored), text_len(full));

	/* What the database holds is text: through it and back. */
	char *t = json_dumps(stored, JSON_COMPACT);
	json_t *read = json_loads(t, 0, NULL);
	free(t);
	cond_answer_form(read);
	ck_assert_msg(json_equal(read, full), "read back differs");
	json_decref(read);
	json_decref(stored);
	json_decref(copy);
	json_decref(full);
}
END_TEST

START_TEST(full_form_rows_read_as_they_are)
{
	json_t *full = measured(), *copy = json_deep_copy(full);

	cond_answer_form(full);   /* a row written before the stored form: it has "after" */
	ck_assert(json_equal(full, copy));
	json_decref(copy);
	json_decref(full);
}
END_TEST

START_TEST(what_cannot_be_said_as_a_difference_is_kept_whole)
{
	json_t *full = measured(), *stored;
	json_t *buddy = json_object_get(json_object_get(full, "conditions"), "buddyinfo");

	/* A node came online between before and after. */
	json_object_set(json_object_get(buddy, "after"), "2", json_object_get(json_object_get(buddy, "after"), "1"));
	stored = cond_stored_form(full);
	ck_assert_ptr_eq(stored, full);
	json_decref(stored);
	/* A result without conditions (a dry run), or not an object at all. */
	json_t *plain = json_pack("{s:[]}", "changes"), *s2 = cond_stored_form(plain);
	ck_assert_ptr_eq(s2, plain);
	json_decref(s2);
	json_decref(plain);
	json_decref(full);
}
END_TEST

static Suite *conditions_suite(void)
{
	Suite *s = suite_create("conditions");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, stored_form_is_shorter_and_reads_back_as_measured);
	tcase_add_test(tc, full_form_rows_read_as_they_are);
	tcase_add_test(tc, what_cannot_be_said_as_a_difference_is_kept_whole);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(conditions_suite)
