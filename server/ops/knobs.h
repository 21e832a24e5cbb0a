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
