/* GET /v1/history/stats: per-page latency of recorded resize batches, in the mmtests shape. */
#include <math.h>
#include <string.h>

#include "server/api/api.h"
#include "common/parse.h"
#include "server/store/stats.h"

static json_t *num(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

int api_history_stats(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "kind", "size", "node", "since", "until", "direction", NULL };
	struct stats_filter f = { .kind = "hugepages.resize", .grow = true, .node = -1 };
	struct mmstats s;
	uint64_t node = UINT64_MAX;
	const char *v;
	json_t *filter;

	if (req_query_only(rq, allowed, e) < 0)
		return -1;
	if ((v = req_query(rq, "kind")) && strcmp(v, "hugepages.resize"))
		return mp_fail(e, MPE_STATS_UNKNOWN_KIND, 0, "latency statistics exist for kind hugepages.resize only");
	if ((v = req_query(rq, "direction"))) {
		if (strcmp(v, "grow") && strcmp(v, "shrink"))
			return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "direction must be grow or shrink");
		f.grow = !strcmp(v, "grow");
	}
	/* A size the kernel no longer offers may still have history: only the syntax is checked. */
	if ((v = req_query(rq, "size")) && parse_size_kb(v, &f.size_kb) < 0)
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "size: expected a page size such as 2M, 2048kB or 1G");
	if (req_query_u64(rq, "node", 0, 4095, &node, e) < 0)
		return -1;
	f.node = node == UINT64_MAX ? -1 : (int)node;
	if ((v = req_query(rq, "since")) && api_parse_time_ns(v, &f.since_ns) < 0)
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "since: expected RFC 3339 UTC or integer ns since the epoch");
	if ((v = req_query(rq, "until")) && api_parse_time_ns(v, &f.until_ns) < 0)
		return mp_fail(e, MPE_REQUEST_BAD_QUERY, 0, "until: expected RFC 3339 UTC or integer ns since the epoch");
	if (stats_latency(rq->app->store, &f, &s, e) < 0)
		return -1;
	filter = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "kind", f.kind, "direction", f.grow ? "grow" : "shrink",
			   "size_kb", f.size_kb ? json_integer((json_int_t)f.size_kb) : json_null(),
			   "node", f.node >= 0 ? json_integer(f.node) : json_null(),
			   "since_ns", f.since_ns ? json_integer(f.since_ns) : json_null(),
			   "until_ns", f.until_ns ? json_integer(f.until_ns) : json_null());
	return req_reply(rq, 200, json_pack("{s:o, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
					    "filter", filter, "unit", "ns_per_page", "count", (json_int_t)s.count,
					    "min", num(s.min), "q1", num(s.q1), "q2", num(s.q2), "q3", num(s.q3),
					    "max", num(s.max), "amean", num(s.amean), "stddev", num(s.stddev),
					    "p90", num(s.p90), "p95", num(s.p95), "p99", num(s.p99),
					    "method", json_string("mmtests: floor nearest rank, no interpolation; "
								  "sample stddev (n-1)")));
}
