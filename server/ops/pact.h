/* What pmigrate.c and pcollapse.c share: the target process (pid, start time, placement at
 * submission, who may act on it), the job argument, and the placement summary they record. */
#ifndef MPD_OPS_PACT_H
#define MPD_OPS_PACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/jsonfields.h"
#include "common/parse.h"
#include "server/kernel/placement.h"
#include "server/jobs/job_ctx.h"
#include "server/ops/pmigrate.h"

struct pact_target {
	pid_t pid;
	uint64_t start_time;
	struct placement before;     /* owned while have_before */
	bool have_before;
};

/* Parses the pid, reads the process (404/409 on the start time the body may carry), checks the
 * caller may act on it (pmigrate.h). pact_target_free releases it. */
int pact_target(const struct app *app, const char *pid_text, const json_t *body, const struct pact_caller *who,
		struct pact_target *t, mp_err *e);
void pact_target_free(struct pact_target *t);

struct pact_args {
	const struct app *app;       /* borrowed */
	pid_t pid;
	uint64_t start_time;
	/* A caller who is not an admin may act only on a process of its own: the uid it was
	 * authorised as at submission, judged again when the job acts (pact_still_theirs). */
	bool check_owner;
	uid_t owner_uid;
	idset from, to;              /* migrate */
	char from_text[256], to_text[256];
	bool has_range;              /* collapse: one range [start, end), else every anonymous mapping */
	uint64_t start, end;
};

/* The job's argument for t, submitted by who. */
void pact_args_target(struct pact_args *a, const struct app *app, const struct pact_target *t,
		      const struct pact_caller *who);
/* Right before the job acts (after false) and right after (true): the process pidfd (borrowed)
 * names is alive, so the pid named it throughout, and, for a caller who is not an admin, every
 * uid of it is still the caller's and it is dumpable. 0, or -1 with out failed: reason
 * process.changed (EPERM) when its credentials changed since the submission, ESRCH when it
 * exited. */
int pact_still_theirs(const struct pact_args *a, int pidfd, bool after, struct job_outcome *out);

/* Per node: {"node", "bytes", "pages" (4 KiB), "thp_bytes"}. */
json_t *pact_nodes_json(const struct placement *p);
uint64_t pact_node_bytes(const struct placement *p, const idset *nodes);
void pact_key(const void *arg, char *key, size_t len);

#endif
