/* `mempolicyctl cgroup show|mems`: a cgroup's cpuset.mems (v2 or v1). */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"

/* "/v1/cgroups/a/b" from PATH "a/b" or "/a/b" (below the hierarchy's root either way): each
 * segment escaped on its own, so the daemon sees the user's segments and judges them ("..",
 * empty ones); "/" is the root. */
static int cgroup_path(const struct command *cmd, const char *path, struct query *q, const char **out)
{
	char seg[256];
	const char *s = path;

	query_init(q, "/v1/cgroups");
	if (*s == '/')
		s++;
	while (*s) {
		size_t n = strcspn(s, "/");
		if (n >= sizeof seg)
			return cli_usage_error(cmd, "a cgroup name is at most 255 bytes");
		memcpy(seg, s, n);
		seg[n] = '\0';
		query_segment(q, seg);
		s += n;
		if (*s == '/')
			s++;
		if (*s == '\0' && s[-1] == '/' && s - 1 > path)
			query_segment(q, "");   /* a trailing '/': sent, so the daemon says why it is refused */
	}
	return cli_path(cmd, q, out);
}

static void show(const json_t *cg)
{
	struct table *t = table_new(2, NULL);
	char cell[6][256];

	out_scalar(json_object_get(cg, "version"), cell[0], sizeof cell[0]);
	out_scalar(json_object_get(cg, "mems"), cell[1], sizeof cell[1]);
	out_scalar(json_object_get(cg, "mems_effective"), cell[2], sizeof cell[2]);
	out_scalar(json_object_get(cg, "memory_migrate"), cell[3], sizeof cell[3]);
	out_scalar(json_object_get(cg, "procs"), cell[4], sizeof cell[4]);
	out_scalar(json_object_get(cg, "children"), cell[5], sizeof cell[5]);
	table_row(t, "path", *json_string_value(json_object_get(cg, "path")) ? json_string_value(json_object_get(cg, "path"))
									      : "/");
	table_row(t, "cgroup", cell[0]);
	table_row(t, "mount", json_string_value(json_object_get(cg, "mount")));
	table_row(t, "mems", json_is_string(json_object_get(cg, "mems")) && !*cell[1] ? "(empty)" : cell[1]);
	table_row(t, "mems effective", cell[2]);
	table_row(t, "memory_migrate", cell[3]);
	table_row(t, "processes", cell[4]);
	table_row(t, "children", *cell[5] ? cell[5] : "-");
	table_print(t, stdout);
}

int cmd_cgroup_show(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "the cgroup PATH is required (/ for the root)");
	if ((rc = cgroup_path(cmd, a->pos[0], &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	show(r.body);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_cgroup_mems(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	json_t *body;
	int rc;

	if (a->npos != 2)
		return cli_usage_error(cmd, "the cgroup PATH and the NODES are required");
	if ((rc = cgroup_path(cmd, a->pos[0], &q, &path)) != EXIT_OK)
		return rc;
	/* The node list goes as text: the daemon's strict parser judges it. */
	if (!(body = json_pack("{s:s}", "mems", a->pos[1]))) {
		out_error("the node list is not valid UTF-8");
		return EXIT_USAGE;
	}
	rc = http_show(c, "PUT", path, body, &r);
	json_decref(body);
	if (rc != EXIT_OK || !r.body)
		return rc;
	{
		const json_t *res = json_object_get(r.body, "result");
		const char *before = json_string_value(json_object_get(res, "mems_before"));
		const char *after = json_string_value(json_object_get(res, "mems_after"));
		out_line(stdout, "operation %lld: mems %s -> %s (effective %s)",
			 (long long)json_integer_value(json_object_get(r.body, "operation_id")),
			 before && *before ? before : "(empty)", after && *after ? after : "(empty)",
			 json_string_value(json_object_get(res, "effective_after")));
	}
	show(r.body);
	http_result_free(&r);
	return EXIT_OK;
}
