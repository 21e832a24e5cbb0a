/* An experiment's request, checked whole before anything runs: the arms (names, knob values this
 * kernel takes, given as "knobs" or as a profile fragment, policies and CPUs), the workload (a probe kind's parameters, or a program the
 * caller may run), the rounds. A refusal changes nothing and records nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonfields.h"
#include "server/app.h"
#include "server/kernel/knobs.h"
#include "server/kernel/topology.h"
#include "server/ops/exp.h"
#include "server/ops/probes.h"
#include "server/ops/restore.h"

#define DEFAULT_ROUNDS 10
#define DEFAULT_WARMUP 1

void exp_args_free(void *arg)
{
	struct exp_args *a = arg;

	if (!a)
		return;
	for (int i = 0; i < EXP_MAX_ARMS; i++)
		launch_req_free(&a->arm[i].lr);
	launch_req_free(&a->prog);
	json_decref(a->params);
	json_decref(a->request);
	json_decref(a->host);
	if (a->peer_fd >= 0)
		close(a->peer_fd);
	free(a);
}

json_t *exp_host(const struct app *app)
{
	struct topology *t = malloc(sizeof *t);   /* owned */
	char topo[1024] = "", cpus[256];
	size_t off = 0;
	json_t *out = NULL;

	if (!t)
		return NULL;
	if (topo_read(app->sysfs_root, t) < 0) {
		snprintf(topo, sizeof topo, "unreadable");
	} else {
		/* Nodes, their CPUs and memory to the GiB: what makes one host's measurements another's. */
		for (int i = 0; i < t->n_nodes && off < sizeof topo; i++) {
			idset_format(&t->nodes[i].cpus, cpus, sizeof cpus);
			off += (size_t)snprintf(topo + off, sizeof topo - off, "%snode%u cpus %s mem %lluG", i ? "; " : "",
						t->nodes[i].id, *cpus ? cpus : "-",
						(unsigned long long)((t->nodes[i].mem_total_kb + (1 << 19)) >> 20));
		}
	}
	out = json_pack("{s:s, s:s}", "kernel_release", app->caps.kernel_release, "topology", topo);
	free(t);
	return out;
}

/* A knob's value as kernel text: a string as it is, an integer in decimal. */
static int knob_text(const json_t *v, const char *arm, const char *knob, char *buf, size_t len, mp_err *e)
{
	if (json_is_string(v) && strlen(json_string_value(v)) < len)
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "arm %s: the value of %s must be a string or an integer",
			       arm, knob);
	return 0;
}

int exp_arm_knob(const struct app *app, struct exp_arm *arm, const char *where, const char *name, const json_t *v,
		 mp_err *e)
{
	const struct knob *k = knobs_find(app->knobs, name);
	struct knob_state ks;

	if (!k)
		return mp_fail(e, MPE_KNOB_UNKNOWN, 0, "arm %s: %sno knob %s (GET /v1/knobs lists them)", arm->name, where,
			       knob_name_quotable(name) ? name : "?");
	for (int i = 0; i < arm->nknobs; i++)
		if (arm->knob[i].k == k)
			return mp_fail(e, MPE_EXPERIMENT_KNOB_TWICE, 0, "arm %s: %s%s is also under \"knobs\" (say it once)",
				       arm->name, where, k->name);
	if (arm->nknobs == EXP_MAX_KNOBS)
		return mp_fail(e, MPE_EXPERIMENT_BAD_ARM, 0, "arm %s: more than %d knobs", arm->name, EXP_MAX_KNOBS);
	if (knob_text(v, arm->name, k->name, arm->knob[arm->nknobs].value, sizeof arm->knob[0].value, e) < 0)
		return -1;
	knob_read(app->knobs, k, &ks);
	if (!ks.available)
		return mp_fail(e, MPE_KNOB_UNAVAILABLE, -ks.read_err, "arm %s: %sthis kernel lacks %s", arm->name, where,
			       k->name);
	if (knob_check_value(k, &ks, arm->knob[arm->nknobs].value) != KNOB_OK)
		return mp_fail(e, MPE_KNOB_VALUE_NOT_ALLOWED, 0, "arm %s: %s%s does not take %.64s", arm->name, where,
			       k->name, arm->knob[arm->nknobs].value);
	arm->knob[arm->nknobs++].k = k;
	return 0;
}

