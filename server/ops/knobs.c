#include "server/ops/knobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/ops/conditions.h"
#include "server/priv/act.h"
#include "server/store/db.h"
#include "server/store/history.h"

/* One change at a time, from validation to the history commit: the live values checked are the
 * ones written over, and history order is the order changes were applied and acknowledged. */
static pthread_mutex_t knob_lock = PTHREAD_MUTEX_INITIALIZER;

#define MAX_KNOBS_PER_CHANGE 256

struct item {
	const struct knob *k;        /* borrowed from the catalogue */
	char old[64];                /* canonical text before */
	char new_value[64];          /* canonical text requested */
	const char *status;          /* NULL until decided; see docs/reference/knobs.md */
	int err;                     /* errno of this knob's failed write or restore */
};

int knob_unknown(mp_err *e, const char *name)
{
	if (knob_name_quotable(name))
		return mp_fail(e, MPE_KNOB_UNKNOWN, 0, "no knob named '%s'", name);
	return mp_fail(e, MPE_KNOB_UNKNOWN, 0, "no knob by that name (names are made of letters, digits, "
		       "'.', '_', '+' and '-')");
}

json_t *knob_value_json(const struct knob *k, const char *text)
{
	uint64_t v;

	if (k->type == KNOB_CHOICE || parse_u64(text, &v) < 0 || v > INT64_MAX)
		return json_string(text);
	return json_integer((json_int_t)v);
}

static int out_of_range(const struct knob *k, mp_err *e)
{
	return mp_fail(e, MPE_KNOB_OUT_OF_RANGE, 0, "%s takes an integer from %llu to %llu", k->name,
		       (unsigned long long)k->min, (unsigned long long)k->max);
}

int knob_value_text(const struct knob *k, json_t *v, char *buf, size_t len, mp_err *e)
{
	uint64_t u;

	/* A JSON string may hold "\u0000"; C sees it end there, so "never\u0000x" would pass as
	 * "never". No knob value contains one. */
	bool nul = json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v);

	if (k->type == KNOB_CHOICE) {
		if (!json_is_string(v))
			return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "%s takes a string (one of the kernel's "
				       "values)", k->name);
		if (json_string_length(v) >= len || nul)
			return mp_fail(e, MPE_KNOB_VALUE_NOT_ALLOWED, 0, "that value is not allowed for %s", k->name);
		snprintf(buf, len, "%s", json_string_value(v));
		return 0;
	}
	if (k->type == KNOB_BOOLEAN && json_is_boolean(v)) {
		snprintf(buf, len, "%d", json_is_true(v) ? 1 : 0);
		return 0;
	}
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return out_of_range(k, e);
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
		return 0;
	}
	/* Decimal strings too, so that a CLI can send NAME=VALUE text without knowing the type; in
	 * their canonical spelling only, as a JSON integer would be ("00012" is not 12). */
	if (json_is_string(v) && !nul) {
		errno = 0;
		if (parse_u64_canonical(json_string_value(v), &u) == 0) {
			snprintf(buf, len, "%llu", (unsigned long long)u);
			return 0;
		}
		if (errno == ERANGE)
			return out_of_range(k, e);
	}
	return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "%s takes an integer%s (as a string: decimal digits without "
		       "leading zeros)", k->name, k->type == KNOB_BOOLEAN ? " (0 or 1) or a boolean" : "");
}

