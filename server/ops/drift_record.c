/* What a drift check found, recorded, and what the key's policy does about it. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/clock.h"
#include "server/kernel/hugetlb.h"
#include "server/log.h"
#include "server/ops/drift_int.h"
#include "server/ops/profiles.h"
#include "server/priv/act.h"
#include "server/store/history.h"

static atomic_uint_fast64_t counts[DC_END][DA_END];

const char *drift_cause_name(enum drift_cause c)
{
	static const char *const names[DC_END] = { "process", "kernel", "unknown" };
	return (unsigned)c < DC_END ? names[c] : "unknown";
}

const char *drift_action_name(enum drift_action a)
{
	static const char *const names[DA_END] = { "restored", "reported", "yielded" };
	return (unsigned)a < DA_END ? names[a] : "reported";
}

int dw_read(const struct app *app, const struct dw_key *dk, char *buf, size_t len, bool *in_sync)
{
	const struct prof_key *k = &dk->pk.k;
	struct knob_state st;
	uint64_t nr;
	int rc;

	if (k->kind == PROF_KNOB) {
		knob_read_value(app->knobs, dk->knob, &st);
		if (!st.available)
			return st.read_err ? st.read_err : -EINVAL;
		snprintf(buf, len, "%s", st.value);
		if (in_sync)
			*in_sync = profiles_satisfied(k, st.value, dk->knob->type != KNOB_CHOICE, st.num);
		return 0;
	}
	if ((rc = htlb_read_nr(app->sysfs_root, k->size_kb, k->node, &nr)) < 0)
		return rc;
	snprintf(buf, len, "%" PRIu64, nr);
	if (in_sync)
		*in_sync = profiles_satisfied(k, buf, true, nr);
	return 0;
}

/* Puts the profile's value back, through the helper: 0 when the key reads in sync afterwards. */
static int restore(const struct app *app, struct dw_key *dk, char *now, size_t len)
{
	const struct prof_key *k = &dk->pk.k;
	bool ok = false;
	uint64_t v;
	int rc;

	if (k->kind == PROF_KNOB)
		rc = act_knob_write(app->knobs, dk->knob, k->vals[0]);
	else
		rc = parse_u64(k->vals[0], &v) < 0 ? -EINVAL : act_pool_write(app->sysfs_root, k->size_kb, k->node, v);
	if (rc < 0)
		return rc;
	if ((rc = dw_read(app, dk, now, len, &ok)) < 0)
		return rc;
	return ok ? 0 : -EAGAIN;   /* the kernel took less (a pool short of memory) */
}

static json_t *request_json(const struct dw_key *dk)
{
	const struct prof_key *k = &dk->pk.k;
	json_t *vals = json_array();
	char src[PROF_FILE_NAME_MAX + 16];

	for (int i = 0; i < k->nvals; i++)
		json_array_append_new(vals, json_string(k->vals[i]));
	snprintf(src, sizeof src, "%s:%u", k->loc.file, k->loc.line);
	return json_pack("{s:s, s:s, s:o, s:s, s:s}", "key", k->id, "comparator", prof_cmp_text(k->cmp), "expected",
			 vals, "on_drift", prof_drift_name(k->on_drift), "source", src);
}

/* What a drift's row says of it, as a sighting left it. */
struct dw_seen {
	int64_t first_ns, last_ns;
	uint64_t count;
	enum drift_cause cause;
	json_t *writer;              /* borrowed, or NULL */
};

static struct dw_seen seen_of(const struct dw_key *dk)
{
	return (struct dw_seen){ .first_ns = dk->first_ns, .last_ns = dk->last_ns, .count = dk->count,
				 .cause = dk->cause, .writer = dk->writer };
}

