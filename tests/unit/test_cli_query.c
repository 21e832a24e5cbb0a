/* mempolicyctl's one path builder (client/query.c, compiled in): escaping, and that anything
 * which does not fit makes the whole path unusable instead of a shorter one. */
#include <stdio.h>
#include <string.h>

#include "client/query.c"
#include "tests/unit/check_main.h"

START_TEST(segments_and_arguments_are_escaped)
{
	struct query q;

	query_init(&q, "/v1/hugepages");
	query_segment(&q, "2M");
	query_segment(&q, "availability");
	query_arg_u64(&q, "count", 5);
	query_arg(&q, "node", NULL);   /* not given: not sent */
	query_arg(&q, "since", "2026-01-02T10:00:00+00:00");
	ck_assert_str_eq(query_path(&q), "/v1/hugepages/2M/availability?count=5&since=2026-01-02T10%3A00%3A00%2B00%3A00");

	/* a slash or a query in a segment cannot reach another resource */
	query_init(&q, "/v1/hugepages");
	query_segment(&q, "../knobs?x=1&y");
	ck_assert_str_eq(query_path(&q), "/v1/hugepages/..%2Fknobs%3Fx%3D1%26y");
	/* nor can a segment of dots, which curl would resolve */
	query_init(&q, "/v1/hugepages");
	query_segment(&q, "..");
	ck_assert_str_eq(query_path(&q), "/v1/hugepages/%2E%2E");
	query_init(&q, "/v1/knobs");
	query_segment(&q, "thp.enabled");
	query_arg(&q, "dry_run", "true");
	ck_assert_str_eq(query_path(&q), "/v1/knobs/thp.enabled?dry_run=true");
	/* bytes above 0x7f and controls are escaped byte by byte */
	query_init(&q, "/v1/jobs");
	query_arg(&q, "kind", "\xc3\xa9 \n");
	ck_assert_str_eq(query_path(&q), "/v1/jobs?kind=%C3%A9%20%0A");
	query_init(&q, "/v1/jobs");
	query_segment_u64(&q, UINT64_MAX);
	ck_assert_str_eq(query_path(&q), "/v1/jobs/18446744073709551615");
}
END_TEST

START_TEST(what_does_not_fit_is_refused_whole)
{
	static char big[QUERY_MAX + 10];
	struct query q;
	size_t room;

	/* exactly full is fine */
	query_init(&q, "/v1/jobs");
	room = QUERY_MAX - strlen("/v1/jobs?kind=");
	memset(big, 'k', room);
	big[room] = '\0';
	query_arg(&q, "kind", big);
	ck_assert_ptr_nonnull(query_path(&q));
	ck_assert_uint_eq(strlen(query_path(&q)), QUERY_MAX);
	/* one byte more is not, and nothing appended later brings it back */
	query_init(&q, "/v1/jobs");
	big[room] = 'k';
	big[room + 1] = '\0';
	query_arg(&q, "kind", big);
	ck_assert_ptr_null(query_path(&q));
	query_arg(&q, "limit", "5");
	ck_assert_ptr_null(query_path(&q));
	/* an escape that would be cut in the middle counts as not fitting */
	query_init(&q, "/v1/jobs");
	memset(big, 'k', room - 1);
	big[room - 1] = '/';
	big[room] = '\0';
	query_arg(&q, "kind", big);
	ck_assert_ptr_null(query_path(&q));
	/* the old client built "&kind=" from an over-long kind: here the filter is never dropped */
	query_init(&q, "/v1/jobs");
	query_arg_u64(&q, "limit", 50);
	memset(big, '/', 800);
	big[800] = '\0';
	query_arg(&q, "kind", big);
	ck_assert_ptr_null(query_path(&q));
	/* a segment after the query began is refused, not put inside a value */
	query_init(&q, "/v1/jobs");
	query_arg(&q, "a", "b");
	query_segment(&q, "x");
	ck_assert_ptr_null(query_path(&q));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cli_query");
	TCase *t = tcase_create("query");
	tcase_add_test(t, segments_and_arguments_are_escaped);
	tcase_add_test(t, what_does_not_fit_is_refused_whole);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
