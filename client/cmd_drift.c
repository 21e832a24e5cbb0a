/* `mempolicyctl profile drift`: the drift history (GET /v1/profile/drift), newest first — each drift
 * of a managed key with who caused it and what its policy did. Every cell quotes the daemon (a
 * writer's comm and unit are a process's own text), so each goes through the table's escaping. */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"

/* "process sh[4242] session-3.scope", "kernel", "unknown". */
static void cause_text(const json_t *res, char *buf, size_t len)
{
	const json_t *w = json_object_get(res, "writer");
	const char *cause = json_string_value(json_object_get(res, "cause"));
	size_t off = (size_t)snprintf(buf, len, "%s", cause ? cause : "-");

	if (!json_is_object(w) || off >= len)
		return;
	if (json_is_string(json_object_get(w, "comm")))
		off += (size_t)snprintf(buf + off, len - off, " %s", json_string_value(json_object_get(w, "comm")));
	if (off < len && json_is_integer(json_object_get(w, "pid")))
		off += (size_t)snprintf(buf + off, len - off, "[%lld]", (long long)json_integer_value(json_object_get(w, "pid")));
	if (off < len && json_is_integer(json_object_get(w, "uid")))
		off += (size_t)snprintf(buf + off, len - off, " uid %lld", (long long)json_integer_value(json_object_get(w, "uid")));
	if (off < len && json_is_string(json_object_get(w, "unit")))
		snprintf(buf + off, len - off, " %s", json_string_value(json_object_get(w, "unit")));
}

int cmd_profile_drift(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "ID", "FIRST SEEN", "LAST SEEN", "KEY", "EXPECTED", "ACTUAL", "COUNT",
					   "CAUSE", "ACTION" };
	struct query q;
	const char *path;
	char limit[24];
	struct http_result r;
	const json_t *d, *next;
	size_t i;
	int rc;

	if (a->npos)
		return cli_usage_error(cmd, "profile drift takes no arguments (--key KEY picks one key)");
	snprintf(limit, sizeof limit, "%llu", (unsigned long long)a->limit.v);
	query_init(&q, "/v1/profile/drift");
	query_arg(&q, "key", a->key);
	query_arg(&q, "limit", a->limit.set ? limit : NULL);
	query_arg(&q, "cursor", a->cursor);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	struct table *t = table_new(9, hdr);
	json_array_foreach(json_object_get(r.body, "drifts"), i, d) {
		const json_t *req = json_object_get(d, "drift"), *res = json_object_get(d, "result");
		char id[32], first[48], last[48], key[400], want[256], actual[256], count[32], cause[512], action[32];
		out_scalar(json_object_get(d, "id"), id, sizeof id);
		out_time_member(d, "first_seen_ns", first, sizeof first);
		out_time_member(d, "last_seen_ns", last, sizeof last);
		out_scalar(json_object_get(req, "key"), key, sizeof key);
		out_scalar(json_object_get(req, "comparator"), want, sizeof want);
		strncat(want, " ", sizeof want - strlen(want) - 1);
		out_scalar(json_object_get(req, "expected"), want + strlen(want), sizeof want - strlen(want));
		out_scalar(json_object_get(res, "actual"), actual, sizeof actual);
		out_scalar(json_object_get(res, "count"), count, sizeof count);
		cause_text(res, cause, sizeof cause);
		out_scalar(json_object_get(d, "action"), action, sizeof action);
		table_row(t, id, first, last, key, want, actual, count, cause, action);
	}
	table_print(t, stdout);
	if (!json_array_size(json_object_get(r.body, "drifts")))
		out_line(stdout, "no drift recorded%s%s", a->key ? " for " : "", a->key ? a->key : "");
	next = json_object_get(r.body, "next_cursor");
	if (json_is_string(next)) {
		fputs("more: mempolicyctl profile drift", stderr);
		out_more_opt("--key", a->key);
		out_more_opt("--limit", a->limit.set ? limit : NULL);
		out_more_opt("--cursor", json_string_value(next));
		fputc('\n', stderr);
	}
	http_result_free(&r);
	return EXIT_OK;
}
