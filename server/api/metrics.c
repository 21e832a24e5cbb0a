/* GET /metrics: the Prometheus text format 0.0.4, or OpenMetrics 1.0 when the scraper's Accept
 * asks for application/openmetrics-text. What node_exporter already exports (meminfo, vmstat) is
 * not repeated; what it lacks is here, with its label shape: node="0" joins with node_exporter's
 * node_memory_numa_* series. The work is bounded: the daemon's counters are in memory
 * (server/metrics.h) and the kernel's state is a few sysfs files per pool and knob. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/api/api.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/metrics.h"
#include "server/priv/act.h"
#include "server/priv/proto.h"
#include "server/store/metrics_seed.h"

#define CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define CT_OM   "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* A label value as the format wants it: backslash, double quote and newline escaped. Knob values
 * are the kernel's text, which is not ours to trust. */
static void label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*v, f);
	}
}

/* An info family: OpenMetrics has the type, the 0.0.4 format calls it a gauge. */
static void info_head(FILE *f, bool om, const char *name, const char *help)
{
	fprintf(f, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, om ? "" : "_info", help, name, om ? "" : "_info",
		om ? "info" : "gauge");
}

static void pools(FILE *f, const struct app *app)
{
	static const struct { const char *name, *help; } fam[3] = {
		{ "mempolicyd_hugepages_nr_pages", "HugeTLB pages in the node's pool (nr_hugepages), by page size." },
		{ "mempolicyd_hugepages_free_pages", "HugeTLB pages of the node's pool not in use, by page size." },
		{ "mempolicyd_hugepages_surplus_pages", "HugeTLB surplus (overcommitted) pages on the node, by page size." },
	};
	struct htlb_pool *p = calloc((size_t)(app->caps.n_hugetlb_sizes ? app->caps.n_hugetlb_sizes : 1), sizeof *p);
	bool *ok = calloc((size_t)(app->caps.n_hugetlb_sizes ? app->caps.n_hugetlb_sizes : 1), sizeof *ok);
	char size[32];

	for (int i = 0; p && ok && i < app->caps.n_hugetlb_sizes; i++)
		ok[i] = htlb_read_pool(app->sysfs_root, app->caps.hugetlb_sizes_kb[i], &p[i]) == 0;
	for (int k = 0; k < 3; k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", fam[k].name, fam[k].help, fam[k].name);
		for (int i = 0; p && ok && i < app->caps.n_hugetlb_sizes; i++) {
			if (!ok[i])
				continue;
			format_size_kb(p[i].size_kb, size, sizeof size);
			for (int n = 0; n < p[i].n_nodes; n++) {
				const struct htlb_node *nd = &p[i].nodes[n];
				fprintf(f, "%s{node=\"%u\",size=\"%s\"} %llu\n", fam[k].name, nd->id, size,
					(unsigned long long)(k == 0 ? nd->nr : k == 1 ? nd->free : nd->surplus));
			}
		}
	}
	free(p);
	free(ok);
}

static void knobs(FILE *f, bool om, const struct app *app)
{
	struct knob_state ks;

	info_head(f, om, "mempolicyd_knob", "A kernel memory setting and its current value (the knob names of GET /v1/knobs).");
	for (size_t i = 0; i < knobs_count(app->knobs); i++) {
		const struct knob *k = knobs_at(app->knobs, i);
		if (knob_read(app->knobs, k, &ks) < 0 || !ks.available)
			continue;
		fprintf(f, "mempolicyd_knob_info{knob=\"");
		label(f, k->name);
		fprintf(f, "\",value=\"");
		label(f, ks.value);
		fprintf(f, "\"} 1\n");
	}
}

/* The helper's state, and what it was asked for by type: a request the serving side sent, counted
 * before it is sent (what a caller could make the privileged side do, e.g. open procfs files). */
static void helper(FILE *f, bool om)
{
	const char *state = act_helper_state(), *name;

	fprintf(f, "# HELP mempolicyd_degraded 1 once the privileged helper is lost: changes are refused (503 "
		   "priv.lost) and the daemon exits after answering what is in flight.\n"
		   "# TYPE mempolicyd_degraded gauge\nmempolicyd_degraded %d\n", act_helper_lost());
	fprintf(f, "# HELP mempolicyd_privileged_helper_up 1 while the privileged helper answers, 0 once it is lost "
		   "(absent without privilege separation).\n# TYPE mempolicyd_privileged_helper_up gauge\n");
	if (strcmp(state, "none"))
		fprintf(f, "mempolicyd_privileged_helper_up %d\n", !strcmp(state, "running"));
	fprintf(f, "# HELP mempolicyd_privileged_requests%s Requests the serving side sent the privileged helper, by "
		   "type.\n# TYPE mempolicyd_privileged_requests%s counter\n", om ? "" : "_total", om ? "" : "_total");
	if (!strcmp(state, "none"))
		return;
	for (unsigned t = 1; t < PRIV_TYPE_END; t++) {
		uint64_t n = act_helper_requests(t, &name);
		fprintf(f, "mempolicyd_privileged_requests_total{type=\"%s\"} %llu\n", name, (unsigned long long)n);
	}
}

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
	info_head(f, om, "mempolicyd_build", "The daemon's version and the kernel it runs on.");
	fprintf(f, "mempolicyd_build_info{kernel_release=\"");
	label(f, rq->app->caps.kernel_release);
	fprintf(f, "\",version=\"%s\"} 1\n", MPD_VERSION);
	pools(f, rq->app);
	knobs(f, om, rq->app);
	bytes = store_file_bytes(rq->app->store);
	fprintf(f, "# HELP mempolicyd_store_size_bytes The database's size on disk, its write-ahead log included.\n"
		   "# TYPE mempolicyd_store_size_bytes gauge\nmempolicyd_store_size_bytes %lld\n",
		(long long)(bytes < 0 ? 0 : bytes));
	helper(f, om);
	metrics_write_counters(f, om);
	if (om)
		fputs("# EOF\n", f);
	if (fclose(f) != 0 || !text) {
		free(text);
		return mp_nomem(e);
	}
	return req_reply_text(rq, text, len, om ? CT_OM : CT_TEXT);
}
