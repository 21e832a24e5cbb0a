/* /v1/processes, the changes: launch (POST /v1/processes), migrate and collapse (jobs). The reads
 * (GET /v1/processes/{pid}) are in processes.c. */
#include <microhttpd.h>
#include <stdio.h>
#include <sys/socket.h>

#include "server/api/api.h"
#include "server/ops/launch.h"
#include "server/ops/pmigrate.h"

#define MAX_PEER_GROUPS 1024

static const char *const no_query[] = { NULL };

/* The caller's supplementary groups as the socket saw them at connect (SO_PEERGROUPS, 4.13).
 * 0 groups when they cannot be read: the child then runs with none, never with more. */
size_t api_peer_groups(int fd, gid_t *g, size_t max)
{
	socklen_t len = (socklen_t)(max * sizeof *g);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0)
		return 0;
	return len / sizeof *g;
}

int api_processes_launch(struct req *rq, mp_err *e)
{
	gid_t groups[MAX_PEER_GROUPS];
	struct launch_who who = { .known = rq->who.known, .uid = rq->who.uid, .gid = rq->who.gid,
				  .name = rq->who.name, .groups = groups, .conn_fd = -1 };
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (who.known && ci) {
		who.conn_fd = ci->connect_fd;
		who.ngroups = api_peer_groups(who.conn_fd, groups, MAX_PEER_GROUPS);
	}
	if (launch_start(rq->app, rq->body, &who, &out, e) < 0)
		return -1;
	snprintf(rq->location, sizeof rq->location, "/v1/processes/%lld",
		 (long long)json_integer_value(json_object_get(out, "pid")));
	return req_reply(rq, 201, out);
}

/* POST /v1/processes/self: the caller launches the program as its own process (ops/launch.c). */
int api_processes_self(struct req *rq, mp_err *e)
{
	gid_t none[1] = { 0 };   /* no groups are handed on: the caller keeps its own */
	struct launch_who who = { .known = rq->who.known, .uid = rq->who.uid, .gid = rq->who.gid,
				  .name = rq->who.name, .groups = none, .ngroups = 0, .conn_fd = -1 };
	json_t *out;

	if (req_query_only(rq, no_query, e) < 0 || launch_self(rq->app, rq->body, &who, rq->who.pid, &out, e) < 0)
		return -1;
	snprintf(rq->location, sizeof rq->location, "/v1/processes/%lld",
		 (long long)json_integer_value(json_object_get(out, "pid")));
	return req_reply(rq, 201, out);
}

int api_process_migrate(struct req *rq, mp_err *e)
{
	struct pact_caller who = { .known = rq->who.known, .admin = rq->who.admin, .uid = rq->who.uid,
				   .name = rq->who.name };
	int64_t conflict_id = 0;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	return req_job_reply(rq, migrate_submit(rq->app, rq->param[0], rq->body, &who, &conflict_id, e), conflict_id, e);
}

int api_process_collapse(struct req *rq, mp_err *e)
{
	struct pact_caller who = { .known = rq->who.known, .admin = rq->who.admin, .uid = rq->who.uid,
				   .name = rq->who.name };
	int64_t conflict_id = 0;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	return req_job_reply(rq, collapse_submit(rq->app, rq->param[0], rq->body, &who, &conflict_id, e), conflict_id, e);
}
