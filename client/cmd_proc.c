/* `mempolicyctl proc show|watch`: where a process's memory is, now and over time (the read side
 * of /v1/processes; launching, migrating and collapsing are the other proc commands). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"

/* "/v1/processes/PID[/sub]" from the PID argument (checked like an id: the daemon gets the
 * number re-printed). EXIT_OK or EXIT_USAGE. */
static int proc_path(const struct command *cmd, const struct args *a, const char *sub, struct query *q)
{
	uint64_t pid;
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "the PID is required");
	if ((rc = cli_id(cmd, "a PID", a->pos[0], &pid)) != EXIT_OK)
		return rc;
	query_init(q, "/v1/processes");
	query_segment_u64(q, pid);
	if (sub)
		query_segment(q, sub);
	return EXIT_OK;
}

static long long ival(const json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* A start time (clock ticks after boot, what --start-time takes) as "at 2026-12-01T10:00:00.000Z
 * (start time 88102)". The boot time is this host's (/proc/stat btime), so only on the socket,
 * where the daemon is this host's; over --url the ticks alone, said to be the daemon host's. */
static void started(const struct cli *c, long long ticks, char *buf, size_t len)
{
	FILE *f = c->url ? NULL : fopen("/proc/stat", "re");   /* owned */
	char line[256], wall[40];
	long long btime = -1, hz = sysconf(_SC_CLK_TCK);

	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	if (f)
		fclose(f);
	if (btime <= 0 || hz <= 0 || ticks < 0) {
		snprintf(buf, len, "%lld clock ticks after %s boot", ticks, c->url ? "the daemon host's" : "boot");
		return;
	}
	out_time_ns(btime * 1000000000LL + ticks * (1000000000LL / hz), wall, sizeof wall);
	snprintf(buf, len, "at %s (start time %lld)", wall, ticks);
}

static void share(const json_t *v, char *buf, size_t len)
{
	if (json_is_number(v))
		snprintf(buf, len, "%.1f%%", json_number_value(v) * 100.0);
	else
		snprintf(buf, len, "-");
}

/* The per-node table: base, THP, one column per hugetlb size seen, total. */
static void nodes_table(const json_t *p)
{
	const json_t *nodes = json_object_get(p, "nodes"), *n;
	const char *hdr[4 + 8 + 1], *sizes[8];
	int ns = 0;
	size_t i;
	struct table *t;

	/* The hugetlb sizes of any node, in the order first seen. */
	json_array_foreach(nodes, i, n) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)json_object_get(n, "hugetlb"), k, v) {
			int j;
			for (j = 0; j < ns && strcmp(sizes[j], k); j++)
				;
			if (j == ns && ns < 8)
				sizes[ns++] = k;
		}
	}
	hdr[0] = "NODE";
	hdr[1] = "BASE";
	hdr[2] = "THP";
	for (int j = 0; j < ns; j++)
		hdr[3 + j] = sizes[j];
	hdr[3 + ns] = "TOTAL";
	t = table_new(4 + ns, hdr);
	json_array_foreach(nodes, i, n) {
		char cell[4 + 8][32];
		const char *row[4 + 8];
		snprintf(cell[0], sizeof cell[0], "%lld", ival(n, "node"));
		out_bytes((unsigned long long)ival(n, "base_bytes"), cell[1], sizeof cell[1]);
		out_bytes((unsigned long long)ival(n, "thp_bytes"), cell[2], sizeof cell[2]);
		for (int j = 0; j < ns; j++) {
			const json_t *h = json_object_get(json_object_get(n, "hugetlb"), sizes[j]);
			snprintf(cell[3 + j], sizeof cell[3 + j], "%lld", h ? ival(h, "pages") : 0);
		}
		out_bytes((unsigned long long)ival(n, "total_bytes"), cell[3 + ns], sizeof cell[3 + ns]);
		for (int j = 0; j < 4 + ns; j++)
			row[j] = cell[j];
		table_rowv(t, row);
	}
	table_print(t, stdout);
}

static void policies_table(const json_t *p)
{
	static const char *const hdr[] = { "POLICY", "MAPPINGS", "RESIDENT", "ON ITS NODES" };
	struct table *t = table_new(4, hdr);
	const json_t *pol;
	size_t i;

	json_array_foreach(json_object_get(p, "policies"), i, pol) {
		char n[32], b[32], l[32];
		snprintf(n, sizeof n, "%lld", ival(pol, "mappings"));
		out_bytes((unsigned long long)ival(pol, "bytes"), b, sizeof b);
		share(json_object_get(pol, "locality"), l, sizeof l);
		table_row(t, json_string_value(json_object_get(pol, "policy")), n, b, l);
	}
	table_print(t, stdout);
}

static void mappings_table(const json_t *p)
{
	static const char *const hdr[] = { "START", "END", "KIND", "POLICY", "PAGE", "PAGES", "NODES", "THP", "PATH" };
	struct table *t = table_new(9, hdr);
	const json_t *m;
	size_t i;

	json_array_foreach(json_object_get(p, "mappings"), i, m) {
		char pg[32], pages[32], nodes[256] = "", thp[32];
		const char *k;
		json_t *v;
		size_t off = 0;
		if (ival(m, "page_size_kb"))
			snprintf(pg, sizeof pg, "%lldkB", ival(m, "page_size_kb"));
		else
			snprintf(pg, sizeof pg, "-");
		snprintf(pages, sizeof pages, "%lld", ival(m, "pages"));
		json_object_foreach((json_t *)json_object_get(m, "nodes"), k, v) {
			int w = snprintf(nodes + off, sizeof nodes - off, "%sN%s=%lld", off ? " " : "", k,
					 (long long)json_integer_value(v));
			if (w < 0 || (size_t)w >= sizeof nodes - off)
				break;
			off += (size_t)w;
		}
		out_bytes((unsigned long long)ival(m, "thp_bytes"), thp, sizeof thp);
		table_row(t, json_string_value(json_object_get(m, "start")), json_string_value(json_object_get(m, "end")),
			  json_string_value(json_object_get(m, "kind")), json_string_value(json_object_get(m, "policy")), pg,
			  pages, off ? nodes : "-", thp, json_string_value(json_object_get(m, "path")));
	}
	table_print(t, stdout);
}

