/* Cron expressions: what the parser accepts and refuses (with the field named), and the next
 * firing time across month ends, leap years, the day-of-month/day-of-week OR rule and steps. */
#include <string.h>
#include <time.h>

#include "server/jobs/cron.h"
#include "server/api/api.h"
#include "tests/unit/check_main.h"

/* UTC seconds for a calendar time, via timegm (tests only; the module has its own calendar). */
static int64_t utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi };
	return (int64_t)timegm(&tm);
}

static struct cron parse_ok(const char *text)
{
	struct cron c;
	mp_err e = { 0 };
	int field = 99;
	ck_assert_msg(cron_parse(text, &c, &field, &e) == 0, "refused '%s': %s", text, e.detail);
	return c;
}

static int64_t next(const char *text, int64_t after)
{
	struct cron c = parse_ok(text);
	return cron_next(&c, 0, after);
}

#define ck_next(expr, after, want)                                                               \
	do {                                                                                     \
		int64_t got_ = next(expr, after), want_ = (want);                                \
		ck_assert_msg(got_ == want_, "'%s' after %lld: got %lld want %lld (diff %lld s)", \
			      expr, (long long)(after), (long long)got_, (long long)want_,      \
			      (long long)(got_ - want_));                                        \
	} while (0)

START_TEST(accepts_the_syntax)
{
	static const char *ok[] = {
		"* * * * *", "0 2 * * *", "*/15 * * * *", "0-59/7 0-23/6 1-31/10 1-12/3 0-7/2",
		"1,2,3 4,5 6,7 8,9 1,2", "0 0 1 JAN MON", "0 0 * jan-dec mon-fri", "0 0 * * SUN,sat",
		"0 0 * * 7", "0 0 * * 0-7", "59 23 31 12 6", "0 0 29 2 *", "0\t2  *\t\t*  *",
		"5-5 * * * *", "*/60 * * * *", "@daily", "@HOURLY", "@yearly", "@weekly", "@monthly",
		"@midnight", "@annually", "0 0 1-7 * 1", "0 0 31 * *", "00 00 01 01 00", "05 4 * * *", "*/05 * * * *",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		parse_ok(ok[i]);
}
END_TEST

/* Every refusal names the field (or the expression) and quotes the bad token. */
START_TEST(refuses_with_the_field_and_token_named)
{
	static const struct {
		const char *text;
		int field;          /* -1: the expression as a whole */
		const char *needle; /* must appear in the detail */
	} bad[] = {
		{ "", -1, "0 fields" },
		{ "* * * *", -1, "4 fields" },
		{ "* * * * * *", -1, "more than five" },
		{ "60 * * * *", CRON_MINUTE, "minute field: 60 is out of range" },
		{ "* 24 * * *", CRON_HOUR, "hour field: 24 is out of range" },
		{ "* * 0 * *", CRON_DOM, "day-of-month field: 0 is out of range" },
		{ "* * 32 * *", CRON_DOM, "day-of-month field: 32" },
		{ "* * * 13 *", CRON_MONTH, "month field: 13" },
		{ "* * * 0 *", CRON_MONTH, "month field: 0" },
		{ "* * * * 8", CRON_DOW, "day-of-week field: 8" },
		{ "x * * * *", CRON_MINUTE, "'x' is not a valid value" },
		{ "* * * FOO *", CRON_MONTH, "'FOO'" },
		{ "* * * * MONDAY", CRON_DOW, "'MONDAY'" },
		{ "* * * MON *", CRON_MONTH, "'MON'" },
		{ "JAN * * * *", CRON_MINUTE, "'JAN'" },
		{ "-5 * * * *", CRON_MINUTE, "'-5'" },
		{ "5- * * * *", CRON_MINUTE, "range end" },
		{ "*/0 * * * *", CRON_MINUTE, "step 0" },
		{ "*/61 * * * *", CRON_MINUTE, "step 61" },
		{ "*/ * * * *", CRON_MINUTE, "not a valid step" },
		{ "*/x * * * *", CRON_MINUTE, "'x' is not a valid step" },
		{ "5/10 * * * *", CRON_MINUTE, "a step needs" },
		{ "10-5 * * * *", CRON_MINUTE, "'10-5' runs backwards" },
		{ "* * * * FRI-SUN", CRON_DOW, "runs backwards" },
		{ "1,,2 * * * *", CRON_MINUTE, "empty list element" },
		{ ",1 * * * *", CRON_MINUTE, "empty list element" },
		{ "1, * * * *", CRON_MINUTE, "empty list element" },
		{ "** * * * *", CRON_MINUTE, "unexpected '*'" },
		{ "1-2-3 * * * *", CRON_MINUTE, "unexpected '-3'" },
		{ "1000 * * * *", CRON_MINUTE, "'1000'" },
		{ "99999999999 * * * *", CRON_MINUTE, "not a valid value" },
		{ "@often", -1, "unknown macro '@often'" },
		{ "0 0 30 2 *", -1, "never fires" },
		{ "0 0 31 4,6,9,11 *", -1, "never fires" },
		/* The expression is a value, not a crontab line: no blank before or after it, and no
		 * value longer than two digits (issue 21: both were accepted). */
		{ "\t0 2 * * *", -1, "starts or ends with a space or tab" },
		{ " 0 2 * * *", -1, "starts or ends" },
		{ "0 2 * * * ", -1, "starts or ends" },
		{ "0 2 * * *\t", -1, "starts or ends" },
		{ "000 * * * *", CRON_MINUTE, "'000' is not a valid value" },
		{ "0 0 * * 007", CRON_DOW, "'007' is not a valid value" },
		{ "0 0 001 * *", CRON_DOM, "'001'" },
		{ "0-059 * * * *", CRON_MINUTE, "range end" },
		{ "*/060 * * * *", CRON_MINUTE, "not a valid step" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct cron c;
		mp_err e = { 0 };
		int field = 99;
		if (!bad[i].needle) {
			ck_assert_int_eq(cron_parse(bad[i].text, &c, &field, &e), 0);
			continue;
		}
		ck_assert_msg(cron_parse(bad[i].text, &c, &field, &e) == -1, "accepted '%s'", bad[i].text);
		ck_assert_int_eq(api_status(&e), 422);
		ck_assert_str_eq(mp_code_name(e.code), "schedule.bad_cron");
		ck_assert_msg(field == bad[i].field, "'%s': field %d, want %d", bad[i].text, field, bad[i].field);
		ck_assert_msg(strstr(e.detail, bad[i].needle), "'%s': detail '%s' lacks '%s'", bad[i].text,
			      e.detail, bad[i].needle);
	}
	/* Overlong input is refused before any copying. */
	char big[400];
	memset(big, '1', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	struct cron c;
	mp_err e = { 0 };
	ck_assert_int_eq(cron_parse(big, &c, NULL, &e), -1);
	ck_assert(strstr(e.detail, "longer than"));
}
END_TEST

START_TEST(field_sets)
{
	struct cron c = parse_ok("*/15 1-5/2 1,15,31 FEB-APR 7");
	ck_assert(c.minute == (1ULL << 0 | 1ULL << 15 | 1ULL << 30 | 1ULL << 45));
	ck_assert_uint_eq(c.hour, 1u << 1 | 1u << 3 | 1u << 5);
	ck_assert_uint_eq(c.dom, 1u << 1 | 1u << 15 | 1u << 31);
	ck_assert_uint_eq(c.month, 1u << 2 | 1u << 3 | 1u << 4);
	ck_assert_uint_eq(c.dow, 1u << 0);   /* 7 is Sunday, folded into 0 */
	ck_assert(!c.dom_star && !c.dow_star);
	c = parse_ok("* * */2 * 5-7");
	ck_assert(c.dom_star && !c.dow_star);
	ck_assert_uint_eq(c.dow, 1u << 5 | 1u << 6 | 1u << 0);
	c = parse_ok("* * * * *");
	ck_assert(c.minute == (1ULL << 60) - 1);
	ck_assert_uint_eq(c.dow, 0x7f);
	c = parse_ok("* * * * */2");
	ck_assert_uint_eq(c.dow, 1u << 0 | 1u << 2 | 1u << 4 | 1u << 6);
}
END_TEST

START_TEST(next_simple_and_strictly_after)
{
	int64_t t = utc(2024, 3, 10, 1, 59);
	ck_next("0 2 * * *", t, utc(2024, 3, 10, 2, 0));
	/* Exactly at a firing minute: the next one, not this one. */
	ck_next("0 2 * * *", utc(2024, 3, 10, 2, 0), utc(2024, 3, 11, 2, 0));
	/* Seconds inside the minute do not count as the minute. */
	ck_next("* * * * *", utc(2024, 3, 10, 2, 0) + 59, utc(2024, 3, 10, 2, 1));
	ck_next("* * * * *", utc(2024, 3, 10, 2, 0) + 1, utc(2024, 3, 10, 2, 1));
	ck_next("@hourly", utc(2024, 3, 10, 23, 30), utc(2024, 3, 11, 0, 0));
}
END_TEST

START_TEST(next_across_month_and_year_ends)
{
	ck_next("0 0 1 * *", utc(2024, 1, 31, 12, 0), utc(2024, 2, 1, 0, 0));
	ck_next("30 23 31 * *", utc(2024, 4, 1, 0, 0), utc(2024, 5, 31, 23, 30));   /* April has 30 days */
	ck_next("0 0 31 * *", utc(2024, 1, 31, 0, 0), utc(2024, 3, 31, 0, 0));      /* skips February */
	ck_next("59 23 31 12 *", utc(2024, 12, 31, 23, 59), utc(2025, 12, 31, 23, 59));
	ck_next("0 0 1 1 *", utc(2024, 12, 31, 23, 59), utc(2025, 1, 1, 0, 0));
	ck_next("0 12 * 2 *", utc(2023, 2, 28, 12, 0), utc(2024, 2, 1, 12, 0));
}
END_TEST

START_TEST(next_leap_years)
{
	ck_next("0 0 29 2 *", utc(2023, 3, 1, 0, 0), utc(2024, 2, 29, 0, 0));
	ck_next("0 0 29 2 *", utc(2024, 2, 29, 0, 0), utc(2028, 2, 29, 0, 0));
	/* 2100 is not a leap year: the next Feb 29 after 2096 is in 2104. */
	ck_next("0 0 29 2 *", utc(2096, 3, 1, 0, 0), utc(2104, 2, 29, 0, 0));
	/* 2000 was (divisible by 400). */
	ck_next("0 0 29 2 *", utc(1999, 1, 1, 0, 0), utc(2000, 2, 29, 0, 0));
	/* Feb 29 that is also a Sunday ('*' in day-of-week means AND): 2004, then 2032. */
	ck_next("0 0 29 2 */7", utc(2004, 3, 1, 0, 0), utc(2032, 2, 29, 0, 0));
	ck_next("0 0 28 2 *", utc(2024, 2, 28, 0, 0), utc(2025, 2, 28, 0, 0));
}
END_TEST

START_TEST(next_dom_dow_or_rule)
{
	/* 2024-06-01 is a Saturday. "1st of the month OR any Monday": both restricted. */
	ck_next("0 9 1 * MON", utc(2024, 6, 1, 9, 0), utc(2024, 6, 3, 9, 0));   /* Monday the 3rd */
	ck_next("0 9 1 * MON", utc(2024, 6, 24, 9, 0), utc(2024, 7, 1, 9, 0));  /* the 1st, a Monday too */
	ck_next("0 9 13 * 5", utc(2024, 9, 1, 0, 0), utc(2024, 9, 6, 9, 0));    /* Friday before the 13th */
	ck_next("0 9 13 * 5", utc(2024, 9, 6, 9, 0), utc(2024, 9, 13, 9, 0));   /* Friday the 13th */
	ck_next("0 9 13 * 5", utc(2024, 9, 20, 9, 0), utc(2024, 9, 27, 9, 0));
	ck_next("0 9 13 * 5", utc(2024, 10, 11, 9, 0), utc(2024, 10, 13, 9, 0)); /* the 13th, a Sunday */
	/* Day-of-week '*': only the day of month counts, and vice versa. */
	ck_next("0 9 13 * *", utc(2024, 9, 1, 0, 0), utc(2024, 9, 13, 9, 0));
	ck_next("0 9 * * 5", utc(2024, 9, 1, 0, 0), utc(2024, 9, 6, 9, 0));
	/* A stepped field starting with '*' counts as unrestricted: AND, not OR (Vixie cron). */
	ck_next("0 0 */2 * 1", utc(2024, 6, 1, 0, 0), utc(2024, 6, 3, 0, 0));   /* Monday 3rd, odd day */
	ck_next("0 0 */2 * 1", utc(2024, 6, 3, 0, 0), utc(2024, 6, 17, 0, 0));  /* 10th is even: skip */
	/* Sunday as 0 and as 7. */
	ck_next("0 0 * * 0", utc(2024, 6, 1, 0, 0), utc(2024, 6, 2, 0, 0));
	ck_next("0 0 * * 7", utc(2024, 6, 1, 0, 0), utc(2024, 6, 2, 0, 0));
	ck_next("0 0 * * SAT", utc(2024, 6, 1, 0, 0), utc(2024, 6, 8, 0, 0));
}
END_TEST

START_TEST(next_steps)
{
	ck_next("*/15 * * * *", utc(2024, 1, 1, 0, 0), utc(2024, 1, 1, 0, 15));
	ck_next("*/15 * * * *", utc(2024, 1, 1, 0, 50), utc(2024, 1, 1, 1, 0));
	ck_next("10-50/20 * * * *", utc(2024, 1, 1, 0, 30), utc(2024, 1, 1, 0, 50));
	ck_next("10-50/20 * * * *", utc(2024, 1, 1, 0, 50), utc(2024, 1, 1, 1, 10));
	ck_next("0 */6 * * *", utc(2024, 1, 1, 19, 0), utc(2024, 1, 2, 0, 0));
	ck_next("0 0 1 */5 *", utc(2024, 2, 1, 0, 0), utc(2024, 6, 1, 0, 0));    /* months 1,6,11 */
	ck_next("0 0 1 */5 *", utc(2024, 11, 1, 0, 0), utc(2025, 1, 1, 0, 0));
	ck_next("0 0 1-31/10 * *", utc(2024, 1, 21, 0, 0), utc(2024, 1, 31, 0, 0));
	ck_next("0 0 1-31/10 * *", utc(2024, 2, 22, 0, 0), utc(2024, 3, 1, 0, 0));
}
END_TEST

/* Brute force: for many expressions and starting points, cron_next equals the first minute
 * that cron_matches, scanning minute by minute. */
START_TEST(next_agrees_with_a_minute_scan)
{
	static const char *exprs[] = { "*/7 */5 * * *", "0 0 1,15 * MON", "30 4 */3 2-4 *",
				       "0 12 29-31 * *", "15 10 * * 1-5", "0 0 * 2 6,0" };
	for (size_t i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
		struct cron c = parse_ok(exprs[i]);
		for (int64_t start = utc(2023, 12, 20, 0, 0); start < utc(2024, 12, 31, 0, 0); start += 86400 * 37 + 3607) {
			int64_t want = (start / 60 + 1) * 60;
			while (!cron_matches(&c, want))
				want += 60;
			ck_assert_msg(cron_next(&c, 0, start) == want, "'%s' from %lld", exprs[i], (long long)start);
		}
	}
}
END_TEST

START_TEST(timezones_fixed_offsets)
{
	static const struct { const char *tz; int32_t off; const char *canon; } ok[] = {
		{ "UTC", 0, "UTC" }, { "utc", 0, "UTC" }, { "Z", 0, "UTC" }, { "+00:00", 0, "UTC" },
		{ "+02:00", 7200, "+02:00" }, { "-05:30", -19800, "-05:30" }, { "+0545", 20700, "+05:45" },
		{ "UTC+01:00", 3600, "+01:00" }, { "+14:00", 50400, "+14:00" }, { "-12", -43200, "-12:00" },
	};
	static const char *bad[] = { "Europe/Paris", "CET", "", "+2", "+02:", "+15:00", "+14:30", "+02:60",
				     "+02:00x", "UTC+", "02:00", "+-1:00" };
	char buf[16];
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		int32_t off = 1;
		mp_err e = { 0 };
		ck_assert_msg(cron_tz_parse(ok[i].tz, &off, &e) == 0, "%s: %s", ok[i].tz, e.detail);
		ck_assert_int_eq(off, ok[i].off);
		cron_tz_format(off, buf, sizeof buf);
		ck_assert_str_eq(buf, ok[i].canon);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int32_t off = 1;
		mp_err e = { 0 };
		ck_assert_msg(cron_tz_parse(bad[i], &off, &e) == -1, "accepted '%s'", bad[i]);
		ck_assert_str_eq(mp_code_name(e.code), "schedule.bad_timezone");
		ck_assert_int_eq(off, 1);
	}
	/* "0 2 * * *" at +02:00 fires at 00:00 UTC; at -05:30 at 07:30 UTC. */
	struct cron c = parse_ok("0 2 * * *");
	ck_assert(cron_next(&c, 7200, utc(2024, 1, 1, 0, 0)) == utc(2024, 1, 2, 0, 0));
	ck_assert(cron_next(&c, 7200, utc(2023, 12, 31, 23, 0)) == utc(2024, 1, 1, 0, 0));
	ck_assert(cron_next(&c, -19800, utc(2024, 1, 1, 0, 0)) == utc(2024, 1, 1, 7, 30));
	/* The local date decides the day: Monday 00:30 at +01:00 is Sunday 23:30 UTC. */
	c = parse_ok("30 0 * * MON");
	ck_assert(cron_next(&c, 3600, utc(2024, 6, 1, 0, 0)) == utc(2024, 6, 2, 23, 30));
}
END_TEST

static Suite *cron_suite(void)
{
	Suite *s = suite_create("cron");
	TCase *t = tcase_create("cron");
	tcase_add_test(t, accepts_the_syntax);
	tcase_add_test(t, refuses_with_the_field_and_token_named);
	tcase_add_test(t, field_sets);
	tcase_add_test(t, next_simple_and_strictly_after);
	tcase_add_test(t, next_across_month_and_year_ends);
	tcase_add_test(t, next_leap_years);
	tcase_add_test(t, next_dom_dow_or_rule);
	tcase_add_test(t, next_steps);
	tcase_add_test(t, next_agrees_with_a_minute_scan);
	tcase_add_test(t, timezones_fixed_offsets);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(cron_suite)
