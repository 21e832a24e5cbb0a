/* server/jobs/cron.c: the parser, the time-zone parser and the next-fire search.
 *
 * Input is text, one item a line: the cron expression, then optionally a time zone, then
 * optionally `after` (decimal UTC seconds). Properties checked when the expression parses:
 *   - the parsed sets hold only values their fields allow;
 *   - cron_next(after) exists (a parsed expression fires within any 400 years), is a whole
 *     minute, strictly after `after`, and matches: by cron_matches AND by an independent matcher
 *     built on gmtime_r (so the calendar arithmetic is checked against the C library's);
 *   - no minute between `after` and next matches (the first 1500 are checked one by one);
 *   - cron_next is stable: from next-1 it finds next again, and from next it moves on;
 *   - it neither starts nor ends with a blank, and no number in it has more than two digits.
 * A refused expression or zone fails with 422 and its documented code. */
#include <time.h>

#include "common/parse.h"
#include "server/jobs/cron.h"
#include "server/api/api.h"
#include "tests/fuzz/fuzz.h"

#define SCAN_MINUTES 1500
#define AFTER_LIMIT (1LL << 37)   /* about 4000 years either side of 1970: the clock's range */

/* The cron rule restated over struct tm, the way a reader of crontab(5) would write it. */
static bool ref_matches(const struct cron *c, int64_t local_s)
{
	time_t t = (time_t)local_s;
	struct tm tm;

	FZ_ASSERT(gmtime_r(&t, &tm), "gmtime_r(%lld)", (long long)local_s);
	bool dom = c->dom >> tm.tm_mday & 1, dow = c->dow >> tm.tm_wday & 1;
	bool day = c->dom_star || c->dow_star ? dom && dow : dom || dow;
	return (c->minute >> tm.tm_min & 1) && (c->hour >> tm.tm_hour & 1) && (c->month >> (tm.tm_mon + 1) & 1) &&
	       day;
}

static size_t longest_number(const char *s)
{
	size_t best = 0;

	for (size_t n; *s; s += n ? n : 1)
		if ((n = strspn(s, "0123456789")) > best)
			best = n;
	return best;
}

static int64_t mod(int64_t a, int64_t b)
{
	return (a % b + b) % b;
}

static void check_next(const struct cron *c, const char *expr, int32_t off, int64_t after)
{
	int64_t next = cron_next(c, off, after);

	/* -1 means "never"; other negative values are real minutes before 1970. */
	FZ_ASSERT(next != -1, "'%s' (offset %d) parsed but never fires after %lld", expr, off, (long long)after);
	FZ_ASSERT(next > after, "'%s': next %lld is not after %lld", expr, (long long)next, (long long)after);
	FZ_ASSERT(mod(next, 60) == 0, "'%s': next %lld is not a whole minute", expr, (long long)next);
	FZ_ASSERT(cron_matches(c, next + off), "'%s': next %lld does not match", expr, (long long)next);
	FZ_ASSERT(ref_matches(c, next + off), "'%s': next %lld does not match by gmtime_r", expr, (long long)next);
	/* 400 Gregorian years and a leap day: a longer wait means the search skipped a match. */
	FZ_ASSERT(next - after <= (146097LL + 366) * 86400, "'%s': next is %lld s away", expr,
		  (long long)(next - after));
	for (int64_t t = (after - mod(after, 60)) + 60, i = 0; t < next && i < SCAN_MINUTES; t += 60, i++) {
		bool ours = cron_matches(c, t + off), ref = ref_matches(c, t + off);
		FZ_ASSERT(ours == ref, "'%s': cron_matches(%lld) = %d, gmtime_r says %d", expr, (long long)(t + off),
			  ours, ref);
		FZ_ASSERT(!ours, "'%s' (offset %d): %lld matches but next after %lld is %lld", expr, off,
			  (long long)t, (long long)after, (long long)next);
	}
	FZ_ASSERT(cron_next(c, off, next - 1) == next, "'%s': not stable from next-1", expr);
	int64_t again = cron_next(c, off, next);
	FZ_ASSERT(again > next && cron_matches(c, again + off), "'%s': from next %lld got %lld", expr,
		  (long long)next, (long long)again);
}

static void check_tz(const char *tz, int32_t *off)
{
	mp_err e = { 0 };
	int32_t o = 12345, back = 0;
	char buf[32];

	if (cron_tz_parse(tz, &o, &e) < 0) {
		FZ_ASSERT(api_status(&e) == 422 && !strcmp(mp_code_name(e.code), "schedule.bad_timezone"), "tz error %d %s", api_status(&e),
			  mp_code_name(e.code));
		*off = 0;
		return;
	}
	FZ_ASSERT(o >= -14 * 3600 && o <= 14 * 3600 && o % 60 == 0, "timezone '%s' -> offset %d", tz, o);
	cron_tz_format(o, buf, sizeof buf);
	FZ_ASSERT(cron_tz_parse(buf, &back, &e) == 0 && back == o, "'%s' -> %d -> '%s' -> %d", tz, o, buf, back);
	*off = o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fz_cstr(data, size), *tz = NULL, *after_text = NULL, *nl;
	struct cron c;
	mp_err e = { 0 };
	int bad_field = 99;
	int32_t off = 0;
	int64_t after;

	if ((nl = strchr(s, '\n'))) {
		*nl = '\0';
		tz = nl + 1;
		if ((nl = strchr(tz, '\n'))) {
			*nl = '\0';
			after_text = nl + 1;
		}
	}
	if (tz && *tz)
		check_tz(tz, &off);
	if (cron_parse(s, &c, &bad_field, &e) < 0) {
		FZ_ASSERT(api_status(&e) == 422 && !strcmp(mp_code_name(e.code), "schedule.bad_cron") && e.detail[0],
			  "'%s' refused with %d %s", s, api_status(&e), mp_code_name(e.code));
		FZ_ASSERT(bad_field >= -1 && bad_field < CRON_NFIELDS, "bad_field %d", bad_field);
		goto out;
	}
	FZ_ASSERT(bad_field == -1, "accepted, yet bad_field is %d", bad_field);
	FZ_ASSERT(s[0] != ' ' && s[0] != '\t' && s[strlen(s) - 1] != ' ' && s[strlen(s) - 1] != '\t',
		  "'%s': accepted with a blank before or after it", s);
	FZ_ASSERT(longest_number(s) <= 2, "'%s': accepted with a number of three digits or more", s);
	FZ_ASSERT(!(c.minute >> 60) && !(c.hour >> 24) && !(c.dom & 1) && !(c.month & 0xe001) && !(c.dow & 0x80),
		  "'%s': a value outside its field (minute %llx hour %x dom %x month %x dow %x)", s,
		  (unsigned long long)c.minute, c.hour, c.dom, c.month, c.dow);
	FZ_ASSERT(c.minute && c.hour && c.dom && c.month && c.dow, "'%s': a field with no value", s);
	if (after_text && parse_i64(after_text, &after) == 0) {
		check_next(&c, s, off, after % AFTER_LIMIT);
	} else {
		check_next(&c, s, off, 1700000000);   /* 2023-11-14 */
		check_next(&c, s, off, -1);           /* just before the epoch */
	}
out:
	free(s);
	return 0;
}
