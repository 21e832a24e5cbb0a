#include "server/jobs/cron.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CRON_MAX_TEXT 256
/* 400 Gregorian years repeat exactly (weekdays included), so a search this long that finds
 * nothing proves the expression never fires ("0 0 29 2 *\/7": Feb 29 on a Sunday is 28 years apart). */
#define CRON_SEARCH_DAYS (146097 + 366)

static const char *const month_names[] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
					   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", NULL };
static const char *const dow_names[] = { "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL };

static const struct field_spec {
	const char *name;
	int min, max;
	const char *const *names;  /* names[i] is value min + i */
	const char *hint;          /* what a value may be, for messages */
} fields[CRON_NFIELDS] = {
	[CRON_MINUTE] = { "minute",       0, 59, NULL,        "0-59" },
	[CRON_HOUR]   = { "hour",         0, 23, NULL,        "0-23" },
	[CRON_DOM]    = { "day-of-month", 1, 31, NULL,        "1-31" },
	[CRON_MONTH]  = { "month",        1, 12, month_names, "1-12 or JAN-DEC" },
	[CRON_DOW]    = { "day-of-week",  0,  7, dow_names,   "0-7 (0 and 7 are Sunday) or SUN-SAT" },
};

static const struct {
	const char *macro;
	const char *expr;
} macros[] = {
	{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },    { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

const char *cron_field_name(int field)
{
	return field >= 0 && field < CRON_NFIELDS ? fields[field].name : "expression";
}

static int bad(mp_err *e, int *bad_field, int field, const char *fmt, const char *tok, const char *elem)
{
	char what[200];

	if (bad_field)
		*bad_field = field;
	snprintf(what, sizeof what, fmt, tok);
	if (field < 0)
		return mp_fail(e, MPE_SCHEDULE_BAD_CRON, 0, "cron expression: %s", what);
	return mp_fail(e, MPE_SCHEDULE_BAD_CRON, 0, "cron %s field: %s (in '%s'; allowed %s)",
		       fields[field].name, what, elem, fields[field].hint);
}

/* One value at *pp: digits, or a name when the field has names. Advances *pp. */
static int value(const struct field_spec *f, const char **pp, int *out)
{
	const char *p = *pp;
	int v = 0, n = 0;

	if (isdigit((unsigned char)*p)) {
		/* Two digits at most: every field's values do (59, 31), and crontab's "05" stays
		 * readable, but "000" or "007" is no one's way of writing a minute. */
		while (isdigit((unsigned char)*p)) {
			if (++n > 2)
				return -1;
			v = v * 10 + (*p++ - '0');
		}
	} else if (f->names && isalpha((unsigned char)*p)) {
		while (isalpha((unsigned char)p[n]))
			n++;
		if (n != 3)
			return -1;
		for (v = 0; f->names[v] && strncasecmp(f->names[v], p, 3); v++)
			;
		if (!f->names[v])
			return -1;
		v += f->min;
		p += 3;
	} else {
		return -1;
	}
	*pp = p;
	*out = v;
	return 0;
}

/* The value text of a bad token, for the message: up to the next '-', '/' or end. */
static const char *token(const char *p, char *buf, size_t len)
{
	size_t n = strcspn(p, "-/");
	if (n == 0)
		n = strlen(p);
	snprintf(buf, len, "%.*s", (int)(n < len - 1 ? n : len - 1), p);
	return buf;
}

/* One comma-separated element of a field: *, *\/n, a, a-b, a-b/n. Sets bits in *set. */
static int element(int fi, const char *elem, uint64_t *set, int *bad_field, mp_err *e)
{
	const struct field_spec *f = &fields[fi];
	const char *p = elem;
	char tok[64];
	int lo, hi, step = 1;
	bool range = false;

	if (!*elem)
		return bad(e, bad_field, fi, "%sempty list element", "", elem);
	if (*p == '*') {
		lo = f->min;
		hi = fi == CRON_DOW ? 6 : f->max;
		range = true;
		p++;
	} else {
		if (value(f, &p, &lo) < 0)
			return bad(e, bad_field, fi, "'%s' is not a valid value", token(p, tok, sizeof tok), elem);
		hi = lo;
		if (*p == '-') {
			p++;
			if (value(f, &p, &hi) < 0)
				return bad(e, bad_field, fi, "'%s' is not a valid range end",
					   token(p, tok, sizeof tok), elem);
			range = true;
		}
	}
	if (*p == '/') {
		const char *s = ++p;
		int n = 0;
		if (!range)
			return bad(e, bad_field, fi, "a step needs '*' or a range before '/'%s", "", elem);
		step = 0;
		while (isdigit((unsigned char)*p) && n++ < 2)   /* at most 60: two digits, as for values */
			step = step * 10 + (*p++ - '0');
		if (p == s || *p)
			return bad(e, bad_field, fi, "'%s' is not a valid step", s, elem);
		if (step < 1 || step > f->max - f->min + 1) {
			snprintf(tok, sizeof tok, "%d", step);
			return bad(e, bad_field, fi, "step %s is out of range", tok, elem);
		}
	}
	if (*p)
		return bad(e, bad_field, fi, "unexpected '%s'", p, elem);
	if (lo < f->min || lo > f->max) {
		snprintf(tok, sizeof tok, "%d", lo);
		return bad(e, bad_field, fi, "%s is out of range", tok, elem);
	}
	if (hi < f->min || hi > f->max) {
		snprintf(tok, sizeof tok, "%d", hi);
		return bad(e, bad_field, fi, "%s is out of range", tok, elem);
	}
	if (lo > hi)
		return bad(e, bad_field, fi, "range '%s' runs backwards", elem, elem);
	for (int v = lo; v <= hi; v += step)
		*set |= 1ULL << (fi == CRON_DOW && v == 7 ? 0 : v);
	return 0;
}

static int field(int fi, char *text, uint64_t *set, int *bad_field, mp_err *e)
{
	char *save = NULL, *elem;
	size_t len = strlen(text);

	*set = 0;
	/* strtok would merge ",," into one separator; an empty element is an error, not a no-op. */
	if (text[0] == ',' || text[len - 1] == ',' || strstr(text, ",,"))
		return bad(e, bad_field, fi, "%sempty list element", "", text);
	for (elem = strtok_r(text, ",", &save); elem; elem = strtok_r(NULL, ",", &save))
		if (element(fi, elem, set, bad_field, e) < 0)
			return -1;
	return 0;
}

int cron_parse(const char *text, struct cron *out, int *bad_field, mp_err *e)
{
	char buf[CRON_MAX_TEXT + 1];
	char *f[CRON_NFIELDS + 1], *save = NULL, *p;
	uint64_t set[CRON_NFIELDS];
	int n = 0;

	if (bad_field)
		*bad_field = -1;
	if (strlen(text) > CRON_MAX_TEXT)
		return bad(e, bad_field, -1, "longer than %s characters", "256", text);
	/* Blanks separate fields (spaces or tabs, as in crontab(5)); the expression is a value, not a
	 * crontab line, and does not start or end with one. */
	if (*text && (strchr(" \t", text[0]) || strchr(" \t", text[strlen(text) - 1])))
		return bad(e, bad_field, -1, "%sstarts or ends with a space or tab", "", text);
	if (text[0] == '@') {
		size_t i;
		for (i = 0; i < sizeof macros / sizeof macros[0]; i++)
			if (!strcasecmp(text, macros[i].macro))
				break;
		if (i == sizeof macros / sizeof macros[0])
			return bad(e, bad_field, -1, "unknown macro '%s' (@yearly, @annually, @monthly, @weekly, "
				   "@daily, @midnight, @hourly)", text, text);
		text = macros[i].expr;
	}
	snprintf(buf, sizeof buf, "%s", text);
	for (p = strtok_r(buf, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
		if (n == CRON_NFIELDS)
			return bad(e, bad_field, -1, "more than five fields (minute hour day-of-month month "
				   "day-of-week), at '%s'", p, p);
		f[n++] = p;
	}
	if (n < CRON_NFIELDS) {
		char cnt[16];
		snprintf(cnt, sizeof cnt, "%d", n);
		return bad(e, bad_field, -1, "%s fields where five are needed (minute hour day-of-month "
			   "month day-of-week)", cnt, text);
	}
	for (int i = 0; i < CRON_NFIELDS; i++)
		if (field(i, f[i], &set[i], bad_field, e) < 0)
			return -1;
	out->minute = set[CRON_MINUTE];
	out->hour = (uint32_t)set[CRON_HOUR];
	out->dom = (uint32_t)set[CRON_DOM];
	out->month = (uint16_t)set[CRON_MONTH];
	out->dow = (uint8_t)set[CRON_DOW];
	out->dom_star = f[CRON_DOM][0] == '*';
	out->dow_star = f[CRON_DOW][0] == '*';
	if (cron_next(out, 0, 0) < 0)
		return bad(e, bad_field, -1, "'%s' never fires (no such day in the months named)", text, text);
	return 0;
}

/* Proleptic Gregorian calendar <-> days since 1970-01-01 (H. Hinnant's algorithms): exact for any
 * year and independent of the C library's time zone state. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static bool day_matches(const struct cron *c, int64_t days, int d)
{
	int dow = (int)((days % 7 + 11) % 7);  /* 1970-01-01 was a Thursday (4) */
	bool dom_ok = c->dom >> d & 1, dow_ok = c->dow >> dow & 1;
	return c->dom_star || c->dow_star ? dom_ok && dow_ok : dom_ok || dow_ok;
}

bool cron_matches(const struct cron *c, int64_t local_s)
{
	int64_t days = floor_div(local_s, 86400), y;
	int64_t secs = local_s - days * 86400;
	int m, d;

	civil_from_days(days, &y, &m, &d);
	return (c->month >> m & 1) && day_matches(c, days, d) && (c->hour >> (secs / 3600) & 1) &&
	       (c->minute >> (secs % 3600 / 60) & 1);
}

int64_t cron_next(const struct cron *c, int32_t offset_s, int64_t after)
{
	int64_t local = (floor_div(after, 60) + 1) * 60 + offset_s;
	int64_t limit = floor_div(local, 86400) + CRON_SEARCH_DAYS;

	for (;;) {
		int64_t days = floor_div(local, 86400), secs = local - days * 86400, y;
		int m, d, h, mi;

		if (days > limit)
			return -1;
		civil_from_days(days, &y, &m, &d);
		if (!(c->month >> m & 1)) {
			local = (m == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, m + 1, 1)) * 86400;
			continue;
		}
		if (!day_matches(c, days, d)) {
			local = (days + 1) * 86400;
			continue;
		}
		h = (int)(secs / 3600);
		if (!(c->hour >> h & 1)) {
			local = days * 86400 + (int64_t)(h + 1) * 3600;
			continue;
		}
		for (mi = (int)(secs % 3600 / 60); mi < 60 && !(c->minute >> mi & 1); mi++)
			;
		if (mi == 60) {
			local = days * 86400 + (int64_t)(h + 1) * 3600;
			continue;
		}
		return days * 86400 + (int64_t)h * 3600 + mi * 60 - offset_s;
	}
}

int cron_tz_parse(const char *tz, int32_t *offset_s, mp_err *e)
{
	const char *p = tz;
	int sign, hh, mm = 0;

	if (!strcasecmp(tz, "UTC") || !strcmp(tz, "Z")) {
		*offset_s = 0;
		return 0;
	}
	if (!strncasecmp(p, "UTC", 3))
		p += 3;
	if (*p != '+' && *p != '-')
		goto bad;
	sign = *p++ == '-' ? -1 : 1;
	if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
		goto bad;
	hh = (p[0] - '0') * 10 + (p[1] - '0');
	p += 2;
	if (*p == ':')
		p++;
	if (*p) {
		if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]) || p[2])
			goto bad;
		mm = (p[0] - '0') * 10 + (p[1] - '0');
	} else if (p[-1] == ':') {
		goto bad;
	}
	if (hh > 14 || mm > 59 || (hh == 14 && mm))
		goto bad;
	*offset_s = sign * (hh * 3600 + mm * 60);
	return 0;
bad:
	return mp_fail(e, MPE_SCHEDULE_BAD_TIMEZONE, 0,
		       "timezone '%.64s' is not supported: use \"UTC\" or a fixed offset like \"+02:00\" "
		       "(IANA zone names are not supported: see docs)", tz);
}

void cron_tz_format(int32_t offset_s, char *buf, size_t len)
{
	int32_t a = offset_s < 0 ? -offset_s : offset_s;

	if (!offset_s)
		snprintf(buf, len, "UTC");
	else
		snprintf(buf, len, "%c%02d:%02d", offset_s < 0 ? '-' : '+', (int)(a / 3600), (int)(a % 3600 / 60));
}
