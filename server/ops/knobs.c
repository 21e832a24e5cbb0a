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

/* The changes and the outcome of operation *id; with op, that operation is inserted in the same
 * transaction first (recorded_after) and *id filled. */
static int record(const struct app *app, const struct op_record *op, int64_t *id, const struct item *items, size_t n,
		  const char *status, int err_no, const char *error, json_t *result, mp_err *e)
{
	struct knob_change_rec *kc = calloc(n, sizeof *kc);
	struct op_outcome out = { status, clk_wall_ns(), err_no, error, result };
	int rc;

	if (!kc)
		return mp_nomem(e);
	for (size_t i = 0; i < n; i++)
		kc[i] = (struct knob_change_rec){ (int)i, items[i].k->name, items[i].old, items[i].new_value,
						  items[i].status, items[i].err };
	rc = op ? history_insert_knobs(app->store, op, kc, n, &out, id, e)
		: history_record_knobs(app->store, *id, kc, n, &out, e);
	free(kc);
	return rc;
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

int knobs_set(const struct app *app, const struct knobs_actor *who, json_t *knobs, bool dry_run, bool force,
	      json_t **out, mp_err *e)
{
	size_t n = json_object_size(knobs);
	struct item *items = NULL;
	struct op_record op = { 0 };
	bool mismatch, restore_failed;
	const char *status;
	json_t *request = NULL, *result = NULL;
	int64_t id;
	int fail, rc = -1;

	*out = NULL;
	if (n == 0 || n > MAX_KNOBS_PER_CHANGE)
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "a change names 1 to %d knobs", MAX_KNOBS_PER_CHANGE);
	if (!(items = calloc(n, sizeof *items)))
		return mp_nomem(e);
	pthread_mutex_lock(&knob_lock);
	if (validate(app, knobs, items, e) < 0)
		goto out;
	if (dry_run) {
		*out = json_pack("{s:n, s:s, s:b, s:o}", "operation_id", "status", "planned", "dry_run", 1,
				 "changes", changes_json(items, n, true));
		rc = 0;
		goto out;
	}
	if (mark_unchanged(items, n, force)) {
		*out = json_pack("{s:n, s:s, s:b, s:b, s:o}", "operation_id", "status", "unchanged", "dry_run", 0,
				 "changed", 0, "changes", changes_json(items, n, false));
		rc = 0;
		goto out;
	}

	/* Recorded before anything is written: a change the daemon cannot record is not made, and a
	 * crash mid-change leaves a "running" operation behind as evidence — unless the caller's
	 * operation is that evidence (recorded_after): then recorded once, after, or undone. */
	request = json_pack("{s:O}", "knobs", knobs);
	op.kind = "knobs.set";
	op.source = who->source ? who->source : "api";
	op.has_actor = who->known;
	op.actor_uid = who->uid;
	op.actor_name = who->name;
	op.started_ns = clk_wall_ns();
	op.status = "running";
	op.request = request;
	op.kernel_release = app->caps.kernel_release;
	id = who->recorded_after ? 0 : history_insert(app->store, &op, e);
	if (id < 0)
		goto out;

	struct cond_snap *cond = cond_begin(app);
	fail = apply(app, items, n, &mismatch, &restore_failed);
	json_t *conditions = cond_end(app, cond);
	if (fail < 0) {
		status = "ok";
		mp_err_clear(e);
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
		status = restore_failed || fail == 0 ? "failed" : "rolled_back";
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
	result = json_pack("{s:o}", "changes", changes_json(items, n, false));
	if (conditions && who->conditions)
		*who->conditions = json_incref(conditions);
	if (conditions)
		json_object_set_new(result, "conditions", conditions);
	{
		mp_err se = { 0 };
		if (record(app, who->recorded_after ? &op : NULL, &id, items, n, status, e->sys_errno,
			   fail < 0 ? NULL : e->detail, result, &se) < 0) {
			if (who->recorded_after)
				id = 0;   /* nothing of it was committed */
			if (fail < 0) {
				/* A change the daemon cannot record is not made: put the knobs back. The
				 * operation stays "running" in the table, the evidence of an attempt (the
				 * next start marks it "interrupted"); recorded_after, the caller's does. */
				int bad = undo(app, items, n);
				log_error("knobs: operation %lld could not be recorded (%s); %s", (long long)id, se.detail,
					  bad ? "undoing it failed" : "undone");
				*e = se;
				snprintf(e->detail, sizeof e->detail, "%.400s; the change could not be recorded, so %s",
					 se.detail, bad ? "it was undone, except where restoring failed" : "it was undone");
				status = bad ? "failed" : "undone";
				json_decref(result);
				result = json_pack("{s:o}", "changes", changes_json(items, n, false));
			} else {
				log_error("knobs: operation %lld (%s) not recorded: %s", (long long)id, status, se.detail);
			}
		}
	}
	*out = json_pack("{s:o, s:s, s:b, s:b, s:O}", "operation_id", id > 0 ? json_integer(id) : json_null(), "status",
			 status, "dry_run", 0, "changed", fail < 0 && !e->code, "changes", json_object_get(result, "changes"));
	rc = fail < 0 && !e->code ? 0 : -1;
out:
	pthread_mutex_unlock(&knob_lock);
	json_decref(request);
	json_decref(result);
	free(items);
	return rc;
}
