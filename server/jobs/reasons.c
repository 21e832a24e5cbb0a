/* The job reasons' registry (see reasons.h). */
#include "server/jobs/reasons.h"

#include <string.h>

#include "common/err.h"

/* A row names itself (name) or is named by its problem code (code, name NULL). */
static const struct {
	const char *name;
	enum mp_code code;
	const char *meaning;
} reasons[JR__COUNT] = {
#define X(e, n, m) [JR_##e] = { n, MPE_NONE, m },
#define C(e, c, m) [JR_##e] = { NULL, MPE_##c, m },
	JOB_REASONS(X, C)
#undef C
#undef X
};

const char *job_reason_name(enum job_reason r)
{
	if (r <= JR_NONE || r >= JR__COUNT)
		return NULL;
	return reasons[r].name ? reasons[r].name : mp_code_name(reasons[r].code);
}

enum job_reason job_reason_by_name(const char *s)
{
	for (int r = JR_NONE + 1; s && r < JR__COUNT; r++)
		if (!strcmp(job_reason_name((enum job_reason)r), s))
			return (enum job_reason)r;
	return JR_NONE;
}

int job_reasons_list(FILE *f)
{
	for (int r = JR_NONE + 1; r < JR__COUNT; r++)
		if (fprintf(f, "%s\t%s\n", job_reason_name((enum job_reason)r), reasons[r].meaning) < 0)
			return -1;
	return fflush(f) == 0 ? 0 : -1;
}
