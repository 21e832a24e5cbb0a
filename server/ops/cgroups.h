/* cgroups: cpuset.mems read and set (kernel/cgroup.h), validated against the topology and the
 * parent's effective mems, every change recorded as a cgroup.mems operation. */
#ifndef MPD_OPS_CGROUPS_H
#define MPD_OPS_CGROUPS_H

#include <jansson.h>

#include "common/err.h"
#include "server/app.h"
#include "server/ops/processes.h"

/* path: "" for the root, else "a/b" (the client's text, checked here). The cgroup as JSON, or
 * NULL with 400 cgroup.bad_path, 404 cgroup.not_found, 409 cgroup.unavailable. */
json_t *cgroup_get(const struct app *app, const char *path, mp_err *e);

/* body {"mems": "0-1"} ("" = empty: v2 inherits the parent's). Validated before anything is
 * written or recorded; the operation is recorded before the write (a change that cannot be
 * recorded is not made). 0 and *out {"operation_id", "status", ...}; -1 with e, and *out the
 * recorded outcome when the kernel refused (NULL when nothing was recorded). */
int cgroup_set_mems(const struct app *app, const struct proc_caller *who, const char *path, json_t *body,
		    json_t **out, mp_err *e);

#endif
