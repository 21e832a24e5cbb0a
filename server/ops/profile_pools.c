/* profile.apply's pools (see profile_pools.h). */
#include "server/ops/profile_pools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/kernel/topology.h"
#include "server/ops/resize.h"
#include "server/ops/resize_plan.h"

/* Between tries: long enough for reclaim and compaction to free blocks, short enough that a
 * 60 s deadline gives a few dozen tries. */
#define RETRY_MS 2000

static bool differs(const struct profile_checked *ck, size_t i, uint64_t kb, bool total)
{
	const struct prof_key *k = &ck->doc.keys[i];

	return k->kind == PROF_POOL && k->size_kb == kb && (k->node < 0) == total && ck->ev[i].verdict == PROF_DIFFERS;
}

/* The resize of one size's node targets (total false) or its global target (total true). */
static void request(const struct profile_checked *ck, uint64_t kb, bool total, struct resize_req *r)
{
	memset(r, 0, sizeof *r);
	r->size_kb = kb;
	r->compact = true;
	r->has_total = total;
	for (size_t i = 0; i < ck->doc.n; i++) {
		uint64_t v;
		if (!differs(ck, i, kb, total) || parse_u64(ck->ev[i].target, &v) < 0)
			continue;
		if (total) {
			r->total = (json_int_t)v;
		} else if (r->nnodes < TOPO_MAX_NODES) {
			r->nodes[r->nnodes].node = (unsigned)ck->doc.keys[i].node;
			r->nodes[r->nnodes++].pages = (json_int_t)v;
		}
	}
}

int profile_pools_check(const struct app *app, const struct profile_checked *ck, struct prof_err *pe)
{
	for (size_t i = 0; i < ck->doc.n; i++) {
		const struct prof_key *k = &ck->doc.keys[i];
		struct resize_req r;
		struct resize_args *p;
		uint64_t v;
		mp_err e = { 0 };
		if (k->kind != PROF_POOL || ck->ev[i].verdict != PROF_DIFFERS || parse_u64(ck->ev[i].target, &v) < 0)
			continue;
		memset(&r, 0, sizeof r);
		r.size_kb = k->size_kb;
		if ((r.has_total = k->node < 0)) {
			r.total = (json_int_t)v;
		} else {
			r.nnodes = 1;
			r.nodes[0].node = (unsigned)k->node;
			r.nodes[0].pages = (json_int_t)v;
		}
		if (!(p = resize_plan(app, &r, &e)))
			return prof_fail(pe, &k->loc, e.code == MPE_RESIZE_BAD_COUNT || e.code == MPE_RESIZE_BAD_NODE
						       ? MPE_PROFILE_BAD_VALUE : e.code, "%s = %s: %s", k->id, k->vals[0], e.detail);
		resize_plan_free(p);
	}
	return 0;
}

/* Waits ms between tries; false when the job was cancelled or its deadline passed meanwhile. */
static bool pause_ok(struct job_ctx *ctx, int ms)
{
	struct timespec step = { 0, 50 * 1000000L };

	for (int t = 0; t < ms; t += 50) {
		if (job_cancelled(ctx) || job_past_deadline(ctx))
			return false;
		nanosleep(&step, NULL);
	}
	return !job_cancelled(ctx) && !job_past_deadline(ctx);
}

/* The why of a target that ended short: what it got, after what, and what memory was left. */
static void why_short(const struct app *app, const struct resize_target *t, uint64_t kb, int tries, char *buf,
		      size_t len)
{
	struct topology *topo = malloc(sizeof *topo);
	unsigned long long free_kb = 0;
	char sz[32], where[32] = "";

	format_size_kb(kb, sz, sizeof sz);
	if (t->node >= 0)
		snprintf(where, sizeof where, " on node %d", t->node);
	if (topo && topo_read(app->sysfs_root, topo) == 0)
		for (int n = 0; n < topo->n_nodes; n++)
			if (t->node < 0 || topo->nodes[n].id == (unsigned)t->node)
				free_kb += topo->nodes[n].mem_free_kb;
	free(topo);
	snprintf(buf, len, "requested %llu %s pages%s, only %llu by the deadline: %d tr%s, memory compacted before each, "
		 "the last stopped %s; %s has %llu MiB free", (unsigned long long)t->goal, sz, where,
		 (unsigned long long)t->now, tries, tries == 1 ? "y" : "ies", t->stop ? t->stop : "short",
		 t->node < 0 ? "the host" : "the node", free_kb / 1024);
}

