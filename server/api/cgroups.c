/* /v1/cgroups and /v1/cgroups/{path}: cpuset.mems of a cgroup (v2 or v1). The path is the rest of
 * the URL, checked and walked by kernel/cgroup.c without ever following a symlink. */
#include "server/api/api.h"
#include "server/ops/cgroups.h"

static const char *const no_query[] = { NULL };

int api_cgroup_root_get(struct req *rq, mp_err *e)
{
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0 || !(out = cgroup_get(rq->app, "", e)))
		return -1;
	return req_reply(rq, 200, out);
}

int api_cgroup_get(struct req *rq, mp_err *e)
{
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0 || !(out = cgroup_get(rq->app, rq->param[0], e)))
		return -1;
	return req_reply(rq, 200, out);
}

static int put(struct req *rq, const char *path, mp_err *e)
{
	struct proc_caller who = { .known = rq->who.known, .admin = rq->who.admin, .uid = rq->who.uid,
				   .name = rq->who.name, .source = "api" };
	json_t *out = NULL, *p;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (cgroup_set_mems(rq->app, &who, path, rq->body, &out, e) == 0)
		return req_reply(rq, 200, out);
	if (!out)
		return -1;
	/* Recorded: the problem carries the operation, as a refused knob write does. */
	p = problem_json(e, rq->url);
	json_object_set(p, "operation_id", json_object_get(out, "operation_id"));
	json_object_set(p, "operation_status", json_object_get(out, "status"));
	json_decref(out);
	return req_reply(rq, api_status(e), p);
}

int api_cgroup_put(struct req *rq, mp_err *e)
{
	return put(rq, rq->param[0], e);
}

/* The root's mems are every node: 409 cgroup.root, with the reason, rather than a bare 405. */
int api_cgroup_root_put(struct req *rq, mp_err *e)
{
	return put(rq, "", e);
}
