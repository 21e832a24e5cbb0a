/* Held answers: GET /v1/jobs/{id}?wait=S answers once the job leaves queued/running or S seconds
 * pass, without a libmicrohttpd worker blocked meanwhile. The router suspends the connection and
 * hands it here with the job's id and a deadline; the job runner's end-of-job hook (jobs_on_end)
 * calls waits_job_ended, and one thread resumes each waiter exactly once: when its job ended, at
 * its deadline, or at waits_stop. Resuming makes libmicrohttpd call the handler again, which then
 * answers with the job as it is (api/http.c). This module knows no job runner and no HTTP beyond
 * the resume callback, so the unit test drives it alone (tests/unit/test_waits.c). */
#ifndef MPD_API_WAITS_H
#define MPD_API_WAITS_H

#include <stdint.h>

#include "common/err.h"

struct MHD_Connection;
struct waits;

/* Starts the thread. resume(conn) is called on it, once per waiter, with no lock of this module
 * held (http.c passes MHD_resume_connection). */
struct waits *waits_start(void (*resume)(struct MHD_Connection *conn), mp_err *e);
/* Holds conn (suspended by the caller) until job_id ends or timeout_ms pass. 0: it will be
 * resumed by this module, exactly once; -1 (out of memory, or stopping): not taken, the caller
 * resumes it or answers now. */
int waits_add(struct waits *w, struct MHD_Connection *conn, int64_t job_id, int64_t timeout_ms);
/* Every waiter on job_id is resumed now (soon, on the thread). Safe from any thread, under the
 * job runner's lock: it takes only this module's lock and never blocks on anything else. */
void waits_job_ended(struct waits *w, int64_t job_id);
/* How many connections are held now (the unit test's and the log's). */
int waits_count(struct waits *w);
/* Refuses new waiters, resumes every held one and stops the thread; after it returns no
 * connection is held here (libmicrohttpd's rule: resumed before its daemon stops). The struct
 * stays valid for a late waits_add (refused) until waits_free. NULL is fine. */
void waits_stop(struct waits *w);
void waits_free(struct waits *w);

#endif
