/* The static route table. The router answers 404 (no pattern matches), 405 (the pattern matches
 * but not the method, with Allow), 413, 414, 415 and 403 (R_ADMIN) before any handler runs. */
#include "server/api/api.h"

const struct route api_routes[] = {
	{ "GET",    "/v1/health",                     api_health_get,        0 },
	/* topology */
	{ "GET",    "/v1/topology",                   api_topology_get,      0 },
	/* knobs */
	{ "GET",    "/v1/knobs",                      api_knobs_list,        0 },
	{ "PATCH",  "/v1/knobs",                      api_knobs_patch,       R_ADMIN | R_BODY },
	{ "GET",    "/v1/knobs/{}",                   api_knob_get,          0 },
	{ "PUT",    "/v1/knobs/{}",                   api_knob_put,          R_ADMIN | R_BODY },
	/* history */
	{ "GET",    "/v1/history",                    api_history_list,      0 },
	{ "GET",    "/v1/history/{}",                 api_history_get,       0 },
	/* hugepages */
	/* jobs */
	/* schedules */
};

const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];
