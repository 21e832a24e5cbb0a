/* The maintenance thread: retention off the request path. It runs a pass at start and then every
 * MAINT_INTERVAL_S (or when kicked), each pass a series of small store_prune() transactions with a
 * pause between them, so that a request's write never waits for more than one small transaction.
 * It knows nothing of what it keeps: the rule is the store's (store/retain.h). */
#ifndef MPD_JOBS_MAINT_H
#define MPD_JOBS_MAINT_H

#include "common/err.h"
#include "server/store/retain.h"

#define MAINT_INTERVAL_S 60

struct maint;

/* Starts the thread on store st (borrowed, must outlive it) with the rule r (copied). */
struct maint *maint_start(struct store *st, const struct retention *r, mp_err *e);
/* Run a pass now (SIGHUP, or the test clock moved). NULL is fine. */
void maint_kick(struct maint *m);
/* Stops between two transactions, joins, frees. NULL is fine. */
void maint_stop(struct maint *m);

#endif
