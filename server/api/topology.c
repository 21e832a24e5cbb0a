/* GET /v1/topology: the NUMA nodes as the kernel sees them right now (read by
 * server/ops/topology.c). */
#include "server/api/api.h"
#include "server/ops/topology.h"

int api_topology_get(struct req *rq, mp_err *e)
{
	static const char *const no_params[] = { NULL };
	json_t *out;

	if (req_query_only(rq, no_params, e) < 0)
		return -1;
	if (!(out = topology_json(rq->app, e)))
		return -1;
	return req_reply(rq, 200, out);
}
