/* The static route table. The router answers 404 (no pattern matches), 405 (the pattern matches
 * but not the method, with Allow), 413, 414, 415 and 403 (R_ADMIN) before any handler runs. */
#include "server/api/api.h"

const struct route api_routes[] = {
	{ "GET",    "/v1/health",                     api_health_get,        0 },
	/* topology */
	{ "GET",    "/v1/topology",                   api_topology_get,      0 },
	/* knobs */
	/* history */
	/* hugepages */
	/* jobs */
	/* schedules */
};

const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];
