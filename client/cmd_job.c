/* `mempolicyctl job list|show|cancel`: long operations (pool resizes) and their outcome. */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/jobview.h"
#include "client/out.h"
#include "common/parse.h"

static int job_path(const struct command *cmd, const char *arg, char *path, size_t len, uint64_t *id)
{
	if (parse_u64(arg, id) < 0 || *id == 0 || *id > (uint64_t)INT64_MAX)
		return cli_usage_error(cmd, "a job ID is a positive integer, not '%s'", arg);
	snprintf(path, len, "/v1/jobs/%llu", (unsigned long long)*id);
	return EXIT_OK;
}

int cmd_job_list(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	static const char *const hdr[] = { "ID", "KIND", "STATUS", "REASON", "SOURCE", "CREATED", "PAGES" };
	const char *kind = NULL, *status = NULL, *limit = NULL;
	const struct opt opts[] = { { "--kind", &kind, NULL }, { "--status", &status, NULL },
				    { "--limit", &limit, NULL }, { NULL, NULL, NULL } };
	char path[512], e1[128], e2[128];
	struct http_result r;
	const json_t *j;
	struct table *t;
	uint64_t n;
	size_t i;
	int rc, off;

	if (cli_args(c, cmd, argc, argv, opts, NULL, 0) < 0)
		return EXIT_USAGE;
	if (limit && (parse_u64(limit, &n) < 0 || n == 0))
		return cli_usage_error(cmd, "--limit wants a positive integer, not '%s'", limit);
	off = snprintf(path, sizeof path, "/v1/jobs?limit=%s", limit ? limit : "50");
	if (kind) {
		http_escape(kind, e1, sizeof e1);
		off += snprintf(path + off, sizeof path - (size_t)off, "&kind=%s", e1);
	}
	if (status) {
		http_escape(status, e2, sizeof e2);
		snprintf(path + off, sizeof path - (size_t)off, "&status=%s", e2);
	}
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(7, hdr);
	json_array_foreach(json_object_get(r.body, "jobs"), i, j) {
		char a[7][64];
		const json_t *p = json_object_get(j, "progress");
		out_scalar(json_object_get(j, "id"), a[0], sizeof a[0]);
		out_scalar(json_object_get(j, "kind"), a[1], sizeof a[1]);
		out_scalar(json_object_get(j, "status"), a[2], sizeof a[2]);
		out_scalar(json_object_get(j, "reason"), a[3], sizeof a[3]);
		out_scalar(json_object_get(j, "source"), a[4], sizeof a[4]);
		out_time_ns((long long)json_integer_value(json_object_get(j, "created_ns")), a[5], sizeof a[5]);
		if (json_is_integer(json_object_get(p, "pages_total")))
			snprintf(a[6], sizeof a[6], "%lld/%lld", (long long)json_integer_value(json_object_get(p, "pages_done")),
				 (long long)json_integer_value(json_object_get(p, "pages_total")));
		else
			snprintf(a[6], sizeof a[6], "-");
		table_row(t, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_job_show(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	bool wait = false;
	const struct opt opts[] = { { "--wait", NULL, &wait }, { NULL, NULL, NULL } };
	char *pos[1], path[64];
	struct http_result r;
	uint64_t id;
	int rc;

	if (cli_args(c, cmd, argc, argv, opts, pos, 1) != 1)
		return cli_usage_error(cmd, "the job ID is required");
	if ((rc = job_path(cmd, pos[0], path, sizeof path, &id)) != EXIT_OK)
		return rc;
	if (wait)
		return jobview_wait(c, (long long)id);
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	jobview_print(r.body);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_job_cancel(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	char *pos[1], path[64];
	struct http_result r;
	uint64_t id;
	int rc;

	if (cli_args(c, cmd, argc, argv, NULL, pos, 1) != 1)
		return cli_usage_error(cmd, "the job ID is required");
	if ((rc = job_path(cmd, pos[0], path, sizeof path, &id)) != EXIT_OK)
		return rc;
	if ((rc = http_expect(c, "DELETE", path, NULL, &r)) != EXIT_OK)
		return rc;
	if (c->json)
		out_json(r.body);
	else
		printf("job %s: cancel requested (status now %s; a running job stops before its next batch)\n", pos[0],
		       json_string_value(json_object_get(r.body, "status")));
	http_result_free(&r);
	return EXIT_OK;
}
