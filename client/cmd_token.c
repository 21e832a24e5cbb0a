/* `mempolicyctl token create|list|revoke`: bearer tokens for the daemon's TLS listener. Root on
 * the Unix socket only (the daemon decides). The secret is printed once, alone on stdout, so that
 * `token create ... > FILE` makes a file for --token-file; the rest goes to stderr. */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"
#include "common/parse.h"

/* "30d", "12h", "90m", "3600s" or plain seconds -> seconds; -1 when it is none of these. */
static long long duration_s(const char *s)
{
	static const struct { char unit; long long mul; } units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 },
								      { 'd', 86400 } };
	char num[24];
	size_t n = strlen(s);
	long long mul = 1;
	uint64_t v;

	if (n == 0 || n >= sizeof num)
		return -1;
	memcpy(num, s, n + 1);
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (num[n - 1] == units[i].unit) {
			mul = units[i].mul;
			num[--n] = '\0';
		}
	if (parse_u64(num, &v) < 0 || v == 0 || v > 10ULL * 366 * 86400 / (uint64_t)mul)
		return -1;
	return (long long)v * mul;
}

int cmd_token_create(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	json_t *body;
	long long exp = 0;
	const char *secret;
	int rc;

	if (!a->name || !a->scope)
		return cli_usage_error(cmd, "--name and --scope are required");
	if (a->expires && (exp = duration_s(a->expires)) < 0)
		return cli_usage_error(cmd, "--expires wants a duration such as 30d, 12h, 90m or 3600s (up to 10 "
				       "years), not '%s'", a->expires);
	body = json_pack("{s:s, s:s}", "name", a->name, "scope", a->scope);
	if (body && exp)
		json_object_set_new(body, "expires_in_s", json_integer(exp));
	if (!body) {
		out_error("out of memory");
		return EXIT_REFUSED;
	}
	rc = http_expect(c, "POST", "/v1/tokens", body, &r);
	json_decref(body);
	if (rc != EXIT_OK)
		return rc;
	if (c->json) {
		out_json(r.body);
	} else if ((secret = json_string_value(json_object_get(r.body, "token")))) {
		char when[64] = "never";
		const json_t *e = json_object_get(r.body, "expires_ns");
		if (json_is_integer(e))
			out_time_ns((long long)json_integer_value(e), when, sizeof when);
		out_line(stdout, "%s", secret);
		out_line(stderr, "token '%s', scope %s, expires %s: the secret above is shown only this once",
			 a->name, a->scope, when);
	} else {
		out_error("the daemon's answer holds no token");
		rc = EXIT_REFUSED;
	}
	http_result_free(&r);
	return rc;
}

int cmd_token_list(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const head[] = { "NAME", "ID", "SCOPE", "CREATED", "EXPIRES", "LAST USED", "REVOKED" };
	struct http_result r;
	struct table *t;
	size_t i;
	json_t *tok;
	int rc;
	(void)cmd;
	(void)a;

	if ((rc = http_show(c, "GET", "/v1/tokens", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(7, head);
	json_array_foreach(json_object_get(r.body, "items"), i, tok) {
		char created[40], expires[40], used[40], revoked[40];
		out_time_member(tok, "created_ns", created, sizeof created);
		out_time_member(tok, "expires_ns", expires, sizeof expires);
		out_time_member(tok, "last_used_ns", used, sizeof used);
		out_time_member(tok, "revoked_ns", revoked, sizeof revoked);
		table_row(t, json_string_value(json_object_get(tok, "name")), json_string_value(json_object_get(tok, "id")),
			  json_string_value(json_object_get(tok, "scope")), created, expires, used, revoked);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_token_revoke(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	struct http_result r;
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "which token? give its NAME");
	query_init(&q, "/v1/tokens");
	query_segment(&q, a->pos[0]);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_expect(c, "DELETE", path, NULL, &r)) != EXIT_OK)
		return rc;
	if (c->json)
		out_json(r.body);
	else
		out_line(stdout, "token '%s' revoked", a->pos[0]);
	http_result_free(&r);
	return EXIT_OK;
}
