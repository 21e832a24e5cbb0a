/* /v1/tokens: bearer tokens for the TLS listener (server/ops/tokens.h). Root's only, on the Unix
 * socket: a token never mints or revokes tokens, so a leaked admin token cannot make itself a
 * successor that outlives its revocation, and the admin group cannot hand out remote access. */
#include <stdio.h>

#include "server/api/api.h"
#include "server/ops/tokens.h"
#include "server/store/tokens.h"

static int root_only(const struct req *rq, mp_err *e)
{
	if (rq->who.known && rq->who.uid == 0)
		return 0;
	return mp_fail(e, MPE_TOKEN_ROOT_ONLY, 0, "tokens are created, listed and revoked by root on the Unix socket");
}

int api_tokens_list(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { NULL };
	json_t *arr;

	if (root_only(rq, e) < 0 || req_query_only(rq, allowed, e) < 0)
		return -1;
	if (!(arr = token_store_list(rq->app->store, e)))
		return -1;
	return req_reply(rq, 200, json_pack("{s:o}", "items", arr));
}

int api_tokens_create(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { NULL };
	json_t *out;

	if (root_only(rq, e) < 0 || req_query_only(rq, allowed, e) < 0 ||
	    token_create(rq->app, rq->body, rq->who.name, &out, e) < 0)
		return -1;
	snprintf(rq->location, sizeof rq->location, "/v1/tokens/%s", json_string_value(json_object_get(out, "name")));
	return req_reply(rq, 201, out);
}

int api_token_revoke(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { NULL };

	if (root_only(rq, e) < 0 || req_query_only(rq, allowed, e) < 0 || token_revoke(rq->app, rq->param[0], e) < 0)
		return -1;
	return req_reply(rq, 200, json_pack("{s:s, s:b}", "name", rq->param[0], "revoked", 1));
}
