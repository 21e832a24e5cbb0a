/* Changing a running process's placement, as jobs (a large process takes seconds):
 *   process.migrate  migrate_pages(2) from some nodes to others; the placement before and after,
 *                    pages moved and not moved, elapsed, and the pgmigrate_* / thp_migration_*
 *                    deltas of /proc/vmstat;
 *   process.collapse process_madvise(MADV_COLLAPSE) over a range or every anonymous mapping;
 *                    AnonHugePages before and after, per range the errno when it failed.
 * Both act on a process named by pid and start time: the start time is fixed at submission
 * (the one the request carried, else the one read then) and checked again right before the
 * syscall, so a pid reused meanwhile is never acted on. One job per process at a time
 * (conflict key "process:<pid>"). */
#ifndef MPD_OPS_PMIGRATE_H
#define MPD_OPS_PMIGRATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "server/jobs/job_ctx.h"

struct app;

/* The caller as the API knows it. */
struct pact_caller {
	bool known;                  /* false over TCP */
	bool admin;                  /* root or the admin group */
	uid_t uid;
	const char *name;            /* borrowed */
};

extern const struct job_kind migrate_job;
extern const struct job_kind collapse_job;

/* POST /v1/processes/{pid}/migrate {"from": "0", "to": "1", "start_time": N?}. Who may: an admin,
 * or the process's own user when its real, effective and saved uids are the caller's and it is
 * dumpable (the kernel's PTRACE_MODE_READ_REALCREDS rule for migrate_pages, uid part, checked
 * here because the daemon's own call runs as root). Returns the job (202), or fails: 400 on the
 * body, MPE_NODES_* on the nodes, 404/409 on the process, 403, 409 MPE_JOB_CONFLICT. */
json_t *migrate_submit(const struct app *app, const char *pid_text, const json_t *body, const struct pact_caller *who,
		       int64_t *conflict_id, mp_err *e);

/* POST /v1/processes/{pid}/collapse {} | {"range": {"start": A, "length": N}}, "start_time": N?.
 * Admins only (process_madvise on another process needs CAP_SYS_NICE). 409
 * MPE_PROCESS_UNSUPPORTED where the kernel lacks MADV_COLLAPSE. */
json_t *collapse_submit(const struct app *app, const char *pid_text, const json_t *body, const struct pact_caller *who,
			int64_t *conflict_id, mp_err *e);

#endif
