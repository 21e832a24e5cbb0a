/* /v1/knobs: the catalogue with live values, and changes to it (one knob by PUT, several by
 * PATCH). Changing is the ops layer's job (server/ops/knobs.c); this file only speaks JSON. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "server/api/api.h"
#include "server/api/jsonw.h"
#include "server/ops/knobs.h"

static const char *const no_query[] = { NULL };
static const char *const change_query[] = { "dry_run", "force", NULL };

/* One knob with its live value, path, bounds or allowed values, whether it is writable, and why
 * not when it cannot be read, as JSON text: the members, their order and their form are what
 * json_dumps(JSON_COMPACT) made of the jansson object this replaced, so a client sees no change.
 * GET /v1/knobs/{name} is the answer measured against nginx (bench/README.md, http.knob.rps):
 * building that tree, dumping it and freeing it was a fifth of the request's CPU. */
static void write_knob(struct jw *w, const struct knob *k, const struct knob_state *st, const char *path)
{
	jw_lit(w, "{\"name\":");
	jw_str(w, k->name);
	jw_lit(w, ",\"type\":");
	jw_str(w, knob_type_name(k->type));
	jw_lit(w, ",\"value\":");
	if (!st->available)
		jw_lit(w, "null");
	else if (k->type == KNOB_CHOICE)
		jw_str(w, st->value);
	else
		jw_int(w, (int64_t)st->num);   /* knob_read refuses a number past INT64_MAX */
	if (k->type == KNOB_CHOICE) {
		jw_lit(w, ",\"allowed\":[");
		for (int i = 0; i < st->nopts; i++) {
			if (i)
				jw_lit(w, ",");
			jw_str(w, st->opts[i]);
		}
		jw_lit(w, "]");
	} else {
		jw_lit(w, ",\"min\":");
		jw_int(w, (int64_t)k->min);
		jw_lit(w, ",\"max\":");
		jw_int(w, (int64_t)k->max);
	}
	jw_lit(w, ",\"path\":");
	jw_str(w, path);
	if (st->available && st->writable)
		jw_lit(w, ",\"available\":true,\"writable\":true");
	else if (st->available)
		jw_lit(w, ",\"available\":true,\"writable\":false");
	else {
		jw_lit(w, ",\"available\":false,\"writable\":false,\"error\":");
		jw_str(w, st->read_err == -EINVAL && st->optbuf[0] ? "the file's text does not parse for this type"
								 : strerror(-st->read_err));
	}
	jw_lit(w, ",\"description\":");
	jw_str(w, k->desc);
	jw_lit(w, "}");
}

static int reply_text(struct req *rq, struct jw *w, mp_err *e)
{
	size_t len;
	char *text = jw_finish(w, &len);

	if (!text)
		return mp_nomem(e);
	return req_reply_text(rq, text, len, "application/json");
}

int api_knobs_list(struct req *rq, mp_err *e)
{
	struct knob_state st;
	char path[PATH_MAX];
	struct jw w = { 0 };

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	jw_lit(&w, "{\"knobs\":[");
	for (size_t i = 0; i < knobs_read_count(rq->app); i++) {
		const struct knob *k = knobs_read_at(rq->app, i, &st, path, sizeof path);
		if (i)
			jw_lit(&w, ",");
		write_knob(&w, k, &st, path);
	}
	jw_lit(&w, "]}");
	return reply_text(rq, &w, e);
}

int api_knob_get(struct req *rq, mp_err *e)
{
	struct knob_state st;
	char path[PATH_MAX];
	const struct knob *k;
	struct jw w = { 0 };

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (!(k = knobs_read_one(rq->app, rq->param[0], &st, path, sizeof path, e)))
		return -1;
	write_knob(&w, k, &st, path);
	return reply_text(rq, &w, e);
}

/* jansson's unpack error -> our 400 codes. */
static int body_fail(mp_err *e, const json_error_t *je)
{
	switch (json_error_code(je)) {
	case json_error_end_of_input_expected:
		return mp_fail(e, MPE_REQUEST_UNKNOWN_FIELD, 0, "unknown field: %s", je->text);
	case json_error_item_not_found:
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "%s", je->text);
	default:
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "%s", je->text);
	}
}

/* Runs the change and replies; a recorded failure becomes a problem with the operation attached. */
static int apply(struct req *rq, json_t *knobs, mp_err *e)
{
	struct knobs_actor who = { .known = rq->who.known, .uid = rq->who.uid, .name = rq->who.name,
				   .source = "api" };
	json_t *out = NULL, *p;
	bool dry = false, force = false;

	/* ?force=true: write a knob that already has the value (for the write's side effect). */
	if (req_query_only(rq, change_query, e) < 0 || req_query_bool(rq, "dry_run", &dry, e) < 0 ||
	    req_query_bool(rq, "force", &force, e) < 0)
		return -1;
	if (knobs_set(rq->app, &who, knobs, dry, force, &out, e) == 0)
		return req_reply(rq, 200, out);
	if (!out)
		return -1;
	/* Recorded: the problem carries the operation (RFC 9457 extension members). */
	p = problem_json(e, rq->url);
	json_object_set(p, "operation_id", json_object_get(out, "operation_id"));
	json_object_set(p, "operation_status", json_object_get(out, "status"));
	json_object_set(p, "changes", json_object_get(out, "changes"));
	json_decref(out);
	return req_reply(rq, api_status(e), p);
}

int api_knob_put(struct req *rq, mp_err *e)
{
	json_error_t je;
	json_t *v = NULL, *knobs;
	int rc;

	if (json_unpack_ex(rq->body, &je, 0, "{s:o !}", "value", &v) != 0)
		return body_fail(e, &je);
	knobs = json_object();
	/* A name that is not valid UTF-8 cannot be a key, and is no knob either. */
	if (json_object_set(knobs, rq->param[0], v) < 0)
		rc = mp_fail(e, MPE_KNOB_UNKNOWN, 0, "no knob by that name");
	else
		rc = apply(rq, knobs, e);
	json_decref(knobs);
	return rc;
}

int api_knobs_patch(struct req *rq, mp_err *e)
{
	json_error_t je;
	json_t *knobs = NULL;

	if (json_unpack_ex(rq->body, &je, 0, "{s:o !}", "knobs", &knobs) != 0)
		return body_fail(e, &je);
	if (!json_is_object(knobs))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"knobs\" must be an object of name: value");
	if (json_object_size(knobs) == 0)
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "\"knobs\" names no knob");
	return apply(rq, knobs, e);
}