static int parse_knobs(const struct app *app, const json_t *knobs, struct exp_arm *arm, mp_err *e)
{
	const char *name;
	json_t *v;

	if (!json_is_object(knobs))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "arm %s: \"knobs\" must be an object", arm->name);
	json_object_foreach((json_t *)knobs, name, v)
		if (exp_arm_knob(app, arm, "", name, v, e) < 0)
			return -1;
	return 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	return n >= 1 && n < 48 && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int parse_arm(const struct app *app, const json_t *j, const struct topology *t, struct exp_arm *arm,
		     mp_err *e)
{
	static const char *const fields[] = { "name", "knobs", "profile", "policy", "cpus", "cpunodes", NULL };
	json_t *name = json_object_get(j, "name"), *cpus = json_object_get(j, "cpus"),
	       *cpunodes = json_object_get(j, "cpunodes");

	if (!json_is_object(j))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "each of \"arms\" must be an object");
	if (json_only_fields(j, "arms[].", fields, e) < 0)
		return -1;
	if (!name)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "an arm needs a \"name\"");
	if (!json_is_string(name) || !name_ok(json_string_value(name)))
		return mp_fail(e, MPE_EXPERIMENT_BAD_ARM, 0, "an arm's name is 1 to 47 of A-Z a-z 0-9 . _ -");
	snprintf(arm->name, sizeof arm->name, "%s", json_string_value(name));
	/* "knobs" first, so that a knob the fragment sets again is refused there, at its line. */
	if (json_object_get(j, "knobs") && parse_knobs(app, json_object_get(j, "knobs"), arm, e) < 0)
		return -1;
	if (json_object_get(j, "profile") && exp_arm_profile(app, json_object_get(j, "profile"), arm, e) < 0)
		return -1;
	if ((cpus && !json_is_string(cpus)) || (cpunodes && !json_is_string(cpunodes)))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "arm %s: \"cpus\" and \"cpunodes\" are lists as strings",
			       arm->name);
	if (json_object_get(j, "policy") && launch_parse_policy(app, json_object_get(j, "policy"), t, &arm->lr, e) < 0)
		return -1;
	if ((cpus || cpunodes) && launch_parse_cpus(json_string_value(cpus), json_string_value(cpunodes), t, &arm->lr,
						    e) < 0)
		return -1;
	return 0;
}

/* The settings of an arm as one comparable text: its knobs sorted, its policy, its CPUs. */
static void arm_key(const struct exp_arm *arm, char *buf, size_t len)
{
	const char *names[EXP_MAX_KNOBS];
	char nodes[256];
	size_t off = 0;
	int n = arm->nknobs;

	for (int i = 0; i < n; i++)
		names[i] = arm->knob[i].k->name;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *x = names[j];
			names[j] = names[j - 1];
			names[j - 1] = x;
		}
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (arm->knob[j].k->name == names[i] && off < len)
				off += (size_t)snprintf(buf + off, len - off, "%s=%s ", names[i], arm->knob[j].value);
	idset_format(&arm->lr.nodes, nodes, sizeof nodes);
	if (off < len)
		snprintf(buf + off, len - off, "| %s %d %s | %s", arm->lr.mode ? arm->lr.mode : "-", arm->lr.policy,
			 arm->lr.mode ? nodes : "", arm->lr.cpus ? arm->lr.cpus_text : "-");
}

