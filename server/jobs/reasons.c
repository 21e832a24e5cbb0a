/* The job reasons' registry (see reasons.h). */
#include "server/jobs/reasons.h"

#include <string.h>

static const struct {
	const char *name, *meaning;
} reasons[JR__COUNT] = {
#define X(e, n, m) [JR_##e] = { n, m },
	JOB_REASONS(X)
#undef X
};

const char *job_reason_name(enum job_reason r)
{
	return r > JR_NONE && r < JR__COUNT ? reasons[r].name : NULL;
}

enum job_reason job_reason_by_name(const char *s)
{
	for (int r = JR_NONE + 1; s && r < JR__COUNT; r++)
		if (!strcmp(reasons[r].name, s))
			return (enum job_reason)r;
	return JR_NONE;
}

int job_reasons_list(FILE *f)
{
	for (int r = JR_NONE + 1; r < JR__COUNT; r++)
		if (fprintf(f, "%s\t%s\n", reasons[r].name, reasons[r].meaning) < 0)
			return -1;
	return fflush(f) == 0 ? 0 : -1;
}
