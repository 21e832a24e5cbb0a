/* Slow handlers off libmicrohttpd's workers. A connection stays with the worker thread that
 * accepted it, so a handler that scans (GET /v1/history/stats walks up to a million rows) would
 * hold up every other connection of that worker, root's changes included, and compete with them
 * for the CPU. A route flagged R_SLOW is run here instead: its connection is suspended, the
 * handler runs on one thread of its own at SCHED_IDLE (it gets a CPU only when nothing else
 * wants one, so writers are not slowed by it; under full load it waits), and the connection is
 * resumed to send the answer. One thread: scans run one at a time. */
#ifndef MPD_API_SLOW_H
#define MPD_API_SLOW_H

#include "common/err.h"

struct MHD_Connection;
struct slow;

/* resume: how a connection is resumed once its handler ran (the caller's, as for waits_start). */
struct slow *slow_start(void (*resume)(struct MHD_Connection *conn), mp_err *e);
/* Queues fn(arg) and returns; the caller has suspended conn, which is resumed after fn ran. */
int slow_submit(struct slow *sl, struct MHD_Connection *conn, void (*fn)(void *arg), void *arg);
/* At stop: the thread leaves SCHED_IDLE, so that a scan in flight is answered before the drain
 * ends even on a machine whose CPUs are all busy (where SCHED_IDLE gets none). NULL is fine. */
void slow_hurry(struct slow *sl);
/* Runs what is queued, then stops the thread. NULL is fine. */
void slow_stop(struct slow *sl);

#endif
