/* The kernel's state for GET /metrics (see gauges.h). */
#include "server/ops/gauges.h"

#include <stdlib.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"

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

void gauges_write(const struct app *app, FILE *f, bool om)
{
	info_head(f, om, "mempolicyd_build", "The daemon's version and the kernel it runs on.");
	fprintf(f, "mempolicyd_build_info{kernel_release=\"");
	label(f, app->caps.kernel_release);
	fprintf(f, "\",version=\"%s\"} 1\n", MPD_VERSION);
	pools(f, app);
	knobs(f, om, app);
}
