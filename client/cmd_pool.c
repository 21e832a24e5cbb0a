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

int cmd_pool_list(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	const char *hdr[6 + MAX_NODE_COLS] = { "SIZE", "TOTAL", "FREE", "RESV", "SURPLUS", "OVERCOMMIT" };
	char names[MAX_NODE_COLS][24];
	unsigned ids[MAX_NODE_COLS];
	int nids = 0, rc;
	struct http_result r;
	const json_t *pools, *p, *n;
	struct table *t;
	size_t i, j;

	if (cli_args(c, cmd, argc, argv, NULL, NULL, 0) < 0)
		return EXIT_USAGE;
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
	for (int a = 1; a < nids; a++)
		for (int b = a; b > 0 && ids[b - 1] > ids[b]; b--) {
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

/* "500ms", "30s", "2m", or plain milliseconds. */
static int parse_deadline_ms(const char *s, int64_t *ms)
{
	char num[32];
	size_t n = strspn(s, "0123456789");
	uint64_t v, mult = 1;

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

int cmd_pool_resize(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	const char *total = NULL, *batch = NULL, *deadline = NULL;
	bool no_wait = false, compact = false, dry_run = false;
	const struct opt opts[] = {
		{ "--total", &total, NULL }, { "--batch", &batch, NULL }, { "--deadline", &deadline, NULL },
		{ "--no-wait", NULL, &no_wait }, { "--compact", NULL, &compact }, { "--dry-run", NULL, &dry_run },
		{ NULL, NULL, NULL },
	};
	json_t *nodes = json_object(), *body = json_object();
	char *pos[1], path[128], esc[64];
	struct http_result r;
	uint64_t v;
	int64_t ms;
	int rc = EXIT_USAGE;

	if (cli_take_node_counts(cmd, &argc, argv, nodes) != EXIT_OK)
		goto out;
	if (cli_args(c, cmd, argc, argv, opts, pos, 1) != 1) {
		cli_usage_error(cmd, "the page size (e.g. 2M) is required");
		goto out;
	}
	if (!total == !json_object_size(nodes)) {
		cli_usage_error(cmd, "give either --total N or one or more --node N=COUNT");
		goto out;
	}
	if (total) {
		if (parse_u64(total, &v) < 0 || v > (uint64_t)INT64_MAX) {
			cli_usage_error(cmd, "--total wants a non-negative integer, not '%s'", total);
			goto out;
		}
		json_object_set_new(body, "total", json_integer((json_int_t)v));
	} else {
		json_object_set(body, "nodes", nodes);
	}
	if (batch) {
		if (parse_u64(batch, &v) < 0 || v == 0 || v > (uint64_t)INT64_MAX) {
			cli_usage_error(cmd, "--batch wants a positive integer, not '%s'", batch);
			goto out;
		}
		json_object_set_new(body, "batch", json_integer((json_int_t)v));
	}
	if (deadline) {
		if (parse_deadline_ms(deadline, &ms) < 0) {
			cli_usage_error(cmd, "--deadline wants a duration like 500ms, 30s or 2m, not '%s'", deadline);
			goto out;
		}
		json_object_set_new(body, "deadline_ms", json_integer(ms));
	}
	if (compact)
		json_object_set_new(body, "compact", json_true());
	if (dry_run)
		json_object_set_new(body, "dry_run", json_true());
	http_escape(pos[0], esc, sizeof esc);
	snprintf(path, sizeof path, "/v1/hugepages/%s", esc);
	if ((rc = http_expect(c, "PUT", path, body, &r)) != EXIT_OK)
		goto out;
	if (dry_run || no_wait) {
		if (c->json)
			out_json(r.body);
		else if (dry_run)
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
	json_decref(nodes);
	json_decref(body);
	return rc;
}

int cmd_pool_avail(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	const char *node = NULL, *count = NULL;
	const struct opt opts[] = { { "--node", &node, NULL }, { "--count", &count, NULL }, { NULL, NULL, NULL } };
	static const char *const keys[] = { "size", "node", "count", "pool_nr", "free", "from_free", "grow_needed",
					    "growable_estimate", "verdict" };
	char *pos[1], path[256], esc[64], a[64];
	struct http_result r;
	struct table *t;
	uint64_t v;
	int rc, off;

	if (cli_args(c, cmd, argc, argv, opts, pos, 1) != 1)
		return cli_usage_error(cmd, "the page size (e.g. 2M) is required");
	if (!count || parse_u64(count, &v) < 0 || v == 0)
		return cli_usage_error(cmd, "--count K (a positive number of pages) is required");
	if (node && parse_u64(node, &v) < 0)
		return cli_usage_error(cmd, "--node wants a node number, not '%s'", node);
	http_escape(pos[0], esc, sizeof esc);
	off = snprintf(path, sizeof path, "/v1/hugepages/%s/availability?count=%s", esc, count);
	if (node)
		snprintf(path + off, sizeof path - (size_t)off, "&node=%s", node);
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(2, NULL);
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		out_scalar(json_object_get(r.body, keys[k]), a, sizeof a);
		table_row(t, keys[k], a);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}