/* Everything is checked before anything is touched. */
static int validate(const struct app *app, json_t *knobs, struct item *items, mp_err *e)
{
	const char *name;
	json_t *v;
	size_t i = 0;

	json_object_foreach(knobs, name, v) {
		struct knob_state st;
		struct item *it = &items[i++];

		if (!(it->k = knobs_find(app->knobs, name)))
			return knob_unknown(e, name);
		knob_read_value(app->knobs, it->k, &st);   /* writability is the write's to tell */
		if (!st.available)
			return mp_fail(e, MPE_KNOB_UNAVAILABLE, -st.read_err, "%s is not available on this kernel (%s)",
				       name, strerror(-st.read_err));
		if (knob_value_text(it->k, v, it->new_value, sizeof it->new_value, e) < 0)
			return -1;
		switch (knob_check_value(it->k, &st, it->new_value)) {
		case KNOB_OK:
			break;
		case KNOB_NOT_ALLOWED: {
			char offers[256] = "";
			size_t off = 0;
			for (int j = 0; j < st.nopts && off < sizeof offers; j++) {
				int w = snprintf(offers + off, sizeof offers - off, "%s%s", j ? ", " : "", st.opts[j]);
				off += w > 0 ? (size_t)w : 0;
			}
			return mp_fail(e, MPE_KNOB_VALUE_NOT_ALLOWED, 0, "'%.64s' is not allowed for %s (the kernel "
				       "offers: %s)", it->new_value, name, offers);
		}
		case KNOB_OUT_OF_RANGE:
			return out_of_range(it->k, e);
		}
		snprintf(it->old, sizeof it->old, "%s", st.value);
	}
	return 0;
}

static json_t *changes_json(const struct item *items, size_t n, bool dry_run)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		const struct item *it = &items[i];
		json_t *c = json_pack("{s:s, s:o, s:o}", "knob", it->k->name, "old", knob_value_json(it->k, it->old),
				      "new", knob_value_json(it->k, it->new_value));
		if (dry_run)
			json_object_set_new(c, "would_change", json_boolean(strcmp(it->old, it->new_value) != 0));
		else
			json_object_set_new(c, "status", json_string(it->status));
		if (it->err)
			json_object_set_new(c, "errno", json_integer(it->err));
		json_array_append_new(a, c);
	}
	return a;
}

/* Writes value and reads it back. 0, -errno, or 1 when the kernel took the write but shows
 * something else. */
static int write_checked(const struct app *app, const struct knob *k, const char *value)
{
	struct knob_state st;
	int rc = act_knob_write(app->knobs, k, value);

	if (rc < 0)
		return rc;
	knob_read_value(app->knobs, k, &st);
	if (!st.available)
		return st.read_err;
	return strcmp(st.value, value) ? 1 : 0;
}

/* Applies items in order; on a failure restores the written ones in reverse. Returns the index of
 * the failing item or -1 when all were written; *mismatch tells how it failed. */
static int apply(const struct app *app, struct item *items, size_t n, bool *mismatch, bool *restore_failed)
{
	const struct knob *ks[MAX_KNOBS_PER_CHANGE] = { 0 };
	const char *values[MAX_KNOBS_PER_CHANGE] = { 0 };
	size_t at[MAX_KNOBS_PER_CHANGE], nw = 0;   /* ks[w] is items[at[w]] */
	int rcs[MAX_KNOBS_PER_CHANGE], fail = -1;
	long done;

	*mismatch = *restore_failed = false;
	/* The writes in order, each read back, in one request to the helper (not one round trip
	 * each); it stops at the first that fails, which is where the rollback below starts. */
	for (size_t i = 0; i < n; i++)
		if (!items[i].status) {   /* "unchanged": it has the value already, nothing to write */
			ks[nw] = items[i].k;
			values[nw] = items[i].new_value;
			at[nw++] = i;
		}
	done = act_knob_write_each(app->knobs, ks, values, nw, rcs);
	if (done < 0 && nw) {
		/* Nothing was attempted: the first write fails with the request's error. */
		rcs[0] = (int)done;
		done = 1;
	}
	for (size_t w = 0; w < (size_t)(done > 0 ? done : 0); w++) {
		size_t i = at[w];
		int rc = rcs[w];
		if (rc == 0) {
			items[i].status = "written";
			continue;
		}
		fail = (int)i;
		items[i].status = "failed";
		items[i].err = rc < 0 ? -rc : 0;
		/* Taken but not shown: the knob may be half-changed, so it is put back as well. */
		if (rc == 1) {
			*mismatch = true;
			if (write_checked(app, items[i].k, items[i].old) != 0) {
				items[i].status = "restore_failed";
				*restore_failed = true;
			}
		}
		break;
	}
	if (fail < 0)
		return -1;
	for (int j = fail - 1; j >= 0; j--) {
		int rc;
		if (strcmp(items[j].status, "written"))
			continue;   /* unchanged: never written, nothing to put back */
		rc = write_checked(app, items[j].k, items[j].old);
		items[j].status = rc == 0 ? "restored" : "restore_failed";
		items[j].err = rc < 0 ? -rc : 0;
		if (rc != 0) {
			*restore_failed = true;
			log_error("knobs: could not restore %s to '%s' (errno %d)", items[j].k->name, items[j].old, -rc);
		}
	}
	for (size_t j = (size_t)fail + 1; j < n; j++)
		if (!items[j].status)
			items[j].status = "skipped";
	return fail;
}

