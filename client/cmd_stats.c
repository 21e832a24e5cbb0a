/* `mempolicyctl history stats`: per-page resize latency in the layout of an mmtests compare table
 * (seed 003: "Min Latency 26.42", "1st-qrtle Latency ...", in milliseconds). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"
#include "common/parse.h"

int cmd_history_stats(struct cli *c, const struct command *cmd, struct args *a)
{
	static const struct { const char *label, *key; } rows[] = {
		{ "Min", "min" }, { "1st-qrtle", "q1" }, { "2nd-qrtle", "q2" }, { "3rd-qrtle", "q3" },
		{ "Max-90", "p90" }, { "Max-95", "p95" }, { "Max-99", "p99" }, { "Max", "max" },
		{ "Amean", "amean" }, { "Stddev", "stddev" },
	};
	struct query q;
	const char *path;
	char title[256], val[64];
	const json_t *f;
	struct http_result r;
	struct table *t;
	int rc;

	query_init(&q, "/v1/history/stats");
	query_arg(&q, "kind", a->kind);
	query_arg(&q, "size", a->size);
	query_arg(&q, "node", a->node);
	query_arg(&q, "since", a->since);
	query_arg(&q, "until", a->until);
	query_arg(&q, "direction", a->direction);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	f = json_object_get(r.body, "filter");
	{
		char sz[32] = "all sizes", nd[32] = "all nodes";
		if (json_is_integer(json_object_get(f, "size_kb")))
			format_size_kb((uint64_t)json_integer_value(json_object_get(f, "size_kb")), sz, sizeof sz);
		if (json_is_integer(json_object_get(f, "node")))
			snprintf(nd, sizeof nd, "node %lld", (long long)json_integer_value(json_object_get(f, "node")));
		snprintf(title, sizeof title, "%s %s, %s, %s: %lld batches, per-page latency in ms",
			 json_string_value(json_object_get(f, "kind")), json_string_value(json_object_get(f, "direction")),
			 sz, nd, (long long)json_integer_value(json_object_get(r.body, "count")));
	}
	out_line(stdout, "%s", title);
	t = table_new(3, NULL);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const json_t *v = json_object_get(r.body, rows[i].key);
		if (json_is_number(v))
			snprintf(val, sizeof val, "%12.4f", json_number_value(v) / 1e6);
		else
			snprintf(val, sizeof val, "%12s", "-");
		table_row(t, rows[i].label, "Latency", val);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}
