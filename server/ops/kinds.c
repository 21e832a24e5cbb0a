/* Every job kind, one line each: the runner (server/jobs/) knows them only from here. A new kind
 * is a `const struct job_kind` in its use case's file (server/jobs/job_ctx.h) and a line below. */
#include "server/ops/kinds.h"

#include "server/jobs/job_ctx.h"
#include "server/ops/conditions.h"
#include "server/ops/pmigrate.h"
#include "server/ops/probes.h"
#include "server/ops/resize.h"

static const struct job_kind *const kinds[] = {
	&resize_job,                 /* hugepages.resize */
	&migrate_job,                /* process.migrate */
	&collapse_job,               /* process.collapse */
};

int ops_register_kinds(struct jobs *j, mp_err *e)
{
	/* Every job records the conditions it ran under: one mechanism, not one per kind. */
	jobs_measure(j, &cond_job_measure);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (jobs_register(j, kinds[i], e) < 0)
			return -1;
	return probes_register(j, e);   /* one kind per entry of the probe table */
}
