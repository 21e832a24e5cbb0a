/* GET /v1/profile/drift: the drift history, newest first — each drift of a managed key with its
 * cause and what its policy did (store/drift.h). A plain read. */
#include <stdio.h>
#include <string.h>

#include "server/api/api.h"
#include "server/store/drift.h"

int api_profile_drift(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "key", "limit", "cursor", NULL };
	const char *key = req_query(rq, "key");
	uint64_t limit = 50;
	int64_t before = 0, next;
	json_t *items;
	uint32_t scope;

	if (req_query_only(rq, allowed, e) < 0 || req_query_u64(rq, "limit", 1, 1000, &limit, e) < 0)
		return -1;
	/* A key id is a knob's name, hugepages.SIZE.nodeN|total or cgroup[PATH].mems: what knob names
	 * are made of, brackets and slashes, bounded. Anything else matches nothing, and is refused. */
	if (key && (!*key || strlen(key) > 400 || strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
							 "0123456789._+-[]/") != strlen(key)))
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "key: a managed key's id (thp.defrag, hugepages.2M.node0), "
			       "1 to 400 characters");
	scope = cursor_scope(key ? key : "");
	if (req_cursor(rq, scope, &before, e) < 0 ||
	    drift_list(rq->app->store, key, before, (int)limit, &items, &next, e) < 0)
		return -1;
	return req_reply(rq, 200, json_pack("{s:o, s:o}", "drifts", items, "next_cursor", cursor_json(next, scope)));
}