/* Puts every written knob back, in reverse; returns how many could not be restored. */
static int undo(const struct app *app, struct item *items, size_t n)
{
	int bad = 0;

	for (size_t j = n; j-- > 0;) {
		int rc;
		if (strcmp(items[j].status, "written"))
			continue;
		rc = write_checked(app, items[j].k, items[j].old);
		items[j].status = rc == 0 ? "restored" : "restore_failed";
		items[j].err = rc < 0 ? -rc : 0;
		bad += rc != 0;
	}
	return bad;
}

/* Marks the knobs that already have their value "unchanged" (unless force); true when that is
 * every knob, so there is nothing to write or record. */
static bool mark_unchanged(struct item *items, size_t n, bool force)
{
	size_t same = 0;

	for (size_t i = 0; i < n && !force; i++)
		if (!strcmp(items[i].old, items[i].new_value)) {
			items[i].status = "unchanged";
			same++;
		}
	return same == n;
}

/* A change from validation to its record (see knobs.h); holds knob_lock from knob_tx_begin to
 * knob_tx_done. */
struct knob_tx {
	const struct app *app;       /* borrowed */
	struct item *items;          /* owned, n of them */
	size_t n;
	struct op_record op;         /* the operation, "running"; its strings are borrowed from the actor */
	json_t *request;             /* owned: op.request */
	int64_t id;                  /* the operation's, once inserted (0: not yet) */
	const char *status;          /* static: the outcome, once written */
	json_t *result;              /* owned: {"changes", "conditions"} once written */
	json_t *conditions;          /* owned: what was measured around the writes */
	struct knob_change_rec *kc;  /* owned, n: the rows to record */
	mp_err e;                    /* the change's error ("" when it succeeded) */
};

int knob_tx_begin(const struct app *app, const struct knobs_actor *who, json_t *knobs, bool force,
		  struct knob_tx **txp, json_t **out, mp_err *e)
{
	size_t n = json_object_size(knobs);
	struct knob_tx *tx;

	*txp = NULL;
	*out = NULL;
	if (n == 0 || n > MAX_KNOBS_PER_CHANGE)
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "a change names 1 to %d knobs", MAX_KNOBS_PER_CHANGE);
	if (!(tx = calloc(1, sizeof *tx)) || !(tx->items = calloc(n, sizeof *tx->items)) ||
	    !(tx->kc = calloc(n, sizeof *tx->kc))) {
		if (tx)
			free(tx->items);
		free(tx);
		return mp_nomem(e);
	}
	tx->app = app;
	tx->n = n;
	pthread_mutex_lock(&knob_lock);
	if (validate(app, knobs, tx->items, e) < 0)
		goto refused;
	if (mark_unchanged(tx->items, n, force)) {
		*out = json_pack("{s:n, s:s, s:b, s:b, s:o}", "operation_id", "status", "unchanged", "dry_run", 0,
				 "changed", 0, "changes", changes_json(tx->items, n, false));
		knob_tx_done(tx);
		return 0;
	}
	tx->request = json_pack("{s:O}", "knobs", knobs);
	tx->op.kind = "knobs.set";
	tx->op.source = who->source ? who->source : "api";
	tx->op.has_actor = who->known;
	tx->op.actor_uid = who->uid;
	tx->op.actor_name = who->name;
	tx->op.started_ns = clk_wall_ns();
	tx->op.status = "running";
	tx->op.request = tx->request;
	tx->op.kernel_release = app->caps.kernel_release;
	*txp = tx;
	return 0;
