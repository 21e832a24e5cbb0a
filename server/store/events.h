/* What the store reports as it commits, to whoever counts and logs (server/observe.c, registered
 * by main() with store_set_events). The store names no one above it: it calls these pointers, after each
 * commit (never before: a rolled-back write reports nothing), and at start the seed scan reports
 * what the database already holds. A store without events, or a NULL member, reports nothing
 * (the unit tests' stores). */
#ifndef MPD_STORE_EVENTS_H
#define MPD_STORE_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct store;
struct op_record;
struct op_outcome;

struct store_events {
	/* Commits. The records and strings are borrowed for the call. */
	void (*op_inserted)(int64_t id, const struct op_record *op);
	void (*op_finished)(int64_t id, const struct op_outcome *out);
	void (*job_submitted)(int64_t id, const char *kind, int64_t schedule_id);   /* schedule_id 0: none */
	void (*job_finished)(int64_t id, const char *status, int64_t finished_ns);
	void (*schedule_ran)(const char *status, bool missed);
	void (*schedule_deleted)(int64_t id);
	void (*batch)(uint64_t size_kb, int node, bool grow, int64_t latency_ns);
	void (*write_error)(const char *code);          /* a problem code's registry string */
	/* The seed (store_metrics_seed): counts by group at once. bucket indexes bucket_s below,
	 * nbuckets for "past the last bound". */
	void (*seed_op)(const char *kind, const char *status, uint64_t n);
	void (*seed_job)(const char *kind, const char *status, uint64_t n);
	void (*seed_schedule)(const char *status, uint64_t runs, uint64_t missed);
	/* A schedule's last job that ended "ok": when it finished (the jobs table's finished_ns). */
	void (*seed_schedule_ok)(int64_t schedule_id, int64_t finished_ns);
	void (*seed_batches)(uint64_t size_kb, int node, bool grow, int bucket, uint64_t n, double sum_s);
	const double *bucket_s;                          /* the latency histogram's bounds, seconds */
	int nbuckets;
};

/* Sets the receiver (borrowed, lives as long as the store); call once after store_open, before
 * any other thread uses the store. */
void store_set_events(struct store *st, const struct store_events *ev);

#endif
