/* The one registry of a job's `reason`: why a job stopped short of its goal or ended the way it
 * did, beside its status (GET /v1/jobs/{id}). A job kind reports an enum, never text, so a reason
 * cannot be spelled twice or made up; `mempolicyd --list-reasons` prints the table, and
 * tools/gen-errors.py writes it into schema/openapi.yaml (Job.reason's enum) and
 * docs/reference/job-reasons.md, which tests/e2e/test_errors.py checks. A reason is never
 * renamed or reused: clients match on it. */
#ifndef MPD_JOBS_REASONS_H
#define MPD_JOBS_REASONS_H

#include <stdio.h>

/* X(ENUM, "name", "meaning"), or C(ENUM, CODE, "meaning") for a reason that is where the job ended
 * on a registered problem: its name is that problem code's (common/errcodes.h, MPE_CODE), so a
 * client matches one spelling for both and the code is spelled only in the registry. */
#define JOB_REASONS(X, C) \
	/* set by the runner */ \
	X(CANCEL_REQUESTED, "cancel_requested", "cancelled by a client (DELETE /v1/jobs/{id}) while it ran; it stopped between steps") \
	X(NOT_STARTED,      "not_started",      "cancelled while queued: it never ran, nothing was changed") \
	X(DAEMON_STOPPING,  "daemon_stopping",  "the daemon was stopped (SIGTERM) while it ran; it stopped between steps") \
	X(RESTART,          "restart",          "the daemon ended while the job was queued or running; the next start marked it interrupted") \
	/* set by job kinds */ \
	X(DEADLINE,         "deadline",         "its deadline passed before it reached every target (partial)") \
	X(NO_PROGRESS,      "no_progress",      "a batch gained nothing: the kernel gave no more pages for a target (partial)") \
	X(NOT_MOVED,        "not_moved",        "the kernel left some of the process's pages where they were (partial)") \
	X(NOT_COLLAPSED,    "not_collapsed",    "some ranges were not collapsed into huge pages (partial)") \
	X(TIMEOUT,          "timeout",          "a probe's pass ran past its time limit and was stopped (failed)") \
	C(PROCESS_CHANGED,  PROCESS_CHANGED,    "the target process is no longer the caller's (it exec'd a set-uid program, or exited) when the job acted (failed)") \
	C(PRIV_LOST,        PRIV_LOST,          "the privileged helper was lost while the job ran; nothing more was done (failed)")

enum job_reason {
	JR_NONE = 0,                 /* no reason: the status says it all */
#define X(e, name, meaning) JR_##e,
#define C(e, code, meaning) JR_##e,
	JOB_REASONS(X, C)
#undef C
#undef X
	JR__COUNT
};

/* The reason's registry name, NULL for JR_NONE (and anything out of range). */
const char *job_reason_name(enum job_reason r);
/* The reason named s, JR_NONE when s is NULL or names none. */
enum job_reason job_reason_by_name(const char *s);
/* The table as lines "name<TAB>meaning" (mempolicyd --list-reasons). 0 or -1. */
int job_reasons_list(FILE *f);

#endif