int cmd_proc_show(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	const json_t *tot, *loc;
	char resident[32], thp[32], pol[32], l[32], when[96];
	int rc;

	if ((rc = proc_path(cmd, a, NULL, &q)) != EXIT_OK)
		return rc;
	query_arg(&q, "mappings", a->mappings ? "true" : "false");
	if (a->start_time.set)
		query_arg_u64(&q, "start_time", a->start_time.v);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	tot = json_object_get(r.body, "totals");
	loc = json_object_get(r.body, "locality");
	out_bytes((unsigned long long)ival(tot, "resident_bytes"), resident, sizeof resident);
	out_bytes((unsigned long long)ival(tot, "thp_unattributed_bytes"), thp, sizeof thp);
	out_bytes((unsigned long long)ival(loc, "policy_bytes"), pol, sizeof pol);
	share(json_object_get(loc, "share"), l, sizeof l);
	started(c, ival(r.body, "start_time"), when, sizeof when);
	out_line(stdout, "process %lld (%s), started %s, uid %lld", ival(r.body, "pid"),
		 json_string_value(json_object_get(r.body, "name")), when, ival(r.body, "uid"));
	out_line(stdout, "resident %s in %lld of %lld mappings; mems allowed %s", resident,
		 ival(tot, "resident_mappings"), ival(tot, "mappings"),
		 json_is_string(json_object_get(r.body, "mems_allowed"))
			 ? json_string_value(json_object_get(r.body, "mems_allowed")) : "-");
	if (json_is_number(json_object_get(loc, "share")) && ival(loc, "policy_bytes") > 0)
		out_line(stdout, "locality %s of the %s under policies that name nodes", l, pol);
	else
		out_line(stdout, "locality: no memory under a policy that names nodes");
	if (ival(tot, "thp_unattributed_bytes"))
		out_line(stdout, "THP of mappings spread over several nodes (counted in BASE): %s", thp);
	fputc('\n', stdout);
	nodes_table(r.body);
	fputc('\n', stdout);
	policies_table(r.body);
	if (a->mappings) {
		fputc('\n', stdout);
		mappings_table(r.body);
	}
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_proc_watch(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	const json_t *samples, *s, *n;
	long long ids[64];
	int nids = 0;
	size_t i, j;
	int rc;

	if ((rc = proc_path(cmd, a, "samples", &q)) != EXIT_OK)
		return rc;
	if (a->start_time.set)
		query_arg_u64(&q, "start_time", a->start_time.v);
	query_arg_u64(&q, "limit", a->limit.set ? a->limit.v : 100);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	samples = json_object_get(r.body, "samples");
	/* One column per node that held pages in any sample, ascending. */
	json_array_foreach(samples, i, s) {
		json_array_foreach(json_object_get(json_object_get(s, "result"), "nodes"), j, n) {
			long long id = ival(n, "node");
			int k, m;
			for (k = 0; k < nids && ids[k] < id; k++)
				;
			if ((k < nids && ids[k] == id) || nids == 64)
				continue;
			for (m = nids; m > k; m--)
				ids[m] = ids[m - 1];
			ids[k] = id;
			nids++;
		}
	}
	{
		const char *hdr[3 + 64 + 1];
		char names[64][16];
		struct table *t;
		hdr[0] = "TIME";
		for (int k = 0; k < nids; k++) {
			snprintf(names[k], sizeof names[k], "NODE %lld", ids[k]);
			hdr[1 + k] = names[k];
		}
		hdr[1 + nids] = "THP";
		hdr[2 + nids] = "LOCALITY";
		t = table_new(3 + nids, hdr);
		json_array_foreach(samples, i, s) {
			const json_t *res = json_object_get(s, "result");
			char cell[3 + 64][40];
			const char *row[3 + 64];
			out_time_ns(ival(s, "time_ns"), cell[0], sizeof cell[0]);
			for (int k = 0; k < nids; k++) {
				unsigned long long b = 0;
				json_array_foreach(json_object_get(res, "nodes"), j, n)
					if (ival(n, "node") == ids[k])
						b = (unsigned long long)ival(n, "total_bytes");
				out_bytes(b, cell[1 + k], sizeof cell[1 + k]);
			}
			if (json_object_get(res, "totals")) {
				out_bytes((unsigned long long)ival(json_object_get(res, "totals"), "thp_bytes"), cell[1 + nids],
					  sizeof cell[1 + nids]);
				share(json_object_get(json_object_get(res, "locality"), "share"), cell[2 + nids],
				      sizeof cell[2 + nids]);
			} else {
				/* A launch watch's last sample: the process had exited. */
				snprintf(cell[1 + nids], sizeof cell[1 + nids], "-");
				snprintf(cell[2 + nids], sizeof cell[2 + nids], "exited");
			}
			for (int k = 0; k < 3 + nids; k++)
				row[k] = cell[k];
			table_rowv(t, row);
		}
		char when[96];
		started(c, ival(r.body, "start_time"), when, sizeof when);
		out_line(stdout, "process %lld started %s: %zu samples", ival(r.body, "pid"), when, json_array_size(samples));
		table_print(t, stdout);
	}
	http_result_free(&r);
	return EXIT_OK;
}
