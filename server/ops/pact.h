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
	idset from, to;              /* migrate */
	char from_text[256], to_text[256];
	bool has_range;              /* collapse: one range [start, end), else every anonymous mapping */
	uint64_t start, end;
};

/* Per node: {"node", "bytes", "pages" (4 KiB), "thp_bytes"}. */
json_t *pact_nodes_json(const struct placement *p);
uint64_t pact_node_bytes(const struct placement *p, const idset *nodes);
void pact_key(const void *arg, char *key, size_t len);

#endif
