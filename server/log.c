#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level level = LOG_LVL_INFO;
static const char *const names[] = { "error", "warn", "info", "debug" };

int log_set_level(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, names[i])) {
			level = (enum log_level)i;
			return 0;
		}
	return -1;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (lvl > level)
		return;
	/* The kernel's time even under the test clock (server/clock.h): a log is read beside other
	 * logs and the test's own timing, and the test clock's times are in the lines that matter. */
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* One fprintf per line so lines from worker threads do not interleave. */
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s\n", tm.tm_year + 1900, tm.tm_mon + 1,
		tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[lvl], line);
}