refused:
	knob_tx_done(tx);
	return -1;
}

const struct op_record *knob_tx_op(const struct knob_tx *tx)
{
	return &tx->op;
}

int knob_tx_write(struct knob_tx *tx, int64_t id, struct knob_record *rec)
{
	const struct app *app = tx->app;
	struct item *items = tx->items;
	size_t n = tx->n;
	bool mismatch, restore_failed;
	mp_err *e = &tx->e;

	tx->id = id;
	struct cond_snap *cond = cond_begin(app);
	int fail = apply(app, items, n, &mismatch, &restore_failed);
	tx->conditions = cond_end(app, cond);
	if (fail < 0) {
		tx->status = "ok";
	} else {
		const struct item *f = &items[fail];
		int err = f->err;
		/* A write the helper never answered is not the kernel's refusal. */
		bool lost = act_helper_lost();
		enum mp_code code = lost ? MPE_PRIV_LOST : restore_failed ? MPE_KNOB_ROLLBACK_FAILED
				    : mismatch ? MPE_KNOB_READBACK_MISMATCH : MPE_KNOB_KERNEL_REFUSED;
		size_t restored = 0;
		for (int j = 0; j < fail; j++)
			restored += !strcmp(items[j].status, "restored");
		tx->status = restore_failed || fail == 0 ? "failed" : "rolled_back";
		char tail[96] = "";
		if (fail > 0)
			snprintf(tail, sizeof tail, "; %zu of %d knob(s) already written were restored", restored, fail);
		if (lost)
			mp_fail(e, code, 0, "%s = %s was not written: the privileged helper is gone (the daemon exits and "
				"its service manager starts it again)%s", f->k->name, f->new_value, tail);
		else if (mismatch)
			mp_fail(e, code, err, "%s = %s was accepted but reads back differently%s", f->k->name,
				f->new_value, tail);
		else
			mp_fail(e, code, err, "the kernel refused %s = %s: %s%s", f->k->name, f->new_value,
				strerror(err), tail);
	}
	tx->result = json_pack("{s:o}", "changes", changes_json(items, n, false));
	if (tx->conditions)
		json_object_set(tx->result, "conditions", tx->conditions);
	for (size_t i = 0; i < n; i++)
		tx->kc[i] = (struct knob_change_rec){ (int)i, items[i].k->name, items[i].old, items[i].new_value,
						      items[i].status, items[i].err };
	*rec = (struct knob_record){ .id = id, .kc = tx->kc, .n = n,
				     .out = { tx->status, clk_wall_ns(), e->sys_errno, fail < 0 ? NULL : e->detail,
					      tx->result } };
	return fail < 0 ? 0 : -1;
}

const mp_err *knob_tx_error(const struct knob_tx *tx)
{
	return &tx->e;
}

json_t *knob_tx_conditions(const struct knob_tx *tx)
{
	return tx->conditions;
}

