/* Private to the drift watcher (drift.c, drift_record.c): one managed key as the watcher holds it. */
#ifndef MPD_OPS_DRIFT_INT_H
#define MPD_OPS_DRIFT_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/app.h"
#include "server/kernel/fanwatch.h"
#include "server/kernel/knobs.h"
#include "server/ops/drift.h"
#include "server/ops/drift_cause.h"
#include "server/ops/profile_state.h"

/* A drift that comes back within this of its last sighting, from the same writer, is the same
 * drift: one row, its count up (a process that fights a restore makes one row, not one a write). */
#define DW_SAME_DRIFT_NS (60LL * 1000 * 1000 * 1000)

struct dw_key {
	struct ps_key pk;                /* the profile state's copy of the key */
	const struct knob *knob;         /* PROF_KNOB: in app->knobs */
	bool marked;                     /* its own file has a mark: a write is an event */
	bool timer;                      /* read on the slow timer */
	int nfiles;
	dev_t dev[FW_FILES_MAX];         /* the files whose events are this key's */
	ino_t ino[FW_FILES_MAX];
	bool have_last;
	char last[PS_ACTUAL_MAX];        /* the value at the last check */
	/* The drift row of this key, once there is one. */
	int64_t row;
	bool open;                       /* drifting now */
	int64_t first_ns, last_ns;
	uint64_t count;
	char sig[800];                   /* who caused it, to tell the same drift from another */
	json_t *writer;                  /* owned: the row's writer, or NULL */
	enum drift_cause cause;
};

/* The key's value now as text into buf: 0, or -errno. */
int dw_read(const struct app *app, const struct dw_key *dk, char *buf, size_t len, bool *in_sync);
/* A check of dk: read it, compare with the profile, and when a change broke it, record the drift
 * (cause; wr the writer when an event named one, else NULL) and act on the key's policy. write: a
 * write event (FAN_MODIFY), which counts a drift still open as seen again even when the value
 * is the same. */
void dw_check(const struct app *app, struct dw_key *dk, enum drift_cause cause, const struct drift_writer *wr,
	      bool write);
/* The daemon's own write to dk's file: the new value is the baseline (and ends a drift it mends),
 * when it still reads in sync. */
void dw_note_own(const struct app *app, struct dw_key *dk);
/* dk, of a managed set a new apply replaced, was still drifting: the apply wrote it back, and the
 * drift's row says it ended, actual the value the apply left. The state is the new apply's. */
void dw_end_replaced(const struct app *app, struct dw_key *dk, const char *actual);
void dw_keys_free(struct dw_key *keys, size_t n);

/* The ends of drifts seen (a key back in sync) whose rows are not written yet: how many. */
size_t dw_ends_pending(void);
/* Writes them (one update of its row each) and empties the list. */
void dw_ends_flush(const struct app *app);
/* Frees them unwritten (drift_stop, after a last flush). */
void dw_ends_free(void);

#endif
