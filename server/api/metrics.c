/* GET /metrics: the Prometheus text format 0.0.4, or OpenMetrics 1.0 when the scraper's Accept
 * asks for application/openmetrics-text. What node_exporter already exports (meminfo, vmstat) is
 * not repeated; what it lacks is here, with its label shape: node="0" joins with node_exporter's
 * node_memory_numa_* series. The work is bounded: the daemon's counters are in memory
 * (server/metrics.h) and the kernel's state is a few sysfs files per pool and knob (server/ops/gauges.c). */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api.h"
#include "server/metrics.h"
#include "server/ops/gauges.h"
#include "server/ops/profile_view.h"
#include "server/store/metrics_seed.h"

#define CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define CT_OM   "application/openmetrics-text; version=1.0.0; charset=utf-8"

int api_metrics_get(struct req *rq, mp_err *e)
{
	static const char *const no_query[] = { NULL };
	const char *accept = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	bool om = accept && strstr(accept, "application/openmetrics-text");
	char *text = NULL;   /* owned, grown by the stream */
	size_t len = 0;
	int64_t bytes;
	FILE *f;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	if (!(f = open_memstream(&text, &len)))
		return mp_nomem(e);
	gauges_write(rq->app, f, om);
	profile_view_metrics(rq->app, f);
	bytes = store_file_bytes(rq->app->store);
	fprintf(f, "# HELP mempolicyd_store_size_bytes The database's size on disk, its write-ahead log included.\n"
		   "# TYPE mempolicyd_store_size_bytes gauge\nmempolicyd_store_size_bytes %lld\n",
		(long long)(bytes < 0 ? 0 : bytes));
	gauges_write_helper(f, om);
	metrics_write_counters(f, om);
	if (om)
		fputs("# EOF\n", f);
	if (fclose(f) != 0 || !text) {
		free(text);
		return mp_nomem(e);
	}
	return req_reply_text(rq, text, len, om ? CT_OM : CT_TEXT);
}