/* The keys of one resize from its targets. Returns the reasons. */
static unsigned outcomes(const struct app *app, const struct profile_checked *ck, struct ps_key *keys,
			 const struct resize_args *p, bool total, int tries, const struct job_outcome *o, char *err,
			 size_t errlen)
{
	unsigned reasons = 0;

	for (size_t i = 0; i < ck->doc.n; i++) {
		if (!differs(ck, i, p->size_kb, total))
			continue;
		for (int j = 0; j < p->n; j++) {
			const struct resize_target *t = &p->t[j];
			if (t->node != (total ? -1 : ck->doc.keys[i].node))
				continue;
			if (t->now == t->goal) {
				snprintf(keys[i].outcome, sizeof keys[i].outcome, "resized");
			} else if (o->status && !strcmp(o->status, "failed")) {
				snprintf(keys[i].outcome, sizeof keys[i].outcome, "failed");
				snprintf(keys[i].why, sizeof keys[i].why, "%.255s", o->error);
				reasons |= PSR_APPLY_FAILED;
			} else {
				snprintf(keys[i].outcome, sizeof keys[i].outcome, "partial");
				why_short(app, t, p->size_kb, tries, keys[i].why, sizeof keys[i].why);
				reasons |= PSR_PARTIAL_ALLOCATION;
			}
			if (err && !err[0] && keys[i].why[0])
				snprintf(err, errlen, "%s: %s", keys[i].k.id, keys[i].why);
		}
	}
	return reasons;
}

/* One resize, tried again after a short run until the deadline. */
static unsigned one(struct job_ctx *ctx, const struct app *app, const struct profile_checked *ck, struct ps_key *keys,
		    uint64_t kb, bool total, int64_t *seq, json_t *pools, struct job_outcome *out, char *err, size_t errlen)
{
	struct resize_req r;
	struct resize_args *p = NULL;
	struct job_outcome o;
	char key[64];
	mp_err e = { 0 };
	unsigned reasons;
	int64_t holder = 0;
	int tries = 0;

	request(ck, kb, total, &r);
	if (!total && !r.nnodes)
		return 0;
	/* The pool is this job's while it resizes it: a PUT /v1/hugepages of this size meanwhile is
	 * 409 naming this job, as for any resize. */
	resize_conflict_key(kb, key, sizeof key);
	memset(&o, 0, sizeof o);
	if (job_hold_key(ctx, key, &holder) < 0) {
		o.status = "failed";
		snprintf(o.error, sizeof o.error, "job %lld acts on this pool (a resize of this size is queued or running): the "
			 "pool was left alone; apply again once it ended", (long long)holder);
	} else if (!(p = resize_plan(app, &r, &e))) {
		o.status = "failed";
		snprintf(o.error, sizeof o.error, "%s", e.detail);
		job_release_key(ctx);
	}
	if (o.status) {
		reasons = PSR_APPLY_FAILED;
		for (size_t i = 0; i < ck->doc.n; i++)
			if (differs(ck, i, kb, total)) {
				snprintf(keys[i].outcome, sizeof keys[i].outcome, "failed");
				snprintf(keys[i].why, sizeof keys[i].why, "%.255s", o.error);
				if (err && !err[0])
					snprintf(err, errlen, "%s: %s", keys[i].k.id, o.error);
			}
		return reasons;
	}
	p->seq = *seq;   /* the batches of every try and size are this operation's, numbered on */
	for (;;) {
		memset(&o, 0, sizeof o);
		for (int j = 0; j < p->n; j++)
			p->t[j].stop = NULL;
		resize_job.run(ctx, p, &o);
		tries++;
		if (!o.status || strcmp(o.status, "partial") || !pause_ok(ctx, RETRY_MS))
			break;
		json_decref(o.result);
	}
	job_release_key(ctx);
	*seq = p->seq;
	reasons = outcomes(app, ck, keys, p, total, tries, &o, err, errlen);
	if (reasons & PSR_PARTIAL_ALLOCATION)
		out->reason = JR_DEADLINE;
	if (o.result) {
		json_object_set_new(o.result, "tries", json_integer(tries));
		json_array_append_new(pools, o.result);
	}
	resize_plan_free(p);
	return reasons;
}

unsigned profile_pools_apply(struct job_ctx *ctx, const struct app *app, const struct profile_checked *ck,
			     struct ps_key *keys, json_t *pools, struct job_outcome *out, char *err, size_t errlen)
{
	unsigned reasons = 0;
	int64_t seq = 0;

	/* Per size, the node targets first (an uneven split), then a global one. */
	for (int s = 0; s < app->caps.n_hugetlb_sizes; s++) {
		uint64_t kb = app->caps.hugetlb_sizes_kb[s];
		bool any_total = false;
		for (size_t i = 0; i < ck->doc.n; i++)
			any_total |= differs(ck, i, kb, true);
		reasons |= one(ctx, app, ck, keys, kb, false, &seq, pools, out, err, errlen);
		if (any_total)
			reasons |= one(ctx, app, ck, keys, kb, true, &seq, pools, out, err, errlen);
	}
	return reasons;
}