static int parse_arms(struct exp_args *a, const json_t *arms, const struct topology *t, bool allow_identical,
		      mp_err *e)
{
	const char *knobs[RESTORE_MAX];
	int nknobs = 0;

	if (!json_is_array(arms))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"arms\" must be an array");
	if (json_array_size(arms) < 2)
		return mp_fail(e, MPE_EXPERIMENT_TOO_FEW_ARMS, 0, "an experiment compares at least two arms; %zu given",
			       json_array_size(arms));
	if (json_array_size(arms) > EXP_MAX_ARMS)
		return mp_fail(e, MPE_EXPERIMENT_BAD_ARM, 0, "at most %d arms", EXP_MAX_ARMS);
	for (size_t i = 0; i < json_array_size(arms); i++) {
		struct exp_arm *arm = &a->arm[i];
		if (parse_arm(a->app, json_array_get(arms, i), t, arm, e) < 0)
			return -1;
		a->narms++;
		for (int j = 0; j < arm->nknobs; j++) {
			int k = 0;
			while (k < nknobs && strcmp(knobs[k], arm->knob[j].k->name))
				k++;
			if (k == nknobs && nknobs == RESTORE_MAX)
				return mp_fail(e, MPE_EXPERIMENT_BAD_ARM, 0, "the arms set more than %d knobs together",
					       RESTORE_MAX);
			if (k == nknobs)
				knobs[nknobs++] = arm->knob[j].k->name;
		}
	}
	for (int i = 0; i < a->narms; i++)
		for (int j = 0; j < i; j++) {
			char ki[1024], kj[1024];
			if (!strcmp(a->arm[i].name, a->arm[j].name))
				return mp_fail(e, MPE_EXPERIMENT_DUPLICATE_ARM, 0, "two arms are named %s", a->arm[i].name);
			arm_key(&a->arm[i], ki, sizeof ki);
			arm_key(&a->arm[j], kj, sizeof kj);
			if (!allow_identical && !strcmp(ki, kj))
				return mp_fail(e, MPE_EXPERIMENT_IDENTICAL_ARMS, 0, "arms %s and %s have the same settings "
					       "(for an A/A check of the noise, say \"allow_identical\": true)",
					       a->arm[j].name, a->arm[i].name);
		}
	return 0;
}

static int opt_int(const json_t *body, const char *key, int min, int max, int def, int *out, mp_err *e)
{
	json_t *v = json_object_get(body, key);

	*out = def;
	if (!v)
		return 0;
	if (!json_is_integer(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"%s\" must be an integer", key);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return mp_fail(e, MPE_EXPERIMENT_BAD_ROUNDS, 0, "\"%s\" must be from %d to %d", key, min, max);
	*out = (int)json_integer_value(v);
	return 0;
}

static int parse_probe(struct exp_args *a, const json_t *w, const struct topology *t, mp_err *e)
{
	static const char *const fields[] = { "probe", "params", NULL };
	json_t *params = json_object_get(w, "params"), *own = NULL;
	struct probe_env env = { 0 };
	struct probe_plan plan = { 0 };
	const char *kind = json_string_value(json_object_get(w, "probe"));

	if (json_only_fields(w, "workload.", fields, e) < 0)
		return -1;
	if (!kind)
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"workload.probe\" must be a probe kind");
	if (!(a->probe = probe_find(kind)))
		return mp_fail(e, MPE_PROBE_UNKNOWN, 0, "no probe kind '%.32s' (GET /v1/probes lists them)",
			       strspn(kind, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(kind) ? kind : "?");
	if (params && !json_is_object(params))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"workload.params\" must be an object");
	if (!(own = params ? json_deep_copy(params) : json_object()))
		return mp_nomem(e);
	probe_env_from(t, &env);
	a->params = a->probe->parse(own, &env, &plan, e);
	json_decref(own);
	/* The arms decide the settings: a kind's own passes (sparse-touch's compare_thp, numa-hinting's
	 * on and off) are not run, only its workload as the first pass runs it. */
	if (!a->params || probe_check_share(&plan, &env, a->app->probe_mem_pct, e) < 0 ||
	    a->probe->pack(a->params, &env, &a->typed, e) < 0)
		return -1;
	while (probe_kinds[a->kind] != a->probe)
		a->kind++;
	return 0;
}

/* The program must be there to run: a file with an execute bit, found as the spawn will look for
 * it. Whether the caller may execute it the kernel says at the first run (recorded, put back). */