static json_t *result_json(const struct dw_seen *d, const char *actual, const char *action, int restore_err,
			   bool ended)
{
	json_t *r = json_pack("{s:s, s:I, s:I, s:I, s:s, s:O?, s:s}", "actual", actual, "first_seen_ns",
			      (json_int_t)d->first_ns, "last_seen_ns", (json_int_t)d->last_ns, "count",
			      (json_int_t)d->count, "cause", drift_cause_name(d->cause), "writer", d->writer,
			      "action", action);

	if (r && restore_err)
		json_object_set_new(r, "restore_error", json_string(strerror(-restore_err)));
	if (r && ended)
		json_object_set_new(r, "ended_ns", json_integer(d->last_ns));
	return r;
}

/* The ends of drifts seen but not committed yet (dw_ends_flush): the watcher thread's alone. An
 * end is known, and the profile state says so, the moment the watcher sees the key back in sync;
 * its row is updated later, so that the commits of an apply's mends are not made while the apply
 * itself commits (the writes that mend are the apply's own). */
struct dw_end {
	int64_t row;
	struct dw_seen seen;             /* its writer owned (a reference) */
	char actual[PS_ACTUAL_MAX];
	char key[sizeof ((struct prof_key *)0)->id];
};
static struct {
	struct dw_end *v;                /* owned, n of cap */
	size_t n, cap;
} ends;

size_t dw_ends_pending(void)
{
	return ends.n;
}

void dw_ends_flush(const struct app *app)
{
	for (size_t i = 0; i < ends.n; i++) {
		struct dw_end *d = &ends.v[i];
		json_t *result = result_json(&d->seen, d->actual, "reported", 0, true);
		struct op_outcome out = { .status = "reported", .finished_ns = d->seen.last_ns, .result = result };
		mp_err e = { 0 };
		if (history_finish(app->store, d->row, &out, &e) < 0)
			log_error("drift watcher: the end of the drift of %s could not be recorded: %s", d->key, e.detail);
		json_decref(result);
		json_decref(d->seen.writer);
	}
	ends.n = 0;
}

void dw_ends_free(void)
{
	for (size_t i = 0; i < ends.n; i++)
		json_decref(ends.v[i].seen.writer);
	free(ends.v);
	ends.v = NULL;
	ends.n = ends.cap = 0;
}

/* Queues the end of dk's drift (its row built when written: nothing is formatted while an apply
 * runs); false when it cannot (no memory): the caller writes it now. */
static bool end_later(const struct dw_key *dk, const char *actual)
{
	if (ends.n == ends.cap) {
		size_t cap = ends.cap ? 2 * ends.cap : 8;
		struct dw_end *v = realloc(ends.v, cap * sizeof *v);
		if (!v)
			return false;
		ends.v = v;
		ends.cap = cap;
	}
	ends.v[ends.n] = (struct dw_end){ .row = dk->row, .seen = seen_of(dk) };
	json_incref(dk->writer);
	snprintf(ends.v[ends.n].actual, sizeof ends.v[ends.n].actual, "%s", actual);
	snprintf(ends.v[ends.n].key, sizeof ends.v[ends.n].key, "%s", dk->pk.k.id);
	ends.n++;
	return true;
}

/* Writes the key's row: a new one, or the open (or just-restored) drift's, updated. The ends
 * waiting are written first: a drift back soon from the same writer updates the row whose end
 * is among them. */
static void put_row(const struct app *app, struct dw_key *dk, const char *actual, const char *status,
		    json_t *result)
{
	mp_err e = { 0 };

	dw_ends_flush(app);
	if (!dk->row) {
		json_t *req = request_json(dk);
		struct op_record op = { .kind = "profile.drift", .source = "watcher", .started_ns = dk->first_ns,
					.finished_ns = dk->last_ns, .status = status, .request = req, .result = result,
					.kernel_release = app->caps.kernel_release };
		dk->row = history_insert(app->store, &op, &e);
		json_decref(req);
		if (dk->row < 0) {
			dk->row = 0;
			log_error("drift watcher: %s drifted (%s) but could not be recorded: %s", dk->pk.k.id, actual, e.detail);
		}
	} else {
		struct op_outcome out = { .status = status, .finished_ns = dk->last_ns, .result = result };
		/* A row retention removed (or a store that failed) is not updated again: the next
		 * sighting starts a row of its own. */
		if (history_finish(app->store, dk->row, &out, &e) < 0) {
			log_error("drift watcher: the drift of %s could not be updated: %s", dk->pk.k.id, e.detail);
			dk->row = 0;
		}
	}
	json_decref(result);
}