void knob_tx_unrecorded(struct knob_tx *tx, const mp_err *se)
{
	const struct app *app = tx->app;

	if (strcmp(tx->status, "ok")) {
		log_error("knobs: operation %lld (%s) not recorded: %s", (long long)tx->id, tx->status, se->detail);
		return;
	}
	/* A change the daemon cannot record is not made: put the knobs back. The operation stays
	 * "running" in the table when it was inserted before, the evidence of an attempt (the next
	 * start marks it "interrupted"). */
	int bad = undo(app, tx->items, tx->n);
	log_error("knobs: operation %lld could not be recorded (%s); %s", (long long)tx->id, se->detail,
		  bad ? "undoing it failed" : "undone");
	tx->e = *se;
	snprintf(tx->e.detail, sizeof tx->e.detail, "%.400s; the change could not be recorded, so %s", se->detail,
		 bad ? "it was undone, except where restoring failed" : "it was undone");
	tx->status = bad ? "failed" : "undone";
	json_object_set_new(tx->result, "changes", changes_json(tx->items, tx->n, false));
	json_object_del(tx->result, "conditions");
}

json_t *knob_tx_answer(const struct knob_tx *tx)
{
	bool ok = !tx->e.code;

	return json_pack("{s:o, s:s, s:b, s:b, s:O}", "operation_id", tx->id > 0 ? json_integer(tx->id) : json_null(),
			 "status", tx->status, "dry_run", 0, "changed", ok, "changes", json_object_get(tx->result, "changes"));
}

void knob_tx_done(struct knob_tx *tx)
{
	if (!tx)
		return;
	pthread_mutex_unlock(&knob_lock);
	json_decref(tx->request);
	json_decref(tx->result);
	json_decref(tx->conditions);
	free(tx->kc);
	free(tx->items);
	free(tx);
}

int knobs_set(const struct app *app, const struct knobs_actor *who, json_t *knobs, bool dry_run, bool force,
	      json_t **out, mp_err *e)
{
	struct knob_tx *tx = NULL;
	struct knob_record rec;
	mp_err se = { 0 };
	int rc;

	*out = NULL;
	if (dry_run) {
		size_t n = json_object_size(knobs);
		struct item *items;
		if (n == 0 || n > MAX_KNOBS_PER_CHANGE)
			return mp_fail(e, MPE_REQUEST_INVALID, 0, "a change names 1 to %d knobs", MAX_KNOBS_PER_CHANGE);
		if (!(items = calloc(n, sizeof *items)))
			return mp_nomem(e);
		pthread_mutex_lock(&knob_lock);
		rc = validate(app, knobs, items, e);
		pthread_mutex_unlock(&knob_lock);
		if (rc == 0)
			*out = json_pack("{s:n, s:s, s:b, s:o}", "operation_id", "status", "planned", "dry_run", 1,
					 "changes", changes_json(items, n, true));
		free(items);
		return rc;
	}
	if (knob_tx_begin(app, who, knobs, force, &tx, out, e) < 0 || !tx)
		return *out || !e->code ? 0 : -1;
	/* Recorded before anything is written: a change the daemon cannot record is not made, and a
	 * crash mid-change leaves a "running" operation behind as evidence — unless the caller's
	 * operation is that evidence (recorded_after): then recorded once, after, or undone. */
	if (!who->recorded_after && (tx->id = history_insert(app->store, &tx->op, e)) < 0) {
		knob_tx_done(tx);
		return -1;
	}
	rc = knob_tx_write(tx, tx->id, &rec);
	if (who->conditions)
		*who->conditions = json_incref(tx->conditions);
	if ((who->recorded_after ? history_insert_knobs(app->store, &tx->op, rec.kc, rec.n, &rec.out, &tx->id, &se)
				 : history_record_knobs(app->store, tx->id, rec.kc, rec.n, &rec.out, &se)) < 0) {
		if (who->recorded_after)
			tx->id = 0;   /* nothing of it was committed */
		knob_tx_unrecorded(tx, &se);
		rc = -1;
	}
	*out = knob_tx_answer(tx);
	if (tx->e.code)
		*e = tx->e;
	knob_tx_done(tx);
	return rc;
}