static int check_program(const struct launch_req *r, mp_err *e)
{
	const char *prog = r->argv[0], *path = r->path ? r->path : "/usr/local/bin:/usr/bin:/bin";
	char buf[4096];
	struct stat st;

	if (strchr(prog, '/')) {
		if (prog[0] != '/') {
			snprintf(buf, sizeof buf, "%s/%s", r->cwd, prog);
			prog = buf;
		}
		if (stat(prog, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return 0;
		return mp_fail(e, MPE_PROCESS_EXEC_FAILED, errno, "'%.200s' cannot be run: %s", r->argv[0],
			       stat(prog, &st) < 0 ? strerror(errno) : "not an executable file");
	}
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");
		snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return 0;
		p += n + (p[n] == ':');
	}
	return mp_fail(e, MPE_PROCESS_EXEC_FAILED, ENOENT, "'%.200s' is not found in PATH", prog);
}

static int parse_program(struct exp_args *a, const json_t *w, const struct launch_who *who, mp_err *e)
{
	static const char *const fields[] = { "argv", "env", "cwd", NULL };

	if (json_only_fields(w, "workload.", fields, e) < 0 || launch_parse(a->app, w, who, &a->prog, e) < 0)
		return -1;
	if (!a->prog.cwd || a->prog.cwd[0] != '/') {
		free(a->prog.cwd);
		if (!(a->prog.cwd = strdup("/")))
			return mp_nomem(e);
	}
	return check_program(&a->prog, e);
}

int exp_parse(struct exp_args *a, const json_t *body, const struct launch_who *who, mp_err *e)
{
	static const char *const fields[] = { "arms", "workload", "rounds", "warmup", "seed", "timeout_s",
					      "allow_identical", NULL };
	json_t *w = json_object_get(body, "workload"), *seed = json_object_get(body, "seed"),
	       *ai = json_object_get(body, "allow_identical"), *arms = json_object_get(body, "arms");
	struct topology *t = NULL;
	int timeout_s, rc = -1, kr;

	if (json_only_fields(body, "", fields, e) < 0)
		return -1;
	if (!arms || !w)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "an experiment needs \"arms\" and \"workload\"");
	if (ai && !json_is_boolean(ai))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"allow_identical\" must be a boolean");
	if (opt_int(body, "rounds", 1, EXP_MAX_ROUNDS, DEFAULT_ROUNDS, &a->rounds, e) < 0 ||
	    opt_int(body, "warmup", 0, EXP_MAX_WARMUP, DEFAULT_WARMUP, &a->warmup, e) < 0 ||
	    opt_int(body, "timeout_s", 1, PROBE_MAX_TIMEOUT_S, PROBE_DEFAULT_TIMEOUT_S, &timeout_s, e) < 0)
		return -1;
	a->timeout_ms = (int64_t)timeout_s * 1000;
	if (seed && (!json_is_integer(seed) || json_integer_value(seed) < 0))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"seed\" must be a non-negative integer");
	if (seed)
		a->seed = (uint64_t)json_integer_value(seed);
	else if (getrandom(&a->seed, sizeof a->seed, 0) != sizeof a->seed)
		return mp_fail(e, MPE_INTERNAL_ERROR, errno, "getrandom: %s", strerror(errno));
	a->seed &= (1ULL << 53) - 1;   /* a JSON number any client reads exactly */
	if (!json_is_object(w))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"workload\" must be an object");
	if (!(t = malloc(sizeof *t)))
		return mp_nomem(e);
	if ((kr = topo_read(a->app->sysfs_root, t)) < 0) {
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -kr, "reading the topology: %s", strerror(-kr));
		goto out;
	}
	if (parse_arms(a, arms, t, json_is_true(ai), e) < 0)
		goto out;
	if (json_object_get(w, "probe") ? parse_probe(a, w, t, e) < 0
	    : json_object_get(w, "argv") ? parse_program(a, w, who, e) < 0
	    : mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"workload\" is {\"probe\": KIND, \"params\": {...}} or "
		      "{\"argv\": [...]}") < 0)
		goto out;
	/* The probe's parameters as normalised; a program's as a launch records them (no env values). */
	if (!(a->host = exp_host(a->app)) ||
	    !(a->request = json_pack("{s:O, s:o, s:i, s:i, s:I, s:i, s:b}", "arms", arms, "workload",
				     a->probe ? json_pack("{s:s, s:O}", "probe", a->probe->name, "params", a->params)
				     : json_deep_copy(a->prog.record), "rounds", a->rounds, "warmup", a->warmup,
				     "seed", (json_int_t)a->seed, "timeout_s", timeout_s, "allow_identical",
				     json_is_true(ai)))) {
		mp_nomem(e);
		goto out;
	}
	rc = 0;
out:
	free(t);
	return rc;
}
