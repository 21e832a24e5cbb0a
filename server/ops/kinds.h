/* The job kinds ops/ define, registered with the runner at start. */
#ifndef MPD_OPS_KINDS_H
#define MPD_OPS_KINDS_H

#include "common/err.h"

struct jobs;

/* Registers every kind in the table in kinds.c; call before jobs_start(). */
int ops_register_kinds(struct jobs *j, mp_err *e);

#endif
