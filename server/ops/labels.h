/* The node labels file (--node-labels-file): the node's slowly changing state as a Node Feature
 * Discovery local feature file (server/fleet/nfd.h, docs/reference/fleet.md), written by one
 * thread of the serving process through the privileged act (act_labels_write).
 *
 * It is written at start, after every operation the store records (a knob set, a resize, a
 * profile applied: server/observe.c, which every operation passes, calls labels_changed), and on
 * a timer whose only purpose is the expiry: every
 * LABELS_REFRESH_S it is written again with an expiry LABELS_EXPIRY_S ahead, so that the labels
 * of a daemon that died lapse within LABELS_EXPIRY_S (plus NFD's re-read interval). Nothing polls
 * the kernel beyond that timer: a change made behind the daemon's back shows at the next refresh.
 * A rebuild whose labels equal the last file's is not written unless the refresh is due, so NFD's
 * watch on its directory sees no churn. */
#ifndef MPD_OPS_LABELS_H
#define MPD_OPS_LABELS_H

#include "common/err.h"

struct app;

#define LABELS_EXPIRY_S  300
#define LABELS_REFRESH_S 120
/* After a failed write (the directory missing, say: NFD not installed yet), the next try. */
#define LABELS_RETRY_S   30

/* Starts the writer of path (borrowed, lives as long as the config) over app (borrowed, complete
 * and read-only: call right before serving starts). One per process. 0, or -1 with e. */
int labels_start(const struct app *app, const char *path, mp_err *e);
/* Stops and joins it; the file stays (its expiry ends it). Safe when never started. */
void labels_stop(void);
/* Something the labels show may have changed: the writer rebuilds the text soon. Any thread; a
 * no-op when no writer runs. */
void labels_changed(void);

#endif
