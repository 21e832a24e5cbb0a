/* The in-memory registry behind GET /metrics (see metrics.h). Series live in fixed tables
 * searched linearly: there are tens of them (kinds x statuses, sizes x nodes x directions), and a
 * table that is full drops new series rather than grow without bound, counting what it dropped. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/metrics.h"

const double metrics_bucket_s[METRICS_NBUCKETS] = {
	1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1, 5, 10,
};

#define MAX_COUNTERS 128
#define MAX_HIST     512
#define MAX_PENDING  1024
#define MAX_SCHED_OK 1024            /* schedules with a last success (max-schedules defaults to 1000) */

struct counter {
	char kind[48];
	char status[24];
	uint64_t n;
};

struct hist {
	uint64_t size_kb;
	int node;                        /* < 0: the global count */
	bool grow;
	uint64_t bucket[METRICS_NBUCKETS]; /* observations <= bound, not yet cumulative */
	uint64_t count;
	double sum_s;
};

struct pending {
	int64_t id;                      /* 0: free slot */
	char kind[48];
	int64_t schedule_id;             /* 0: not a schedule's job */
};

struct sched_ok {
	int64_t schedule_id;
	double at_s;                     /* when its last job that ended ok finished (the jobs table's time) */
};

static struct {
	pthread_mutex_t mu;
	struct counter ops[MAX_COUNTERS], jobs[MAX_COUNTERS], sched[8];
	int nops, njobs, nsched;
	uint64_t missed;
	struct hist hist[MAX_HIST];
	int nhist;
	struct pending pend_jobs[MAX_PENDING];
	struct sched_ok sched_ok[MAX_SCHED_OK];
	int nsched_ok;
	uint64_t dropped;                /* series or pending ids that did not fit */
	uint64_t write_errors;
	char last_error_code[48];
	double last_error_s;             /* wall clock, 0 when none */
} M = { .mu = PTHREAD_MUTEX_INITIALIZER };

void metrics_reset(void)
{
	pthread_mutex_lock(&M.mu);
	memset((char *)&M + sizeof M.mu, 0, sizeof M - sizeof M.mu);
	pthread_mutex_unlock(&M.mu);
}

/* Lock held. */
static void count(struct counter *t, int *n, int max, const char *kind, const char *status, uint64_t by)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(t[i].kind, kind) && !strcmp(t[i].status, status)) {
			t[i].n += by;
			return;
		}
	if (*n == max || strlen(kind) >= sizeof t->kind || strlen(status) >= sizeof t->status) {
		M.dropped++;
		return;
	}
	snprintf(t[*n].kind, sizeof t->kind, "%s", kind);
	snprintf(t[*n].status, sizeof t->status, "%s", status);
	t[(*n)++].n = by;
}

void metrics_op_done(const char *kind, const char *status)
{
	pthread_mutex_lock(&M.mu);
	count(M.ops, &M.nops, MAX_COUNTERS, kind, status, 1);
	pthread_mutex_unlock(&M.mu);
}

void metrics_dropped(void)
{
	pthread_mutex_lock(&M.mu);
	M.dropped++;
	pthread_mutex_unlock(&M.mu);
}

void metrics_job_submitted(int64_t id, const char *kind, int64_t schedule_id)
{
	pthread_mutex_lock(&M.mu);
	for (int i = 0; i < MAX_PENDING; i++)
		if (!M.pend_jobs[i].id) {
			M.pend_jobs[i].id = id;
			snprintf(M.pend_jobs[i].kind, sizeof M.pend_jobs[i].kind, "%s", kind);
			M.pend_jobs[i].schedule_id = schedule_id;
			pthread_mutex_unlock(&M.mu);
			return;
		}
	M.dropped++;
	pthread_mutex_unlock(&M.mu);
}

/* Lock held: schedule id's last success is at_s (a later one only: the seed and a finish may
 * both report). */
static void sched_ok_at(int64_t schedule_id, double at_s)
{
	for (int i = 0; i < M.nsched_ok; i++)
		if (M.sched_ok[i].schedule_id == schedule_id) {
			if (at_s > M.sched_ok[i].at_s)
				M.sched_ok[i].at_s = at_s;
			return;
		}
	if (M.nsched_ok == MAX_SCHED_OK) {
		M.dropped++;
		return;
	}
	M.sched_ok[M.nsched_ok++] = (struct sched_ok){ schedule_id, at_s };
}

