/* Showing jobs: the targets table of a resize, one job in full, and waiting for a job with a
 * progress bar (on a terminal only). Shared by `pool resize` and `job ...`. */
#ifndef MPD_CLIENT_JOBVIEW_H
#define MPD_CLIENT_JOBVIEW_H

#include <jansson.h>
#include <stdbool.h>

#include "client/cli.h"

/* Per node: asked, got, batches, latency per page, why it stopped (done) or the plan (!done). */
void jobview_targets(const json_t *targets, bool done);
/* A job as a key/value table plus its targets. */
void jobview_print(const json_t *job);
/* Waits for the job to end (GET /v1/jobs/{id}?wait=: the daemon holds each answer until the job
 * ends, up to 30 s, or a second on a terminal to redraw the bar), then prints it (or its JSON with --json).
 * EXIT_OK when it ended "ok", EXIT_REFUSED otherwise. */
int jobview_wait(struct cli *c, long long id);
/* A job's answer (a POST's 202 body): waited for as jobview_wait while it is queued or running;
 * one that ended already (a job the daemon ran before it answered) is printed as it is, with no
 * further request. */
int jobview_answer(struct cli *c, const json_t *answer);
/* The ended job (owned; freed here) printed as jobview_wait prints it, and its exit code. */
int jobview_ended(struct cli *c, long long id, json_t *job);
/* The waiting (and the bar) alone: EXIT_OK with *job the ended job (owned), whatever its status;
 * else the exit code (the error printed). */
int jobview_wait_for(struct cli *c, long long id, json_t **job);
/* --no-wait: the queued job's answer r (freed here) printed, or "NOUN ID queued: mempolicyctl
 * NOUN show ID"; EXIT_OK. */
struct http_result;
int jobview_queued(struct cli *c, struct http_result *r, const char *noun);
/* "12.3 us", "4.56 ms", "1.20 s". */
void jobview_ns(double ns, char *buf, size_t len);

#endif
