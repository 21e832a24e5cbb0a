/* The daemon's counters for GET /metrics, kept in memory so that a scrape costs the same with ten
 * rows of history or ten million: the store reports each commit through its events
 * (server/store/events.h; main() gives it server/observe.c's observe_store_events, which calls
 * the functions below), and store_metrics_seed() reports
 * once at start what the database holds. One process-wide registry, because the store, which
 * feeds it, knows no struct app; every function takes its mutex.
 *
 * What is counted: operations and jobs once they have a final status (a "running" operation is
 * remembered by server/observe.c, a job here, by id until it finishes), schedule runs by status
 * and the occurrences skipped, each schedule's last job that ended ok, every resize batch's
 * per-page latency in a histogram, and the writer's last error. */
#ifndef MPD_METRICS_H
#define MPD_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Histogram bounds of the per-page resize latency, in seconds (1 us .. 10 s). */
#define METRICS_NBUCKETS 15
extern const double metrics_bucket_s[METRICS_NBUCKETS];

/* Empties the registry (tests, and main() before the seed). */
void metrics_reset(void);

/* An operation reached its final status (server/observe.c tells, once per operation). */
void metrics_op_done(const char *kind, const char *status);
/* A series or remembered id had no room (counted in mempolicyd_metrics_dropped_total). */
void metrics_dropped(void);
/* A job was submitted (schedule_id 0: not by a schedule); it is remembered until
 * metrics_job_finished(id). Ids this daemon did not submit (a previous daemon's, which the seed
 * counted) are ignored when they finish. */
void metrics_job_submitted(int64_t id, const char *kind, int64_t schedule_id);
/* A job finished (finished_ns: the daemon's clock, as the jobs table has it); one of a schedule
 * that ended "ok" is that schedule's last success. */
void metrics_job_finished(int64_t id, const char *status, int64_t finished_ns);
/* A scheduler run with its status (submitted, skipped, failed); missed is true when it skipped
 * occurrences (its misfire grace had passed). */
void metrics_schedule_ran(const char *status, bool missed);
/* The schedule is gone: its last-success series goes with it. */
void metrics_schedule_deleted(int64_t id);
/* One resize write: page size, node (< 0: the global count) and its per-page latency. */
void metrics_batch(uint64_t size_kb, int node, bool grow, int64_t latency_ns);
/* A write on the store's writer failed with this problem code (its registry string). */
void metrics_store_write_error(const char *code);

/* The seed (server/store/metrics_seed.c): adds n to a counter, or n observations to a histogram
 * series at once. bucket is an index into metrics_bucket_s, METRICS_NBUCKETS for "+Inf only". */
void metrics_seed_op(const char *kind, const char *status, uint64_t n);
void metrics_seed_job(const char *kind, const char *status, uint64_t n);
void metrics_seed_schedule(const char *status, uint64_t runs, uint64_t missed);
void metrics_seed_schedule_ok(int64_t schedule_id, int64_t finished_ns);
void metrics_seed_batches(uint64_t size_kb, int node, bool grow, int bucket, uint64_t n, double sum_s);

/* Writes the counters in the Prometheus text format (openmetrics: OpenMetrics 1.0 names, "_total"
 * kept on the sample only); -1 if f failed. Bounded work: the series are few and fixed in number. */
int metrics_write_counters(FILE *f, bool openmetrics);

#endif
