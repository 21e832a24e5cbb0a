/* Every operation kind, the one table: the job kinds the runner (server/jobs/) knows only from
 * here, and the kinds that are recorded without a job. A new job kind is a `const struct job_kind`
 * in its use case's file, declared extern in its header, and a line below (docs/DESIGN.md, "How
 * to add a job kind"); `mempolicyd --list-kinds` prints the table, and tests/e2e/test_kinds.py
 * fails when a kind has no summary line (server/store/summary.c) or a recorded kind is missing. */
#include "server/ops/kinds.h"

#include <stdio.h>
#include <string.h>

#include "server/jobs/job_ctx.h"
#include "server/ops/conditions.h"
#include "server/ops/pmigrate.h"
#include "server/ops/probes.h"
#include "server/ops/profile_apply.h"
#include "server/ops/resize.h"
#include "server/probes/probe.h"
#include "server/store/summary.h"

static const struct job_kind *const kinds[] = {
	&resize_job,                 /* hugepages.resize */
	&migrate_job,                /* process.migrate */
	&collapse_job,               /* process.collapse */
	&profile_apply_job,          /* profile.apply */
};

/* Operations recorded in history without a job, each by the file named. */
static const char *const recorded[] = {
	"knobs.set",                 /* ops/knobs.c */
	"cgroup.mems",               /* ops/cgroups.c */
	"process.launch",            /* ops/launch.c */
	"process.sample",            /* ops/processes.c */
	"schedule.run",              /* ops/schedules.c: a skip, or a run that could not start */
	"probe.restore",             /* ops/restore.c */
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

static int line(FILE *f, const char *kind, const char *how)
{
	return fprintf(f, "%s\t%s\t%s\n", kind, how, op_summary_has(kind) ? "summary" : "no-summary") < 0 ? -1 : 0;
}

int ops_list_kinds(FILE *f)
{
	int rc = 0;

	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		rc |= line(f, kinds[i]->name, "job");
	for (size_t i = 0; i < probe_nkinds; i++)
		rc |= line(f, probe_kinds[i]->job, "job");
	for (size_t i = 0; i < sizeof recorded / sizeof recorded[0]; i++)
		rc |= line(f, recorded[i], "record");
	return fflush(f) == 0 && !rc ? 0 : -1;
}
