/* The kernel's state for GET /metrics (see gauges.h). */
#include "server/ops/gauges.h"

#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/jobs/jobs.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/priv/act.h"
#include "server/priv/proto.h"

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
	/* resv_hugepages exists only for the whole pool (the kernel keeps no reservation per node). */
	fputs("# HELP mempolicyd_hugepages_resv_pages HugeTLB pages reserved by mappings but not yet faulted in "
	      "(resv_hugepages), by page size; of the whole pool, the kernel counts no node's.\n"
	      "# TYPE mempolicyd_hugepages_resv_pages gauge\n", f);
	for (int i = 0; p && ok && i < app->caps.n_hugetlb_sizes; i++)
		if (ok[i]) {
			format_size_kb(p[i].size_kb, size, sizeof size);
			fprintf(f, "mempolicyd_hugepages_resv_pages{size=\"%s\"} %llu\n", size, (unsigned long long)p[i].resv);
		}
	/* PromQL cannot read a number out of the label "2M": this is what turns pages into bytes,
	 * mempolicyd_hugepages_nr_pages * on(size) group_left mempolicyd_hugepages_page_size_bytes. */
	fputs("# HELP mempolicyd_hugepages_page_size_bytes The page size of each size label, in bytes.\n"
	      "# TYPE mempolicyd_hugepages_page_size_bytes gauge\n", f);
	for (int i = 0; i < app->caps.n_hugetlb_sizes; i++) {
		format_size_kb(app->caps.hugetlb_sizes_kb[i], size, sizeof size);
		fprintf(f, "mempolicyd_hugepages_page_size_bytes{size=\"%s\"} %llu\n", size,
			(unsigned long long)app->caps.hugetlb_sizes_kb[i] * 1024);
	}
	free(p);
	free(ok);
}

/* Jobs queued and running now, by kind: the counters say what ended, this what is still to. */
static void jobs_now(FILE *f, const struct app *app)
{
	struct jobs_count c[64];
	int n = app->jobs ? jobs_count_active(app->jobs, c, 64) : 0;

	fputs("# HELP mempolicyd_jobs_active Jobs queued or running now, by kind.\n"
	      "# TYPE mempolicyd_jobs_active gauge\n", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "mempolicyd_jobs_active{kind=\"%s\",status=\"queued\"} %u\n"
			   "mempolicyd_jobs_active{kind=\"%s\",status=\"running\"} %u\n",
			c[i].kind, c[i].queued, c[i].kind, c[i].running);
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

void gauges_write(const struct app *app, FILE *f, bool om)
{
	info_head(f, om, "mempolicyd_build", "The daemon's version and the kernel it runs on.");
	fprintf(f, "mempolicyd_build_info{kernel_release=\"");
	label(f, app->caps.kernel_release);
	fprintf(f, "\",version=\"%s\"} 1\n", MPD_VERSION);
	/* The name the Prometheus client libraries give it, so dashboards' uptime panels just work. */
	fprintf(f, "# HELP process_start_time_seconds Start time of the process since the Unix epoch in seconds.\n"
		   "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %lld.%09lld\n",
		(long long)(app->started_ns / 1000000000), (long long)(app->started_ns % 1000000000));
	pools(f, app);
	jobs_now(f, app);
	knobs(f, om, app);
}

/* The helper's state, and what it was asked for by type: a request the serving side sent, counted
 * before it is sent (what a caller could make the privileged side do, e.g. open procfs files). */
void gauges_write_helper(FILE *f, bool om)
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
