/* Putting back what an operation changed, on every path. Before an operation changes a knob or a
 * pool it saves the current value here: a row in the restores table (store/restores.h) is written
 * first, so that the change is never made without a record of how to undo it. restore_all() puts
 * every saved value back in reverse order when the operation ends (done, failed or cancelled);
 * restore_at_start() does it at the next start for rows a dead daemon left, and records that it
 * did as a probe.restore operation. */
#ifndef MPD_OPS_RESTORE_H
#define MPD_OPS_RESTORE_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"

struct app;

#define RESTORE_MAX 16

struct restore_set {
	const struct app *app;       /* borrowed */
	int64_t op_id;               /* the operation making the changes */
	int n;
	struct {
		int64_t row;             /* restores.id */
		char what[8];            /* "knob" or "pool" */
		char target[96];         /* knob name, or "<size_kb>" / "<size_kb>:<node>" */
		char value[64];          /* kernel text to write back */
	} r[RESTORE_MAX];
};

/* Saves the knob's current value (once per knob: a second save of the same one is a no-op).
 * Fails with nothing saved: 404 knob.unknown, 409 knob.unavailable, store errors. */
int restore_save_knob(struct restore_set *rs, const char *knob, mp_err *e);
/* Saves nr_hugepages of the pool of size_kb (node < 0: the global pool). */
int restore_save_pool(struct restore_set *rs, uint64_t size_kb, int node, mp_err *e);
/* Writes every saved value back, newest first, and deletes the row of each one written back (the
 * others are left for restore_at_start at the next start); returns what happened to each
 * ([{"what", "target", "value", "status": "restored" | "restore_failed", "errno"?, "now"?}],
 * owned). A pool that could not shrink back (pages in use) is restore_failed with "now". */
json_t *restore_all(struct restore_set *rs);
/* At start, before the API serves: restores every row left behind and records a probe.restore
 * operation listing them; a row whose value could not be written back stays for the next start,
 * unless this kernel can never take it (ENOENT, EINVAL). Returns how many rows there were, or -1. */
int restore_at_start(const struct app *app, mp_err *e);

#endif
