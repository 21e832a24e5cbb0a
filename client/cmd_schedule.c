/* `mempolicyctl schedule add|list|show|rm`: cron schedules whose action is a pool target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"

/* "2M total=4096" or "2M node0=4096 node1=16": the action in one cell. */
static void action_text(const json_t *s, char *buf, size_t len)
{
	const json_t *hp = json_object_get(json_object_get(s, "action"), "hugepages");
	const json_t *total = json_object_get(hp, "total"), *nodes = json_object_get(hp, "nodes"), *v;
	const char *size = json_string_value(json_object_get(hp, "size")), *k;
	size_t o;

	o = (size_t)snprintf(buf, len, "%s", size ? size : "?");
	if (json_is_integer(total) && o < len)
		o += (size_t)snprintf(buf + o, len - o, " total=%lld", (long long)json_integer_value(total));
	json_object_foreach((json_t *)nodes, k, v)
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, " node%s=%lld", k, (long long)json_integer_value(v));
}

static void print_one(const json_t *s)
{
	static const char *const keys[] = { "id", "cron", "timezone", "enabled", "misfire_grace_s",
					    "last_status", "last_job_id", "last_operation_id", "last_error" };
	struct table *t = table_new(2, NULL);
	const json_t *by = json_object_get(s, "created_by");
	const char *name = json_string_value(json_object_get(by, "name"));
	char a[512];

	for (size_t k = 0; k < 3; k++) {
		out_scalar(json_object_get(s, keys[k]), a, sizeof a);
		table_row(t, keys[k], a);
	}
	action_text(s, a, sizeof a);
	table_row(t, "action", a);
	out_time_member(s, "next_run_ns", a, sizeof a);
	table_row(t, "next_run", a);
	for (size_t k = 3; k < sizeof keys / sizeof keys[0]; k++) {
		out_scalar(json_object_get(s, keys[k]), a, sizeof a);
		table_row(t, keys[k], a);
	}
	out_time_member(s, "last_run_ns", a, sizeof a);
	table_row(t, "last_run", a);
	out_time_member(s, "created_ns", a, sizeof a);
	table_row(t, "created", a);
	if (name && *name)
		snprintf(a, sizeof a, "%s", name);
	else if (json_is_integer(json_object_get(by, "uid")))
		snprintf(a, sizeof a, "uid %lld", (long long)json_integer_value(json_object_get(by, "uid")));
	else
		snprintf(a, sizeof a, "-");
	table_row(t, "created_by", a);
	table_print(t, stdout);
}

/* Finishes a command whose answer is one schedule. */
static int print_answer(struct cli *c, struct http_result *r)
{
	if (c->json)
		out_json(r->body);
	else
		print_one(r->body);
	http_result_free(r);
	return EXIT_OK;
}

/* The json integer of a numeric option, when it was given. */
static void number(json_t *obj, const char *key, const struct num *n)
{
	if (n->set)
		json_object_set_new(obj, key, json_integer((json_int_t)n->v));
}

int cmd_schedule_add(struct cli *c, const struct command *cmd, struct args *a)
{
	json_t *hp = json_object(), *body = NULL;   /* owned */
	struct http_result r;
	int rc = EXIT_USAGE;

	if (!a->cron) {
		cli_usage_error(cmd, "--cron \"MIN HOUR DOM MON DOW\" is required");
		goto out;
	}
	if (!a->size) {
		cli_usage_error(cmd, "--size (e.g. 2M) is required");
		goto out;
	}
	if (!a->total.set == !json_object_size(a->nodes)) {
		cli_usage_error(cmd, "give either --total N or one or more --node N=COUNT");
		goto out;
	}
	json_object_set_new(hp, "size", json_string(a->size));
	number(hp, "total", &a->total);
	number(hp, "batch", &a->batch);
	if (json_object_size(a->nodes))
		json_object_set(hp, "nodes", a->nodes);
	body = json_pack("{s:s, s:{s:O}}", "cron", a->cron, "action", "hugepages", hp);
	if (a->timezone)
		json_object_set_new(body, "timezone", json_string(a->timezone));
	number(body, "misfire_grace_s", &a->grace);
	if ((rc = http_expect(c, "POST", "/v1/schedules", body, &r)) == EXIT_OK)
		rc = print_answer(c, &r);
out:
	json_decref(hp);
	json_decref(body);
	return rc;
}

int cmd_schedule_list(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "ID", "CRON", "TZ", "ACTION", "NEXT RUN", "LAST RUN", "LAST", "JOB" };
	struct http_result r;
	struct query q;
	const char *path;
	const json_t *s;
	char limit[24];
	size_t i;
	int rc;

	snprintf(limit, sizeof limit, "%llu", (unsigned long long)a->limit.v);
	query_init(&q, "/v1/schedules");
	query_arg(&q, "limit", a->limit.set ? limit : NULL);
	query_arg(&q, "cursor", a->cursor);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	struct table *t = table_new(8, hdr);
	json_array_foreach(json_object_get(r.body, "schedules"), i, s) {
		char id[32], cron[300], tz[32], act[512], next[48], last[48], st[32], job[32];
		out_scalar(json_object_get(s, "id"), id, sizeof id);
		out_scalar(json_object_get(s, "cron"), cron, sizeof cron);
		out_scalar(json_object_get(s, "timezone"), tz, sizeof tz);
		action_text(s, act, sizeof act);
		out_time_member(s, "next_run_ns", next, sizeof next);
		out_time_member(s, "last_run_ns", last, sizeof last);
		out_scalar(json_object_get(s, "last_status"), st, sizeof st);
		out_scalar(json_object_get(s, "last_job_id"), job, sizeof job);
		table_row(t, id, cron, tz, act, next, last, st, job);
	}
	table_print(t, stdout);
	if (json_is_string(json_object_get(r.body, "next_cursor"))) {
		fputs("more: mempolicyctl schedule list", stderr);
		out_more_opt("--limit", a->limit.set ? limit : NULL);
		out_more_opt("--cursor", json_string_value(json_object_get(r.body, "next_cursor")));
		fputc('\n', stderr);
	}
	http_result_free(&r);
	return EXIT_OK;
}

/* The one positional ID of `schedule show|rm` as its resource path. */
static int id_path(const struct command *cmd, const struct args *a, struct query *q, const char **path,
		   uint64_t *id)
{
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "which schedule? give its ID");
	if ((rc = cli_id(cmd, "a schedule ID", a->pos[0], id)) != EXIT_OK)
		return rc;
	query_init(q, "/v1/schedules");
	query_segment_u64(q, *id);
	return cli_path(cmd, q, path);
}

int cmd_schedule_show(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	uint64_t id;
	int rc;

	if ((rc = id_path(cmd, a, &q, &path, &id)) != EXIT_OK)
		return rc;
	if ((rc = http_expect(c, "GET", path, NULL, &r)) != EXIT_OK)
		return rc;
	return print_answer(c, &r);
}

int cmd_schedule_rm(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	uint64_t id;
	int rc;

	if ((rc = id_path(cmd, a, &q, &path, &id)) != EXIT_OK)
		return rc;
	if ((rc = http_expect(c, "DELETE", path, NULL, &r)) != EXIT_OK)
		return rc;
	if (c->json)
		out_json(r.body);
	else
		printf("schedule %llu deleted\n", (unsigned long long)id);
	http_result_free(&r);
	return EXIT_OK;
}
