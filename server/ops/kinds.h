/* The operation kinds ops/ define: the job kinds, registered with the runner at start, and the
 * kinds recorded without a job. */
#ifndef MPD_OPS_KINDS_H
#define MPD_OPS_KINDS_H

#include <stdio.h>

#include "common/err.h"

struct jobs;

/* Registers every kind in the table in kinds.c; call before jobs_start(). */
int ops_register_kinds(struct jobs *j, mp_err *e);
/* Every operation kind as lines "kind<TAB>job|record<TAB>summary|no-summary" (mempolicyd
 * --list-kinds): job kinds (the table and the probe table), then the kinds recorded without a
 * job; the last column says whether store/summary.c has the kind's own line. 0 or -1. */
int ops_list_kinds(FILE *f);

#endif
