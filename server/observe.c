/* See observe.h. An operation inserted "running" or "queued" is remembered by id (kind, source,
 * actor, start) until its final status arrives, so that the count and the log event carry what
 * the finish alone does not say. Ids this daemon did not insert (a previous daemon's, which the
 * metrics seed counted and start-up recovery marks) are not remembered and not logged again. */
#include "server/observe.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/metrics.h"
#include "server/ops/labels.h"
#include "server/oplog.h"
#include "server/store/events.h"
#include "server/store/history.h"

#define MAX_PENDING 1024

struct pending {
	int64_t id;                      /* 0: free slot */
	char kind[48];
	char source[16];
	bool has_actor;
	uid_t actor_uid;
	char actor[64];
	int64_t started_ns;
};

static struct {
	pthread_mutex_t mu;
	struct pending p[MAX_PENDING];
} P = { .mu = PTHREAD_MUTEX_INITIALIZER };

void observe_reset(void)
{
	pthread_mutex_lock(&P.mu);
	memset(P.p, 0, sizeof P.p);
	pthread_mutex_unlock(&P.mu);
}

static bool final_status(const char *status)
{
	return strcmp(status, "running") && strcmp(status, "queued");
}

static void op_inserted(int64_t id, const struct op_record *op)
{
	struct op_event ev = {
		.id = id, .kind = op->kind, .source = op->source ? op->source : "api", .status = op->status,
		.has_actor = op->has_actor, .actor_uid = op->actor_uid, .actor_name = op->actor_name,
		.started_ns = op->started_ns, .finished_ns = op->finished_ns, .err_no = op->err_no,
		.error = op->error,
	};
	int i;

	if (final_status(op->status)) {
		metrics_op_done(op->kind, op->status);
		oplog_operation(&ev);
		labels_changed();   /* a knob set, say: what the node labels show may have changed */
		return;
	}
	pthread_mutex_lock(&P.mu);
	for (i = 0; i < MAX_PENDING && P.p[i].id; i++)
		;
	if (i < MAX_PENDING) {
		struct pending *p = &P.p[i];
		p->id = id;
		snprintf(p->kind, sizeof p->kind, "%s", op->kind);
		snprintf(p->source, sizeof p->source, "%s", ev.source);
		p->has_actor = op->has_actor;
		p->actor_uid = op->actor_uid;
		snprintf(p->actor, sizeof p->actor, "%s", op->actor_name ? op->actor_name : "");
		p->started_ns = op->started_ns;
	}
	pthread_mutex_unlock(&P.mu);
	if (i == MAX_PENDING)
		metrics_dropped();
}

static void op_finished(int64_t id, const struct op_outcome *out)
{
	struct pending p = { 0 };

	labels_changed();   /* a resize or a profile applied: what the node labels show may have changed */
	pthread_mutex_lock(&P.mu);
	for (int i = 0; i < MAX_PENDING; i++)
		if (P.p[i].id == id) {
			p = P.p[i];
			P.p[i].id = 0;
			break;
		}
	pthread_mutex_unlock(&P.mu);
	if (!p.id)
		return;
	metrics_op_done(p.kind, out->status);
	oplog_operation(&(struct op_event){
		.id = id, .kind = p.kind, .source = p.source, .status = out->status, .has_actor = p.has_actor,
		.actor_uid = p.actor_uid, .actor_name = p.actor, .started_ns = p.started_ns,
		.finished_ns = out->finished_ns, .err_no = out->err_no, .error = out->error,
	});
}

const struct store_events observe_store_events = {
	.op_inserted = op_inserted,
	.op_finished = op_finished,
	.job_submitted = metrics_job_submitted,
	.job_finished = metrics_job_finished,
	.schedule_ran = metrics_schedule_ran,
	.schedule_deleted = metrics_schedule_deleted,
	.batch = metrics_batch,
	.write_error = metrics_store_write_error,
	.seed_op = metrics_seed_op,
	.seed_job = metrics_seed_job,
	.seed_schedule = metrics_seed_schedule,
	.seed_schedule_ok = metrics_seed_schedule_ok,
	.seed_batches = metrics_seed_batches,
	.bucket_s = metrics_bucket_s,
	.nbuckets = METRICS_NBUCKETS,
};
