/* GET /v1/topology's answer: the NUMA nodes as the kernel sees them right now. A read with nothing
 * to validate or record, but a read of the kernel, so it lives in ops/ (a handler never touches
 * the kernel). */
#ifndef MPD_OPS_TOPOLOGY_H
#define MPD_OPS_TOPOLOGY_H

#include <jansson.h>

#include "common/err.h"

struct app;

/* {"nodes": [...], "node_count", "possible", "online"}, owned by the caller; NULL with e set
 * (500 topology.unreadable, or out of memory). */
json_t *topology_json(const struct app *app, mp_err *e);

#endif
