/* /v1/knobs: the catalogue with live values, and changes to it (one knob by PUT, several by
 * PATCH). Changing is the ops layer's job (server/ops/knobs.c); this file only speaks JSON. */
#include "server/api/api.h"
#include "server/ops/knobs.h"

static const char *const no_query[] = { NULL };
static const char *const change_query[] = { "dry_run", "force", NULL };

int api_knobs_list(struct req *rq, mp_err *e)
{
	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	return req_reply(rq, 200, json_pack("{s:o}", "knobs", knobs_list_json(rq->app)));
}

int api_knob_get(struct req *rq, mp_err *e)
{
	json_t *k;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (!(k = knob_get_json(rq->app, rq->param[0], e)))
		return -1;
	return req_reply(rq, 200, k);
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