void metrics_job_finished(int64_t id, const char *status, int64_t finished_ns)
{
	pthread_mutex_lock(&M.mu);
	for (int i = 0; i < MAX_PENDING; i++)
		if (M.pend_jobs[i].id == id) {
			struct pending *p = &M.pend_jobs[i];
			count(M.jobs, &M.njobs, MAX_COUNTERS, p->kind, status, 1);
			if (p->schedule_id > 0 && !strcmp(status, "ok"))
				sched_ok_at(p->schedule_id, (double)finished_ns / 1e9);
			p->id = 0;
			break;
		}
	pthread_mutex_unlock(&M.mu);
}

void metrics_schedule_deleted(int64_t id)
{
	pthread_mutex_lock(&M.mu);
	for (int i = 0; i < M.nsched_ok; i++)
		if (M.sched_ok[i].schedule_id == id) {
			M.sched_ok[i] = M.sched_ok[--M.nsched_ok];
			break;
		}
	pthread_mutex_unlock(&M.mu);
}

void metrics_seed_schedule_ok(int64_t schedule_id, int64_t finished_ns)
{
	pthread_mutex_lock(&M.mu);
	sched_ok_at(schedule_id, (double)finished_ns / 1e9);
	pthread_mutex_unlock(&M.mu);
}

void metrics_schedule_ran(const char *status, bool missed)
{
	pthread_mutex_lock(&M.mu);
	count(M.sched, &M.nsched, 8, "", status, 1);
	M.missed += missed;
	pthread_mutex_unlock(&M.mu);
}

/* Lock held: the series, made if new; NULL when the table is full. */
static struct hist *hist_of(uint64_t size_kb, int node, bool grow)
{
	for (int i = 0; i < M.nhist; i++)
		if (M.hist[i].size_kb == size_kb && M.hist[i].node == node && M.hist[i].grow == grow)
			return &M.hist[i];
	if (M.nhist == MAX_HIST) {
		M.dropped++;
		return NULL;
	}
	M.hist[M.nhist] = (struct hist){ .size_kb = size_kb, .node = node < 0 ? -1 : node, .grow = grow };
	return &M.hist[M.nhist++];
}

void metrics_batch(uint64_t size_kb, int node, bool grow, int64_t latency_ns)
{
	double s = (double)latency_ns / 1e9;
	struct hist *h;

	pthread_mutex_lock(&M.mu);
	if ((h = hist_of(size_kb, node, grow))) {
		for (int b = 0; b < METRICS_NBUCKETS; b++)
			if (s <= metrics_bucket_s[b]) {
				h->bucket[b]++;
				break;
			}
		h->count++;
		h->sum_s += s;
	}
	pthread_mutex_unlock(&M.mu);
}

void metrics_store_write_error(const char *code)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&M.mu);
	M.write_errors++;
	snprintf(M.last_error_code, sizeof M.last_error_code, "%s", code);
	M.last_error_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	pthread_mutex_unlock(&M.mu);
}

void metrics_seed_op(const char *kind, const char *status, uint64_t n)
{
	pthread_mutex_lock(&M.mu);
	count(M.ops, &M.nops, MAX_COUNTERS, kind, status, n);
	pthread_mutex_unlock(&M.mu);
}

void metrics_seed_job(const char *kind, const char *status, uint64_t n)
{
	pthread_mutex_lock(&M.mu);
	count(M.jobs, &M.njobs, MAX_COUNTERS, kind, status, n);
	pthread_mutex_unlock(&M.mu);
}

void metrics_seed_schedule(const char *status, uint64_t runs, uint64_t missed)
{
	pthread_mutex_lock(&M.mu);
	if (runs)
		count(M.sched, &M.nsched, 8, "", status, runs);
	M.missed += missed;
	pthread_mutex_unlock(&M.mu);
}

void metrics_seed_batches(uint64_t size_kb, int node, bool grow, int bucket, uint64_t n, double sum_s)
{
	struct hist *h;

	pthread_mutex_lock(&M.mu);
	if ((h = hist_of(size_kb, node, grow))) {
		if (bucket >= 0 && bucket < METRICS_NBUCKETS)
			h->bucket[bucket] += n;
		h->count += n;
		h->sum_s += sum_s;
	}
	pthread_mutex_unlock(&M.mu);
}

/* ---- the text format ------------------------------------------------------------------------ */

/* A counter family's header: OpenMetrics names the family without "_total". */
static void counter_head(FILE *f, bool om, const char *name, const char *help)
{
	fprintf(f, "# HELP %s%s %s\n# TYPE %s%s counter\n", name, om ? "" : "_total", help, name,
		om ? "" : "_total");
}

static void counters(FILE *f, bool om, const char *name, const char *help, const struct counter *t, int n)
{
	counter_head(f, om, name, help);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s_total{kind=\"%s\",status=\"%s\"} %llu\n", name, t[i].kind, t[i].status,
			(unsigned long long)t[i].n);
}

