/* `mempolicyctl schedule add|list|show|rm`: cron schedules whose action is a pool target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "common/parse.h"


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

static void time_cell(const json_t *s, const char *key, char *buf, size_t len)
{
	const json_t *v = json_object_get(s, key);
	if (json_is_integer(v))
		out_time_ns((long long)json_integer_value(v), buf, len);
	else
		snprintf(buf, len, "-");
}

static void print_one(const json_t *s)
{
	static const char *const keys[] = { "id", "cron", "timezone", "enabled", "misfire_grace_s",
					    "last_status", "last_job_id", "last_op_id", "last_error" };
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
	time_cell(s, "next_run_ns", a, sizeof a);
	table_row(t, "next_run", a);
	for (size_t k = 3; k < sizeof keys / sizeof keys[0]; k++) {
		out_scalar(json_object_get(s, keys[k]), a, sizeof a);
		table_row(t, keys[k], a);
	}
	time_cell(s, "last_run_ns", a, sizeof a);
	table_row(t, "last_run", a);
	time_cell(s, "created_ns", a, sizeof a);
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

static int id_path(const struct command *cmd, const char *arg, char *path, size_t len)
{
	uint64_t id;

	if (parse_u64(arg, &id) < 0 || id == 0)
		return cli_usage_error(cmd, "a schedule ID is a positive integer, not '%s'", arg);
	snprintf(path, len, "/v1/schedules/%llu", (unsigned long long)id);
	return EXIT_OK;
}

static int number(const struct command *cmd, json_t *obj, const char *key, const char *opt, const char *text)
{
	uint64_t v;

	if (!text)
		return EXIT_OK;
	if (parse_u64(text, &v) < 0 || v > (uint64_t)INT64_MAX)
		return cli_usage_error(cmd, "%s wants a non-negative integer, not '%s'", opt, text);
	json_object_set_new(obj, key, json_integer((json_int_t)v));
	return EXIT_OK;
}

int cmd_schedule_add(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	const char *cron = NULL, *size = NULL, *total = NULL, *tz = NULL, *grace = NULL, *batch = NULL;
	const struct opt opts[] = {
		{ "--cron", &cron, NULL }, { "--size", &size, NULL }, { "--total", &total, NULL },
		{ "--timezone", &tz, NULL }, { "--grace", &grace, NULL }, { "--batch", &batch, NULL },
		{ NULL, NULL, NULL },
	};
	json_t *nodes = json_object(), *hp = json_object(), *body = NULL;
	struct http_result r;
	int rc;

	if ((rc = cli_take_node_counts(cmd, &argc, argv, nodes)) != EXIT_OK)
		goto out;
	if (cli_args(c, cmd, argc, argv, opts, NULL, 0) < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	rc = EXIT_USAGE;
	if (!cron) {
		cli_usage_error(cmd, "--cron \"MIN HOUR DOM MON DOW\" is required");
		goto out;
	}
	if (!size) {
		cli_usage_error(cmd, "--size (e.g. 2M) is required");
		goto out;
	}
	if (!total == !json_object_size(nodes)) {
		cli_usage_error(cmd, "give either --total N or one or more --node N=COUNT");
		goto out;
	}
	json_object_set_new(hp, "size", json_string(size));
	if (number(cmd, hp, "total", "--total", total) != EXIT_OK || number(cmd, hp, "batch", "--batch", batch) != EXIT_OK)
		goto out;
	if (json_object_size(nodes))
		json_object_set(hp, "nodes", nodes);
	body = json_pack("{s:s, s:{s:O}}", "cron", cron, "action", "hugepages", hp);
	if (tz)
		json_object_set_new(body, "timezone", json_string(tz));
	if (number(cmd, body, "misfire_grace_s", "--grace", grace) != EXIT_OK)
		goto out;
	if ((rc = http_expect(c, "POST", "/v1/schedules", body, &r)) == EXIT_OK)
		rc = print_answer(c, &r);
out:
	json_decref(nodes);
	json_decref(hp);
	json_decref(body);
	return rc;
}

int cmd_schedule_list(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	static const char *const hdr[] = { "ID", "CRON", "TZ", "ACTION", "NEXT RUN", "LAST RUN", "LAST", "JOB" };
	struct http_result r;
	const json_t *s;
	size_t i;
	int rc;

	if (cli_args(c, cmd, argc, argv, NULL, NULL, 0) < 0)
		return EXIT_USAGE;
	if ((rc = http_show(c, "GET", "/v1/schedules", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	struct table *t = table_new(8, hdr);
	json_array_foreach(json_object_get(r.body, "schedules"), i, s) {
		char id[32], cron[300], tz[32], act[512], next[48], last[48], st[32], job[32];
		out_scalar(json_object_get(s, "id"), id, sizeof id);
		out_scalar(json_object_get(s, "cron"), cron, sizeof cron);
		out_scalar(json_object_get(s, "timezone"), tz, sizeof tz);
		action_text(s, act, sizeof act);
		time_cell(s, "next_run_ns", next, sizeof next);
		time_cell(s, "last_run_ns", last, sizeof last);
		out_scalar(json_object_get(s, "last_status"), st, sizeof st);
		out_scalar(json_object_get(s, "last_job_id"), job, sizeof job);
		table_row(t, id, cron, tz, act, next, last, st, job);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

/* The one positional ID of `schedule show|rm` as its resource path. */
static int id_arg(struct cli *c, const struct command *cmd, int argc, char **argv, char **id, char *path,
		  size_t len)
{
	int rc = cli_args(c, cmd, argc, argv, NULL, id, 1);

	if (rc < 0)
		return EXIT_USAGE;
	if (rc != 1)
		return cli_usage_error(cmd, "which schedule? give its ID");
	return id_path(cmd, *id, path, len);
}

int cmd_schedule_show(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	char *pos[1], path[64];
	struct http_result r;
	int rc;

	if ((rc = id_arg(c, cmd, argc, argv, pos, path, sizeof path)) != EXIT_OK)
		return rc;
	if ((rc = http_expect(c, "GET", path, NULL, &r)) != EXIT_OK)
		return rc;
	return print_answer(c, &r);
}

int cmd_schedule_rm(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	char *pos[1], path[64];
	struct http_result r;
	int rc;

	if ((rc = id_arg(c, cmd, argc, argv, pos, path, sizeof path)) != EXIT_OK)
		return rc;
	if ((rc = http_expect(c, "DELETE", path, NULL, &r)) != EXIT_OK)
		return rc;
	if (c->json)
		out_json(r.body);
	else
		printf("schedule %s deleted\n", pos[0]);
	http_result_free(&r);
	return EXIT_OK;
}
