/* `mempolicyctl job list|show|cancel`: long operations (pool resizes) and their outcome. */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "common/err.h"
#include "client/http.h"
#include "client/jobview.h"
#include "client/out.h"
#include "client/query.h"

/* The path of one job, from the ID argument. EXIT_OK or EXIT_USAGE. */
static int job_path(const struct command *cmd, const struct args *a, struct query *q, const char **path,
		    uint64_t *id)
{
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "the job ID is required");
	if ((rc = cli_id(cmd, "a job ID", a->pos[0], id)) != EXIT_OK)
		return rc;
	query_init(q, "/v1/jobs");
	query_segment_u64(q, *id);
	return cli_path(cmd, q, path);
}

int cmd_job_list(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "ID", "KIND", "STATUS", "REASON", "SOURCE", "CREATED", "PAGES" };
	struct query q;
	const char *path;
	struct http_result r;
	const json_t *j;
	struct table *t;
	size_t i;
	int rc;

	query_init(&q, "/v1/jobs");
	query_arg_u64(&q, "limit", a->limit.set ? a->limit.v : 50);
	query_arg(&q, "kind", a->kind);
	query_arg(&q, "status", a->status);
	query_arg(&q, "cursor", a->cursor);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(7, hdr);
	json_array_foreach(json_object_get(r.body, "jobs"), i, j) {
		char cell[7][64];
		const json_t *p = json_object_get(j, "progress");
		out_scalar(json_object_get(j, "id"), cell[0], sizeof cell[0]);
		out_scalar(json_object_get(j, "kind"), cell[1], sizeof cell[1]);
		out_scalar(json_object_get(j, "status"), cell[2], sizeof cell[2]);
		out_scalar(json_object_get(j, "reason"), cell[3], sizeof cell[3]);
		out_scalar(json_object_get(j, "source"), cell[4], sizeof cell[4]);
		out_time_ns((long long)json_integer_value(json_object_get(j, "created_ns")), cell[5], sizeof cell[5]);
		if (json_is_integer(json_object_get(p, "pages_total")))
			snprintf(cell[6], sizeof cell[6], "%lld/%lld", (long long)json_integer_value(json_object_get(p, "pages_done")),
				 (long long)json_integer_value(json_object_get(p, "pages_total")));
		else
			snprintf(cell[6], sizeof cell[6], "-");
		table_row(t, cell[0], cell[1], cell[2], cell[3], cell[4], cell[5], cell[6]);
	}
	table_print(t, stdout);
	if (json_is_string(json_object_get(r.body, "next_cursor"))) {
		char limit[24];
		snprintf(limit, sizeof limit, "%llu", (unsigned long long)a->limit.v);
		/* The cursor is bound to the filters: the line repeats them, ready to paste. */
		fputs("more: mempolicyctl job list", stderr);
		out_more_opt("--kind", a->kind);
		out_more_opt("--status", a->status);
		out_more_opt("--limit", a->limit.set ? limit : NULL);
		out_more_opt("--cursor", json_string_value(json_object_get(r.body, "next_cursor")));
		fputc('\n', stderr);
	}
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_job_show(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	uint64_t id;
	int rc;

	if ((rc = job_path(cmd, a, &q, &path, &id)) != EXIT_OK)
		return rc;
	if (a->wait)
		return jobview_wait(c, (long long)id);
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	jobview_print(r.body);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_job_cancel(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	uint64_t id;
	int rc;

	if ((rc = job_path(cmd, a, &q, &path, &id)) != EXIT_OK)
		return rc;
	/* A job that has already ended is as the caller wanted it: systemctl's "stop" of a stopped
	 * unit exits 0, and so does this, saying so on stderr (the daemon's 409 job.finished). */
	rc = http_call(c, "DELETE", path, NULL, &r);
	if (rc == 0 && r.status == 409 && json_is_string(json_object_get(r.body, "code")) &&
	    !strcmp(json_string_value(json_object_get(r.body, "code")), mp_code_name(MPE_JOB_FINISHED))) {
		if (c->json)
			out_problem(c, &r);
		else
			out_error("%s: nothing to cancel", json_string_value(json_object_get(r.body, "detail")));
		http_result_free(&r);
		return EXIT_OK;
	}
	if ((rc = http_judge(c, rc, &r)) != EXIT_OK)
		return rc;
	if (c->json)
		out_json(r.body);
	else
		out_line(stdout, "job %llu: cancel requested (status now %s; a running job stops before its next batch)",
		       (unsigned long long)id,
		       json_string_value(json_object_get(r.body, "status")));
	http_result_free(&r);
	return EXIT_OK;
}
