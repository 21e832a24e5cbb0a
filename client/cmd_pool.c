/* `mempolicyctl pool list|resize|avail` and `job list|show|cancel` share the job display:
 * a resize is a job, and `pool resize` waits on it the way `job show` prints it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/jobview.h"
#include "client/out.h"
#include "client/query.h"
#include "common/parse.h"

#define MAX_NODE_COLS 64

/* One cell per node: "nr/free". */
static void pool_row(struct table *t, const json_t *p, const unsigned *ids, int nids)
{
	const char *cells[6 + MAX_NODE_COLS];
	char buf[6 + MAX_NODE_COLS][48];
	static const char *const keys[] = { "size", "nr", "free", "resv", "surplus", "overcommit" };
	const json_t *nodes = json_object_get(p, "nodes"), *n;
	size_t i;

	for (i = 0; i < 6; i++) {
		out_scalar(json_object_get(p, keys[i]), buf[i], sizeof buf[i]);
		cells[i] = buf[i];
	}
	for (int k = 0; k < nids; k++) {
		snprintf(buf[6 + k], sizeof buf[6 + k], "-");
		json_array_foreach(nodes, i, n)
			if (json_integer_value(json_object_get(n, "node")) == ids[k])
				snprintf(buf[6 + k], sizeof buf[6 + k], "%lld/%lld",
					 (long long)json_integer_value(json_object_get(n, "nr")),
					 (long long)json_integer_value(json_object_get(n, "free")));
		cells[6 + k] = buf[6 + k];
	}
	table_rowv(t, cells);
}

int cmd_pool_list(struct cli *c, const struct command *cmd, struct args *a)
{
	const char *hdr[6 + MAX_NODE_COLS] = { "SIZE", "TOTAL", "FREE", "RESV", "SURPLUS", "OVERCOMMIT" };
	char names[MAX_NODE_COLS][24];
	unsigned ids[MAX_NODE_COLS];
	int nids = 0, rc;
	struct http_result r;
	const json_t *pools, *p, *n;
	struct table *t;
	size_t i, j;

	(void)cmd;
	(void)a;
	if ((rc = http_show(c, "GET", "/v1/hugepages", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	pools = json_object_get(r.body, "pools");
	/* The union of nodes over every size, ascending (sizes may differ: gigantic pages). */
	json_array_foreach(pools, i, p)
		json_array_foreach(json_object_get(p, "nodes"), j, n) {
			unsigned id = (unsigned)json_integer_value(json_object_get(n, "node"));
			int k;
			for (k = 0; k < nids && ids[k] != id; k++)
				;
			if (k == nids && nids < MAX_NODE_COLS)
				ids[nids++] = id;
		}
	for (int x0 = 1; x0 < nids; x0++)
		for (int b = x0; b > 0 && ids[b - 1] > ids[b]; b--) {
			unsigned x = ids[b];
			ids[b] = ids[b - 1];
			ids[b - 1] = x;
		}
	for (int k = 0; k < nids; k++) {
		snprintf(names[k], sizeof names[k], "NODE%u", ids[k]);
		hdr[6 + k] = names[k];
	}
	t = table_new(6 + nids, hdr);
	json_array_foreach(pools, i, p)
		pool_row(t, p, ids, nids);
	table_print(t, stdout);
	if (nids)
		printf("(node cells: pages in the pool / free)\n");
	http_result_free(&r);
	return EXIT_OK;
}

int parse_deadline_ms(const char *s, int64_t *ms)
{
	char num[32];
	size_t n;
	uint64_t v, mult = 1;

	while (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
		s++;
	n = strspn(s, "0123456789");
	if (n == 0 || n >= sizeof num)
		return -1;
	if (!strcmp(s + n, "s"))
		mult = 1000;
	else if (!strcmp(s + n, "m"))
		mult = 60000;
	else if (strcmp(s + n, "ms") && s[n])
		return -1;
	snprintf(num, sizeof num, "%.*s", (int)n, s);
	if (parse_u64(num, &v) < 0 || v == 0 || v > (uint64_t)INT64_MAX / mult)
		return -1;
	*ms = (int64_t)(v * mult);
	return 0;
}

int cmd_pool_resize(struct cli *c, const struct command *cmd, struct args *a)
{
	json_t *body = json_object();   /* owned */
	struct query q;
	const char *path;
	struct http_result r;
	int64_t ms;
	int rc = EXIT_USAGE;

	if (a->npos != 1) {
		cli_usage_error(cmd, "the page size (e.g. 2M) is required");
		goto out;
	}
	if (!a->total.set == !json_object_size(a->nodes)) {
		cli_usage_error(cmd, "give either --total N or one or more --node N=COUNT");
		goto out;
	}
	if (a->total.set)
		json_object_set_new(body, "total", json_integer((json_int_t)a->total.v));
	else
		json_object_set(body, "nodes", a->nodes);
	if (a->batch.set)
		json_object_set_new(body, "batch", json_integer((json_int_t)a->batch.v));
	if (a->deadline) {
		if (parse_deadline_ms(a->deadline, &ms) < 0) {
			cli_usage_error(cmd, "--deadline wants a duration like 500ms, 30s or 2m, not '%s'", a->deadline);
			goto out;
		}
		json_object_set_new(body, "deadline_ms", json_integer(ms));
	}
	if (a->compact)
		json_object_set_new(body, "compact", json_true());
	if (a->dry_run)
		json_object_set_new(body, "dry_run", json_true());
	query_init(&q, "/v1/hugepages");
	query_segment(&q, a->pos[0]);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		goto out;
	if ((rc = http_expect(c, "PUT", path, body, &r)) != EXIT_OK)
		goto out;
	/* 200 "unchanged": the pool already has these sizes; no job was made, nothing recorded. */
	if (!a->dry_run && json_is_false(json_object_get(r.body, "changed"))) {
		if (c->json) {
			out_json(r.body);
		} else {
			jobview_targets(json_object_get(r.body, "targets"), false);
			printf("unchanged: the pool already has these sizes; no job, nothing recorded\n");
		}
		http_result_free(&r);
		rc = EXIT_OK;
		goto out;
	}
	if (a->dry_run || a->no_wait) {
		if (c->json)
			out_json(r.body);
		else if (a->dry_run)
			jobview_targets(json_object_get(r.body, "targets"), false);
		else
			printf("job %lld queued: mempolicyctl job show %lld\n",
			       (long long)json_integer_value(json_object_get(r.body, "id")),
			       (long long)json_integer_value(json_object_get(r.body, "id")));
		http_result_free(&r);
		rc = EXIT_OK;
		goto out;
	}
	rc = jobview_wait(c, (long long)json_integer_value(json_object_get(r.body, "id")));
	http_result_free(&r);
out:
	json_decref(body);
	return rc;
}

int cmd_pool_avail(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const keys[] = { "size", "node", "count", "pool_nr", "free", "from_free", "grow_needed",
					    "growable_estimate", "verdict" };
	struct query q;
	const char *path;
	char cell[64];
	struct http_result r;
	struct table *t;
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "the page size (e.g. 2M) is required");
	if (!a->count.set)
		return cli_usage_error(cmd, "--count K (a positive number of pages) is required");
	query_init(&q, "/v1/hugepages");
	query_segment(&q, a->pos[0]);
	query_segment(&q, "availability");
	query_arg_u64(&q, "count", a->count.v);
	if (a->node_id.set)
		query_arg_u64(&q, "node", a->node_id.v);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(2, NULL);
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		out_scalar(json_object_get(r.body, keys[k]), cell, sizeof cell);
		table_row(t, keys[k], cell);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}