int metrics_write_counters(FILE *f, bool om)
{
	char size[32];

	pthread_mutex_lock(&M.mu);
	/* Kinds and statuses are the daemon's own words (ops/kinds.c, the store's statuses): no
	 * escaping is needed, and nothing a client sent ever becomes one. */
	counters(f, om, "mempolicyd_operations", "Operations recorded in history, by kind and final status.",
		 M.ops, M.nops);
	counters(f, om, "mempolicyd_jobs", "Jobs finished, by kind and final status.", M.jobs, M.njobs);
	counter_head(f, om, "mempolicyd_schedule_runs", "Times the scheduler acted on a due schedule, by outcome.");
	for (int i = 0; i < M.nsched; i++)
		fprintf(f, "mempolicyd_schedule_runs_total{status=\"%s\"} %llu\n", M.sched[i].status,
			(unsigned long long)M.sched[i].n);
	counter_head(f, om, "mempolicyd_schedule_misses", "Scheduler runs that skipped occurrences past their misfire grace.");
	fprintf(f, "mempolicyd_schedule_misses_total %llu\n", (unsigned long long)M.missed);
	fputs("# HELP mempolicyd_schedule_last_success_timestamp_seconds When the schedule's last job that ended ok "
	      "finished, by schedule id (absent until one has).\n"
	      "# TYPE mempolicyd_schedule_last_success_timestamp_seconds gauge\n", f);
	for (int i = 0; i < M.nsched_ok; i++)
		fprintf(f, "mempolicyd_schedule_last_success_timestamp_seconds{schedule=\"%lld\"} %.3f\n",
			(long long)M.sched_ok[i].schedule_id, M.sched_ok[i].at_s);

	fprintf(f, "# HELP mempolicyd_hugepages_resize_page_latency_seconds Time per page of each resize write "
		   "(write and read-back divided by the pages it moved), by page size, node and direction.\n"
		   "# TYPE mempolicyd_hugepages_resize_page_latency_seconds histogram\n");
	for (int i = 0; i < M.nhist; i++) {
		const struct hist *h = &M.hist[i];
		char node[16] = "";
		uint64_t cum = 0;

		format_size_kb(h->size_kb, size, sizeof size);
		if (h->node >= 0)
			snprintf(node, sizeof node, "%d", h->node);
		for (int b = 0; b < METRICS_NBUCKETS; b++) {
			cum += h->bucket[b];
			fprintf(f, "mempolicyd_hugepages_resize_page_latency_seconds_bucket{direction=\"%s\",node=\"%s\","
				   "size=\"%s\",le=\"%g\"} %llu\n", h->grow ? "grow" : "shrink", node, size,
				metrics_bucket_s[b], (unsigned long long)cum);
		}
		fprintf(f, "mempolicyd_hugepages_resize_page_latency_seconds_bucket{direction=\"%s\",node=\"%s\","
			   "size=\"%s\",le=\"+Inf\"} %llu\n", h->grow ? "grow" : "shrink", node, size,
			(unsigned long long)h->count);
		fprintf(f, "mempolicyd_hugepages_resize_page_latency_seconds_sum{direction=\"%s\",node=\"%s\",size=\"%s\"} %.9g\n",
			h->grow ? "grow" : "shrink", node, size, h->sum_s);
		fprintf(f, "mempolicyd_hugepages_resize_page_latency_seconds_count{direction=\"%s\",node=\"%s\",size=\"%s\"} %llu\n",
			h->grow ? "grow" : "shrink", node, size, (unsigned long long)h->count);
	}

	counter_head(f, om, "mempolicyd_store_write_errors", "Failed writes to the database since the daemon started.");
	fprintf(f, "mempolicyd_store_write_errors_total %llu\n", (unsigned long long)M.write_errors);
	fprintf(f, "# HELP mempolicyd_store_last_write_error_timestamp_seconds When the last database write failed "
		   "(0: none since start), labelled with its problem code.\n"
		   "# TYPE mempolicyd_store_last_write_error_timestamp_seconds gauge\n"
		   "mempolicyd_store_last_write_error_timestamp_seconds{code=\"%s\"} %.3f\n",
		M.last_error_code, M.last_error_s);
	counter_head(f, om, "mempolicyd_metrics_dropped", "Series or running ids the metrics tables had no room for.");
	fprintf(f, "mempolicyd_metrics_dropped_total %llu\n", (unsigned long long)M.dropped);
	pthread_mutex_unlock(&M.mu);
	return ferror(f) ? -1 : 0;
}
