/* Handlers off libmicrohttpd's workers, at a lower CPU priority than the rest of the daemon. A
 * connection stays with the worker thread that accepted it, so a handler that scans (GET
 * /v1/history/stats walks up to a million rows) or builds a large page (GET /v1/history?limit=1000,
 * 330 kB) would hold up every other connection of that worker, root's changes included, and
 * compete with them for the CPU. A route flagged R_SLOW or R_READ is run on one of these pools
 * instead: its connection is suspended, the handler runs on a thread of the pool, and the
 * connection is resumed to send the answer. Two pools (api/serve.c):
 *  - scans (R_SLOW): one thread at SCHED_IDLE (it gets a CPU only when nothing else wants one, so
 *    writers are not slowed by it; under full load it waits); scans run one at a time;
 *  - reads (R_READ, the list pages and the placement answer): SLOW_READ_THREADS threads at nice
 *    SLOW_READ_NICE, which yield to any write the daemon serves meanwhile but, being nice and not
 *    SCHED_IDLE, still get their share of a busy machine (a page is answered, only later).
 * Only handlers that change nothing are flagged, so no write ever queues here. */
#ifndef MPD_API_SLOW_H
#define MPD_API_SLOW_H

#include "common/err.h"

struct MHD_Connection;
struct slow;

#define SLOW_MAX_THREADS  8
#define SLOW_READ_THREADS 2    /* the pages read through the store's one reader connection, so
                                * more threads would only wait on its lock; two cover a page that
                                * waits on procfs (placement) beside one that reads the store */
#define SLOW_READ_NICE    10   /* weight 110 against a write's 1024: about a tenth of a core
                                * while a write wants it, all of an idle one */

enum slow_prio { SLOW_IDLE, SLOW_NICE };

/* nthreads (1 to SLOW_MAX_THREADS) threads, each lowering its own priority to prio for good;
 * resume: how a connection is resumed once its handler ran (the caller's, as for waits_start). */
struct slow *slow_start(void (*resume)(struct MHD_Connection *conn), unsigned nthreads, enum slow_prio prio,
			mp_err *e);
/* Queues fn(arg) and returns; the caller has suspended conn, which is resumed after fn ran. */
int slow_submit(struct slow *sl, struct MHD_Connection *conn, void (*fn)(void *arg), void *arg);
/* At stop: SCHED_IDLE threads leave it, so that a scan in flight is answered before the drain
 * ends even on a machine whose CPUs are all busy (where SCHED_IDLE gets none). NULL is fine. */
void slow_hurry(struct slow *sl);
/* Runs what is queued, then stops the threads. NULL is fine. */
void slow_stop(struct slow *sl);

#endif
