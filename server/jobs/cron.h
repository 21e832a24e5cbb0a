/* Five-field cron expressions (minute hour day-of-month month day-of-week) and the next time one
 * fires. Pure computation: no clock, no locale, no TZ environment, so it is safe from any thread.
 *
 * Syntax per field: '*', a number, a range a-b, a step *\/n or a-b/n, and comma lists of these.
 * Months take JAN..DEC and days of the week SUN..SAT (any case); day-of-week 0 and 7 are both
 * Sunday. Macros: @yearly @annually @monthly @weekly @daily @midnight @hourly.
 * The classic (Vixie) day rule: when day-of-month and day-of-week are both restricted (neither
 * field starts with '*'), a day matches if EITHER matches; otherwise both must (the '*' one always
 * does).
 *
 * Time zones: "UTC" and fixed offsets "+HH:MM" / "-HH:MM" (also "UTC+HH:MM"). IANA names are
 * refused: glibc converts them only through the process-global TZ (tzset/localtime), which is not
 * safe to switch per schedule in a threaded daemon, and a fixed offset has no DST gaps or repeats
 * to define away. */
#ifndef MPD_JOBS_CRON_H
#define MPD_JOBS_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct cron {
	uint64_t minute;   /* bit m: minute m (0..59) matches */
	uint32_t hour;     /* bit h: 0..23 */
	uint32_t dom;      /* bit d: 1..31 */
	uint16_t month;    /* bit m: 1..12 */
	uint8_t dow;       /* bit d: 0..6, Sunday 0 (7 is folded into 0) */
	bool dom_star;     /* the day-of-month field started with '*' */
	bool dow_star;     /* the day-of-week field started with '*' */
};

enum cron_field { CRON_MINUTE, CRON_HOUR, CRON_DOM, CRON_MONTH, CRON_DOW, CRON_NFIELDS };

/* The field names used in error messages: "minute", "hour", "day-of-month", "month", "day-of-week". */
const char *cron_field_name(int field);

/* Parses text into *out. On error fills e with 422 MPE_SCHEDULE_BAD_CRON and a detail naming the
 * field and the bad token, sets *bad_field (if not NULL) to the field index (-1 when the
 * expression as a whole is wrong: field count, unknown macro, never fires) and returns -1. */
int cron_parse(const char *text, struct cron *out, int *bad_field, mp_err *e);

/* Does the minute starting at local time t (seconds since the epoch, already shifted by the
 * offset) match? */
bool cron_matches(const struct cron *c, int64_t local_s);

/* "UTC", "Z", "+HH:MM", "-HH:MM", "+HHMM", "UTC+HH:MM": the offset east of UTC in seconds (at most
 * 14 hours). 0 or -1 with 422 MPE_SCHEDULE_BAD_TIMEZONE. */
int cron_tz_parse(const char *tz, int32_t *offset_s, mp_err *e);
/* The canonical spelling stored and shown: "UTC" for 0, else "+HH:MM" / "-HH:MM". */
void cron_tz_format(int32_t offset_s, char *buf, size_t len);

/* The first minute strictly after `after` (UTC seconds) at which c fires in a zone offset_s east of
 * UTC, as UTC seconds; -1 if it never fires within the next 10 years (e.g. "0 0 30 2 *"). */
int64_t cron_next(const struct cron *c, int32_t offset_s, int64_t after);

#endif