static void signature(enum drift_cause c, const struct drift_writer *wr, char *sig, size_t len)
{
	snprintf(sig, len, "%s|%s|%s|%ld|%s", drift_cause_name(c), wr ? wr->comm : "", wr ? wr->exe : "",
		 wr && wr->have_uid ? (long)wr->uid : -1L, wr ? wr->unit : "");
}

/* A change broke the profile: one row for the drift (a new one, or the same drift's), then the
 * policy. */
static void drifted(const struct app *app, struct dw_key *dk, const char *actual, enum drift_cause cause,
		    const struct drift_writer *wr)
{
	int64_t now = clk_wall_ns();
	char sig[sizeof dk->sig], after[PS_ACTUAL_MAX];
	struct dw_seen seen;
	enum drift_action act;
	const char *status;
	int rc = 0;

	signature(cause, wr, sig, sizeof sig);
	/* The same drift: still open, or back from the same writer soon after a restore. */
	if (!dk->open && !(dk->row && !strcmp(sig, dk->sig) && now - dk->last_ns < DW_SAME_DRIFT_NS)) {
		dk->row = 0;
		dk->count = 0;
		dk->first_ns = now;
	}
	if (!dk->row || !dk->open) {
		json_decref(dk->writer);
		dk->writer = wr ? drift_writer_json(wr) : NULL;
		dk->cause = cause;
		snprintf(dk->sig, sizeof dk->sig, "%s", sig);
	}
	dk->count++;
	dk->last_ns = now;
	snprintf(after, sizeof after, "%s", actual);
	switch (dk->pk.k.on_drift) {
	case PROF_DRIFT_RESTORE:
		rc = restore(app, dk, after, sizeof after);
		act = rc == 0 ? DA_RESTORED : DA_REPORTED;
		status = rc == 0 ? "restored" : "restore_failed";
		if (rc == 0)
			snprintf(dk->last, sizeof dk->last, "%s", after);
		break;
	case PROF_DRIFT_YIELD:
		act = DA_YIELDED;
		status = "yielded";
		break;
	default:
		act = DA_REPORTED;
		status = "reported";
	}
	dk->open = act == DA_REPORTED;
	/* The state first: the row's operation wakes the node labels' writer (observe.c), which must
	 * find the state this drift made, or it writes the old one and nothing wakes it again. */
	if (act == DA_YIELDED)
		profile_state_yield(app->profile_state, dk->pk.k.id);
	else
		profile_state_set_drift(app->profile_state, dk->pk.k.id, dk->open, dk->open ? actual : after);
	seen = seen_of(dk);
	put_row(app, dk, actual, status, result_json(&seen, actual, status, rc, false));
	atomic_fetch_add(&counts[dk->cause][act], 1);
	log_warn("drift: %s %s -> %s (%s%s%s), %s", dk->pk.k.id, dk->pk.k.vals[0], actual, drift_cause_name(cause),
		 wr && wr->comm[0] ? " " : "", wr ? wr->comm : "", status);
}

/* The key is back in sync (someone put it back): the drift ends, its row says when — written
 * with the next row or once the watcher's events are quiet (dw_ends_flush), dated now. */
static void mended(const struct app *app, struct dw_key *dk, const char *now)
{
	struct dw_seen seen;

	dk->open = false;
	dk->last_ns = clk_wall_ns();
	profile_state_set_drift(app->profile_state, dk->pk.k.id, false, now);   /* first: as in drifted() */
	/* A drift whose row could not be recorded is inserted now, ended. */
	if (dk->row && end_later(dk, now))
		return;
	seen = seen_of(dk);
	put_row(app, dk, now, "reported", result_json(&seen, now, "reported", 0, true));
}

