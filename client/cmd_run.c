/* mempolicyctl run (numactl's options: the program run here as this process, client/runself.c, or
 * started by the daemon with --detach) and the process changes: proc migrate, proc collapse (jobs, waited for with a progress bar). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/jobview.h"
#include "client/out.h"
#include "client/query.h"
#include "client/runself.h"

extern char **environ;

/* Exactly one of numactl's policy options, as the API's policy object. */
static int policy(const struct command *cmd, const struct args *a, json_t *body)
{
	const struct { const char *opt, *mode, *nodes; } p[] = {
		{ "--membind", "bind", a->membind },
		{ "--preferred", "preferred", a->preferred },
		{ "--preferred-many", "preferred-many", a->preferred_many },
		{ "--interleave", "interleave", a->interleave },
		{ "--weighted-interleave", "weighted-interleave", a->weighted_interleave },
		{ "--localalloc", "local", a->localalloc ? "" : NULL },
	};
	int n = 0;

	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
		if (!p[i].nodes)
			continue;
		if (n++)
			return cli_usage_error(cmd, "give one policy option (%s and another)", p[i].opt);
		json_object_set_new(body, "policy", *p[i].nodes
			? json_pack("{s:s, s:s}", "mode", p[i].mode, "nodes", p[i].nodes)
			: json_pack("{s:s}", "mode", p[i].mode));
	}
	return EXIT_OK;
}

/* The members both ways of running share: argv, the policy, the CPUs, the THP mode, the directory.
 * EXIT_OK or EXIT_USAGE after saying why. */
static int common_body(const struct command *cmd, const struct args *a, json_t *body)
{
	json_t *argv = json_array();   /* owned until set_new */
	char cwd[PATH_MAX];

	if (a->npos < 1) {
		json_decref(argv);
		return cli_usage_error(cmd, "the program to run is required");
	}
	if (policy(cmd, a, body) != EXIT_OK) {
		json_decref(argv);
		return EXIT_USAGE;
	}
	if (a->cpunodebind && a->physcpubind) {
		json_decref(argv);
		return cli_usage_error(cmd, "give --cpunodebind or --physcpubind, not both");
	}
	for (int i = 0; i < a->npos; i++)
		json_array_append_new(argv, json_string(a->pos[i]));
	json_object_set_new(body, "argv", argv);
	if (a->cpunodebind)
		json_object_set_new(body, "cpunodes", json_string(a->cpunodebind));
	if (a->physcpubind)
		json_object_set_new(body, "cpus", json_string(a->physcpubind));
	if (a->thp)
		json_object_set_new(body, "thp", json_string(a->thp));
	/* As numactl would run it: here (the daemon searches PATH from the environment it is sent). */
	if (getcwd(cwd, sizeof cwd))
		json_object_set_new(body, "cwd", json_string(cwd));
	return EXIT_OK;
}

/* --detach: POST /v1/processes, the daemon starts the program (its own session, stdio on
 * /dev/null) and answers once it has exec'd. */
static int run_detached(struct cli *c, const struct command *cmd, struct args *a, json_t *body)
{
	json_t *env = json_object();   /* owned until set_new */
	struct http_result r;
	int rc;

	if (a->watch || a->interval.set)
		json_object_set_new(body, "watch", json_pack("{s:I}", "interval_ms",
							     (json_int_t)(a->interval.set ? a->interval.v : 1000)));
	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];
		if (!eq || eq == *e || (size_t)(eq - *e) >= sizeof name)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
		json_object_set_new(env, name, json_string(eq + 1));
	}
	json_object_set_new(body, "env", env);
	(void)cmd;
	if ((rc = http_expect(c, "POST", "/v1/processes", body, &r)) != EXIT_OK)
		return rc;
	if (c->json)
		out_json(r.body);
	else
		printf("pid %lld started (start time %lld, operation %lld)%s\n",
		       (long long)json_integer_value(json_object_get(r.body, "pid")),
		       (long long)json_integer_value(json_object_get(r.body, "start_time")),
		       (long long)json_integer_value(json_object_get(r.body, "operation_id")),
		       json_is_object(json_object_get(r.body, "watch")) ? ": watched (its samples: GET /v1/processes/PID/samples)" : "");
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_run(struct cli *c, const struct command *cmd, struct args *a)
{
	json_t *body = json_object();   /* owned */
	int rc;

	if ((rc = common_body(cmd, a, body)) == EXIT_OK) {
		if (a->detach)
			rc = run_detached(c, cmd, a, body);
		else if (a->watch || a->interval.set)
			rc = cli_usage_error(cmd, "--watch and --interval go with --detach (the daemon watches "
					     "the processes it starts)");
		else
			rc = run_here(c, a, body);   /* returns only when the program could not be run */
	}
	json_decref(body);
	return rc;
}

bool run_needs_curl(const struct cli *c, const struct command *k, const struct args *a)
{
	return k->fn != cmd_run || a->detach || c->url;
}

/* POST /v1/processes/PID/<what> with body, then wait for the job unless --no-wait. */
static int process_job(struct cli *c, const struct command *cmd, struct args *a, const char *what, json_t *body)
{
	struct query q;
	const char *path;
	struct http_result r;
	uint64_t pid;
	long long id;
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "the process id (PID) is required");
	if ((rc = cli_id(cmd, "a PID", a->pos[0], &pid)) != EXIT_OK)
		return rc;
	if (a->start_time.set)
		json_object_set_new(body, "start_time", json_integer((json_int_t)a->start_time.v));
	query_init(&q, "/v1/processes");
	query_segment_u64(&q, pid);
	query_segment(&q, what);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK || (rc = http_expect(c, "POST", path, body, &r)) != EXIT_OK)
		return rc;
	id = (long long)json_integer_value(json_object_get(r.body, "id"));
	if (a->no_wait)
		return jobview_queued(c, &r, "job");
	http_result_free(&r);
	return jobview_wait(c, id);
}

int cmd_proc_migrate(struct cli *c, const struct command *cmd, struct args *a)
{
	json_t *body;
	int rc;

	if (!a->from || !a->to)
		return cli_usage_error(cmd, "--from NODES and --to NODES are required");
	body = json_pack("{s:s, s:s}", "from", a->from, "to", a->to);
	rc = process_job(c, cmd, a, "migrate", body);
	json_decref(body);
	return rc;
}

int cmd_proc_collapse(struct cli *c, const struct command *cmd, struct args *a)
{
	json_t *body = json_object();
	int rc;

	if (a->start.set != a->length.set) {
		json_decref(body);
		return cli_usage_error(cmd, "--start and --length go together (bytes; default: every anonymous mapping)");
	}
	if (a->start.set)
		json_object_set_new(body, "range", json_pack("{s:I, s:I}", "start", (json_int_t)a->start.v, "length",
							     (json_int_t)a->length.v));
	rc = process_job(c, cmd, a, "collapse", body);
	json_decref(body);
	return rc;
}
