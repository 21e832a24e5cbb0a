/* Changing knobs: validate everything against the catalogue and the live kernel, snapshot, write
 * in order with read-back, restore on failure, record the operation. Used by the API (PUT/PATCH)
 * and meant for profiles and schedules later. */
#ifndef MPD_OPS_KNOBS_H
#define MPD_OPS_KNOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "server/app.h"
#include "server/kernel/knobs.h"

struct knobs_actor {
	bool known;                  /* false: the daemon itself (no uid recorded) */
	uid_t uid;
	const char *name;            /* borrowed; "" or NULL when the uid has no name */
	const char *source;          /* "api", "scheduler", ... */
	/* The caller's own operation, committed "running" before this call, is the evidence of the
	 * attempt should the daemon die mid-change (a profile.apply job): the knobs.set operation is
	 * then recorded once, whole, after the writes (one commit, not one before and one after).
	 * Unrecordable, the change is undone as ever. false: recorded before anything is written. */
	bool recorded_after;
	/* Not NULL: receives the conditions recorded with the knobs.set operation (a new reference,
	 * or NULL when none was: nothing written), for a caller whose operation is this change. */
	json_t **conditions;
};

/* knobs: an object {name: JSON value} (borrowed), written in its key order. On success returns 0
 * and *out = {"operation_id", "status", "dry_run", "changed", "changes"} (owned by the caller).
 * A knob that already has the value asked for is not written (its change says "unchanged"), and a
 * change in which every knob already has its value writes nothing and records nothing: status
 * "unchanged", operation_id null, changed false, so a retried PUT is idempotent (Ansible's
 * changed: false). force writes (and records) every knob anyway, for a write's side effect.
 * On failure returns -1 with e filled; *out is NULL when nothing was touched or recorded
 * (validation), or the recorded result (same shape, with "operation_id") when the kernel refused. */
int knobs_set(const struct app *app, const struct knobs_actor *who, json_t *knobs, bool dry_run, bool force,
	      json_t **out, mp_err *e);

/* The same change in steps, for a caller that records it in its own transactions (a profile.apply
 * run within its request: the job's start and this change's "running" operation in one commit
 * before the first write, this change's outcome and the job's end in one after the last). The
 * rules are knobs_set's: validated whole before anything is written, one change at a time from
 * validation to its record (the knob lock is held from knob_tx_begin to knob_tx_done), and a
 * change that cannot be recorded is put back (knob_tx_unrecorded). */
struct knob_tx;
struct knob_record;
/* Validates knobs as knobs_set does (not a dry run). -1 with e: refused, nothing held. 0 with *tx
 * NULL and *out knobs_set's "unchanged" answer: every knob has its value (force: none does),
 * nothing to write or record. 0 with *tx (owned: knob_tx_done): the writes to make, the lock held. */
int knob_tx_begin(const struct app *app, const struct knobs_actor *who, json_t *knobs, bool force,
		  struct knob_tx **tx, json_t **out, mp_err *e);
/* The knobs.set operation, "running", for the caller to insert before knob_tx_write (borrowed from
 * tx; its actor strings are who's, which must live as long). */
const struct op_record *knob_tx_op(const struct knob_tx *tx);
/* The writes, in order, each read back, rolled back at the first failure, measured (conditions);
 * id is the operation inserted. 0, or -1 when the kernel refused (knob_tx_error says how). *rec
 * (its pointers borrowed from tx) is what to record: the changes and the outcome of id. */
int knob_tx_write(struct knob_tx *tx, int64_t id, struct knob_record *rec);
/* The change's error after knob_tx_write or knob_tx_unrecorded (code 0: none), borrowed. */
const mp_err *knob_tx_error(const struct knob_tx *tx);
/* What was measured around the writes (borrowed; NULL when nothing could be). */
json_t *knob_tx_conditions(const struct knob_tx *tx);
/* Recording *rec failed with se: a change that was made is undone (the written knobs put back,
 * the error says so); a refused one is logged. */
void knob_tx_unrecorded(struct knob_tx *tx, const mp_err *se);
/* knobs_set's answer for the change as it stands (a new object). */
json_t *knob_tx_answer(const struct knob_tx *tx);
/* Releases the lock and tx; NULL is nothing. */
void knob_tx_done(struct knob_tx *tx);

/* The catalogue as GET /v1/knobs lists it: knob i (below knobs_read_count) or the one named, with
 * its live state read into *st and its file's path into path (len bytes). The knob is the
 * catalogue's (borrowed); NULL with 404 knob.unknown for a name it does not hold. */
size_t knobs_read_count(const struct app *app);
const struct knob *knobs_read_at(const struct app *app, size_t i, struct knob_state *st, char *path, size_t len);
const struct knob *knobs_read_one(const struct app *app, const char *name, struct knob_state *st, char *path,
				  size_t len, mp_err *e);

/* 404 knob.unknown, quoting name only when it is safe to. Returns -1. */
int knob_unknown(mp_err *e, const char *name);

/* The JSON form of a knob's canonical text: a string for choice knobs, an integer otherwise. */
json_t *knob_value_json(const struct knob *k, const char *text);

/* Canonical text for a requested JSON value (see docs/reference/knobs.md for what each type takes).
 * 0, or -1 with a 400 request.wrong_type / 422 knob.out_of_range in e. */
int knob_value_text(const struct knob *k, json_t *v, char *buf, size_t len, mp_err *e);

#endif