void dw_check(const struct app *app, struct dw_key *dk, enum drift_cause cause, const struct drift_writer *wr,
	      bool write)
{
	char now[PS_ACTUAL_MAX];
	bool ok = false, changed;

	if (dw_read(app, dk, now, sizeof now, &ok) < 0)
		return;
	changed = !dk->have_last || strcmp(now, dk->last);
	snprintf(dk->last, sizeof dk->last, "%s", now);
	dk->have_last = true;
	if (ok) {
		if (dk->open)
			mended(app, dk, now);
		return;
	}
	/* Out of sync but unchanged: the state the apply left (a pool short of memory), or a drift
	 * already recorded. A write of the same wrong value again is the same drift, seen again. */
	if (!changed && !(dk->open && write))
		return;
	drifted(app, dk, now, cause, wr);
}

void dw_note_own(const struct app *app, struct dw_key *dk)
{
	char now[PS_ACTUAL_MAX];
	bool ok = false;

	/* The value is read when the event is handled, not when the daemon wrote: the daemon writes
	 * only values in sync (the profile's, a restore's), so one read out of sync was written again
	 * since, by a process whose own event is still queued behind this one (or by the kernel). It
	 * is not the baseline, or that event would find nothing changed and the drift would go
	 * unrecorded (the bench's reset right after an apply, on a busy machine). */
	if (dw_read(app, dk, now, sizeof now, &ok) < 0 || !ok)
		return;
	snprintf(dk->last, sizeof dk->last, "%s", now);
	dk->have_last = true;
	if (ok && dk->open)
		mended(app, dk, now);
}

void dw_end_replaced(const struct app *app, struct dw_key *dk, const char *actual)
{
	struct dw_seen seen;

	dk->open = false;
	dk->last_ns = clk_wall_ns();
	if (dk->row && end_later(dk, actual))   /* written once the events are quiet, as a mend's */
		return;
	seen = seen_of(dk);
	put_row(app, dk, actual, "reported", result_json(&seen, actual, "reported", 0, true));
}

void dw_keys_free(struct dw_key *keys, size_t n)
{
	for (size_t i = 0; keys && i < n; i++)
		json_decref(keys[i].writer);
	free(keys);
}

static void label(FILE *f, const char *v)
{
	for (; *v; v++)
		fputs(*v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : (char[2]){ *v, 0 }, f);
}

void drift_write_metrics(const struct app *app, FILE *f, bool om)
{
	struct ps_snapshot snap;

	fputs("# HELP mempolicyd_profile_key_drift 1 while a managed key of the profile in force has drifted "
	      "from it (reported, not put back).\n# TYPE mempolicyd_profile_key_drift gauge\n", f);
	if (app->profile_state && profile_state_snapshot(app->profile_state, &snap) == 0) {
		for (size_t i = 0; i < snap.n; i++) {
			if (!snap.keys[i].managed)
				continue;
			fputs("mempolicyd_profile_key_drift{key=\"", f);
			label(f, snap.keys[i].k.id);
			fprintf(f, "\"} %d\n", snap.keys[i].drifting ? 1 : 0);
		}
		ps_snapshot_free(&snap);
	}
	fprintf(f, "# HELP mempolicyd_profile_drift%s Drifts of managed keys seen, by cause and what the key's policy "
		   "did.\n# TYPE mempolicyd_profile_drift%s counter\n", om ? "" : "_total", om ? "" : "_total");
	for (int c = 0; c < DC_END; c++)
		for (int a = 0; a < DA_END; a++)
			fprintf(f, "mempolicyd_profile_drift_total{cause=\"%s\",action=\"%s\"} %llu\n",
				drift_cause_name((enum drift_cause)c), drift_action_name((enum drift_action)a),
				(unsigned long long)atomic_load(&counts[c][a]));
}
