/* `mempolicyctl experiment run|list|show|samples|cancel` and `advise`. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/jobview.h"
#include "client/out.h"
#include "client/query.h"
#include "common/err.h"

#define ARM_MAX_SETTINGS 16
#define ARM_PROFILE_MAX (64 * 1024)   /* the daemon's bound on a profile file (PROF_FILE_MAX) */

/* What a program run by the daemon gets of this shell's environment: enough to find and run it,
 * nothing else (the daemon records the names only). */
static const char *const passed_env[] = { "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", NULL };

/* The text of the profile fragment at path (an arm's profile=FILE), read here: the daemon reads
 * no caller's file. A new string, or NULL with err. */
static json_t *fragment_of(const char *arm, const char *path, char *err, size_t errlen)
{
	/* Non-blocking and a regular file only: a FIFO or a device named here would hold the command
	 * (or feed it without end) before the size bound is reached. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	FILE *f = NULL;               /* owned */
	char *buf = NULL;             /* owned */
	size_t n = 0;
	json_t *out = NULL;
	struct stat sb;

	if (fd >= 0 && fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		close(fd);
		snprintf(err, errlen, "--arm %.48s: profile=%.128s is not a regular file", arm, path);
		return NULL;
	}
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		snprintf(err, errlen, "--arm %.48s: profile=%.128s: %s", arm, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!(buf = malloc(ARM_PROFILE_MAX + 1))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	n = fread(buf, 1, ARM_PROFILE_MAX + 1, f);
	if (ferror(f))
		snprintf(err, errlen, "--arm %.48s: profile=%.128s: %s", arm, path, strerror(errno));
	else if (n > ARM_PROFILE_MAX)
		snprintf(err, errlen, "--arm %.48s: profile=%.128s is over %d bytes", arm, path, ARM_PROFILE_MAX);
	else if (!(out = json_stringn(buf, n)))   /* NULL for text that is not UTF-8 too */
		snprintf(err, errlen, "--arm %.48s: profile=%.128s is not UTF-8 text", arm, path);
out:
	free(buf);
	fclose(f);
	return out;
}

/* One --arm NAME:K=V[,K=V...]: policy.mode, policy.nodes, cpus and cpunodes are the workload's
 * policy and CPUs, profile=FILE a profile fragment read from FILE, any other K a knob. A piece
 * without '=' continues the value before it, so node and CPU lists keep their commas ("cpus=0,2").
 * A new object, or NULL with err. */
static json_t *arm_of(const char *text, char *err, size_t errlen)
{
	const char *colon = strchr(text, ':');
	char buf[1024], *save = NULL, *piece;
	struct { const char *key; char value[256]; } set[ARM_MAX_SETTINGS];
	json_t *arm, *knobs, *policy;
	int n = 0;

	if (!colon || colon == text || strlen(text) >= sizeof buf) {
		snprintf(err, errlen, "--arm wants NAME:SETTING=VALUE[,SETTING=VALUE...], not '%.64s'", text);
		return NULL;
	}
	snprintf(buf, sizeof buf, "%s", colon + 1);
	for (piece = strtok_r(buf, ",", &save); piece; piece = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(piece, '=');
		if (!eq) {
			if (!n || strlen(set[n - 1].value) + strlen(piece) + 2 > sizeof set[0].value) {
				snprintf(err, errlen, "--arm %.48s: '%.48s' is not SETTING=VALUE", text, piece);
				return NULL;
			}
			size_t used = strlen(set[n - 1].value);   /* bounded above: the piece and ',' fit */
			snprintf(set[n - 1].value + used, sizeof set[0].value - used, ",%s", piece);
			continue;
		}
		if (n == ARM_MAX_SETTINGS || eq == piece || strlen(eq + 1) >= sizeof set[0].value) {
			snprintf(err, errlen, "--arm %.48s: too many settings, or a setting without a name", text);
			return NULL;
		}
		*eq = '\0';
		set[n].key = piece;
		snprintf(set[n].value, sizeof set[n].value, "%s", eq + 1);
		n++;
	}
	arm = json_pack("{s:s%}", "name", text, (size_t)(colon - text));
	knobs = json_object();
	policy = json_object();
	for (int i = 0; i < n; i++) {
		bool pol = !strcmp(set[i].key, "policy.mode") || !strcmp(set[i].key, "policy.nodes");
		bool cpu = !strcmp(set[i].key, "cpus") || !strcmp(set[i].key, "cpunodes");
		json_t *frag;             /* owned until set in arm */

		if (!strcmp(set[i].key, "profile")) {
			if (json_object_get(arm, "profile")) {
				snprintf(err, errlen, "--arm %.48s: profile= given twice", text);
				frag = NULL;
			} else {
				frag = fragment_of(text, set[i].value, err, errlen);
			}
			if (!frag) {
				json_decref(arm);
				arm = NULL;
				goto out;
			}
			json_object_set_new(arm, "profile", frag);
			continue;
		}
		json_object_set_new(pol ? policy : cpu ? arm : knobs, pol ? set[i].key + 7 : set[i].key,
				    json_string(set[i].value));
	}
	if (json_object_size(knobs))
		json_object_set(arm, "knobs", knobs);
	if (json_object_size(policy))
		json_object_set(arm, "policy", policy);
out:
	json_decref(knobs);
	json_decref(policy);
	return arm;
}

/* The workload: --probe KIND with NAME=VALUE words typed as the daemon declares them, or the
 * words as a program run in this directory. A new object, or NULL (the error printed). */
static json_t *workload_of(struct cli *c, const struct command *cmd, struct args *a, int *rc)
{
	json_t *w, *params, *env;
	char err[256], cwd[PATH_MAX];
	struct http_result kinds;

	*rc = EXIT_USAGE;
	if (a->probe) {
		if ((*rc = http_expect(c, "GET", "/v1/probes", NULL, &kinds)) != EXIT_OK)
			return NULL;
		*rc = probe_params_body(a->pos, a->npos, probe_param_types(kinds.body, a->probe), &params, err, sizeof err);
		http_result_free(&kinds);
		if (*rc < 0) {
			*rc = cli_usage_error(cmd, "%s", err);
			return NULL;
		}
		*rc = EXIT_OK;
		return json_pack("{s:s, s:o}", "probe", a->probe, "params", params);
	}
	if (a->npos < 1) {
		cli_usage_error(cmd, "give the workload: -- CMD [ARGS...], or --probe KIND [NAME=VALUE...]");
		return NULL;
	}
	if (!getcwd(cwd, sizeof cwd)) {
		cli_usage_error(cmd, "cannot tell this directory, where the program is to run");
		return NULL;
	}
	w = json_pack("{s:[], s:s, s:{}}", "argv", "cwd", cwd, "env");
	for (int i = 0; i < a->npos; i++)
		json_array_append_new(json_object_get(w, "argv"), json_string(a->pos[i]));
	env = json_object_get(w, "env");
	for (const char *const *k = passed_env; *k; k++)
		if (getenv(*k))
			json_object_set_new(env, *k, json_string(getenv(*k)));
	*rc = EXIT_OK;
	return w;
}

static void cell_pct(const json_t *v, char *buf, size_t len)
{
	if (json_is_number(v))
		snprintf(buf, len, "%+.1f", json_number_value(v));
	else
		snprintf(buf, len, "-");
}

static void cell_num(const json_t *v, char *buf, size_t len)
{
	if (json_is_number(v))
		snprintf(buf, len, "%.6g", json_number_value(v));
	else
		snprintf(buf, len, "-");
}

/* The seeds' table: a row per metric and arm, the baseline's and the arm's medians, the change with
 * its 95 % interval, p, and the verdict in ministat's words. */
static void print_experiment(const json_t *x)
{
	const json_t *req = json_object_get(x, "request"), *w = json_object_get(req, "workload"), *cmp,
		     *sum = json_object_get(x, "summary");
	const char *err = json_string_value(json_object_get(x, "error"));
	struct table *t;
	size_t i;

	out_line(stdout, "experiment %lld: %s, %lld rounds + %lld warm-up, seed %lld, on %s",
		 (long long)json_integer_value(json_object_get(x, "id")), json_string_value(json_object_get(x, "status")),
		 (long long)json_integer_value(json_object_get(req, "rounds")),
		 (long long)json_integer_value(json_object_get(req, "warmup")),
		 (long long)json_integer_value(json_object_get(req, "seed")),
		 json_is_string(json_object_get(w, "probe")) ? json_string_value(json_object_get(w, "probe"))
		 : json_string_value(json_array_get(json_object_get(w, "argv"), 0)) ?: "?");
	if (err)
		out_line(stdout, "error: %s", err);
	t = table_new(7, (const char *const[]){ "METRIC", "BASELINE", "ARM", "CHANGE%", "95% CI", "P", "VERDICT" });
	json_array_foreach(json_object_get(x, "comparisons"), i, cmp) {
		const char *metric = json_string_value(json_object_get(cmp, "metric")),
			   *base = json_string_value(json_object_get(cmp, "baseline")),
			   *arm = json_string_value(json_object_get(cmp, "arm"));
		const json_t *ci = json_object_get(cmp, "ci95_pct");
		char b[64], a[64], d[32], lo[32], hi[32], range[72], p[32], bh[96], ah[96];

		cell_num(json_object_get(json_object_get(json_object_get(sum, base), metric), "median"), b, sizeof b);
		cell_num(json_object_get(json_object_get(json_object_get(sum, arm), metric), "median"), a, sizeof a);
		snprintf(bh, sizeof bh, "%s %s", base, b);
		snprintf(ah, sizeof ah, "%s %s", arm, a);
		cell_pct(json_object_get(cmp, "median_diff_pct"), d, sizeof d);
		cell_pct(json_array_get(ci, 0), lo, sizeof lo);
		cell_pct(json_array_get(ci, 1), hi, sizeof hi);
		snprintf(range, sizeof range, json_is_array(ci) ? "[%s, %s]" : "-", lo, hi);
		snprintf(p, sizeof p, json_is_number(json_object_get(cmp, "p_value")) ? "%.3g" : "-",
			 json_number_value(json_object_get(cmp, "p_value")));
		table_row(t, metric, bh, ah, d, range, p, json_string_value(json_object_get(cmp, "verdict")));
	}
	table_print(t, stdout);
}

static int show_id(struct cli *c, long long id)
{
	struct http_result r;
	struct query q;
	int rc;

	query_init(&q, "/v1/experiments");
	query_segment_u64(&q, (uint64_t)id);
	/* Not http_show: under --json too the exit status is the experiment's. */
	if ((rc = http_expect(c, "GET", query_path(&q), NULL, &r)) != EXIT_OK)
		return rc;
	if (c->json)
		out_json(r.body);
	else
		print_experiment(r.body);
	rc = !strcmp(json_string_value(json_object_get(r.body, "status")) ?: "", "ok") ? EXIT_OK : EXIT_REFUSED;
	http_result_free(&r);
	return rc;
}

int cmd_experiment_run(struct cli *c, const struct command *cmd, struct args *a)
{
	json_t *body = NULL, *arms = json_array(), *w, *job;
	const json_t *text;
	struct http_result r;
	char err[256];
	long long id;
	size_t i;
	int rc;

	json_array_foreach(a->arms, i, text) {
		json_t *arm = arm_of(json_string_value(text), err, sizeof err);
		if (!arm) {
			json_decref(arms);
			return cli_usage_error(cmd, "%s", err);
		}
		json_array_append_new(arms, arm);
	}
	if (!(w = workload_of(c, cmd, a, &rc))) {
		json_decref(arms);
		return rc;
	}
	/* Counts go as given: the daemon judges them (rounds 0 is its refusal, not ours). */
	body = json_pack("{s:o, s:o}", "arms", arms, "workload", w);
	if (a->rounds.set)
		json_object_set_new(body, "rounds", json_integer((json_int_t)(a->rounds.v > INT_MAX ? INT_MAX : a->rounds.v)));
	if (a->warmup.set)
		json_object_set_new(body, "warmup", json_integer((json_int_t)(a->warmup.v > INT_MAX ? INT_MAX : a->warmup.v)));
	if (a->seed.set)
		json_object_set_new(body, "seed", json_integer((json_int_t)a->seed.v));
	if (a->timeout.set)
		json_object_set_new(body, "timeout_s", json_integer((json_int_t)(a->timeout.v > INT_MAX ? INT_MAX : a->timeout.v)));
	if (a->aa)
		json_object_set_new(body, "allow_identical", json_true());
	rc = http_expect(c, "POST", "/v1/experiments", body, &r);
	json_decref(body);
	if (rc != EXIT_OK)
		return rc;
	id = (long long)json_integer_value(json_object_get(r.body, "id"));
	if (a->no_wait)
		return jobview_queued(c, &r, "experiment");
	http_result_free(&r);
	/* Waiting on this connection is also what lets a program run as you under the privileged
	 * helper: it starts each run only while the connection that asked is open. */
	if ((rc = jobview_wait_for(c, id, &job)) != EXIT_OK)
		return rc;
	json_decref(job);
	return show_id(c, id);
}

int cmd_experiment_show(struct cli *c, const struct command *cmd, struct args *a)
{
	uint64_t id;
	int rc;

	if ((rc = cli_id(cmd, "an experiment ID", a->pos[0], &id)) != EXIT_OK)
		return rc;
	return show_id(c, (long long)id);
}

int cmd_experiment_list(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	struct table *t;
	const json_t *x;
	size_t i;
	int rc;

	(void)cmd;
	(void)a;
	if ((rc = http_show(c, "GET", "/v1/experiments", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(3, (const char *const[]){ "ID", "STATUS", "SUMMARY" });
	json_array_foreach(json_object_get(r.body, "experiments"), i, x) {
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(x, "id")));
		table_row(t, id, json_string_value(json_object_get(x, "status")),
			  json_string_value(json_object_get(x, "summary")) ?: "");
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_experiment_samples(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	struct query q;
	struct table *t;
	const json_t *s;
	uint64_t id;
	size_t i;
	int rc;

	if ((rc = cli_id(cmd, "an experiment ID", a->pos[0], &id)) != EXIT_OK)
		return rc;
	query_init(&q, "/v1/experiments");
	query_segment_u64(&q, id);
	query_segment(&q, "samples");
	if ((rc = http_show(c, "GET", query_path(&q), NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(6, (const char *const[]){ "SEQ", "ROUND", "WARMUP", "ARM", "METRIC", "VALUE" });
	json_array_foreach(json_object_get(r.body, "samples"), i, s) {
		char seq[24], round[24], v[48];
		snprintf(seq, sizeof seq, "%lld", (long long)json_integer_value(json_object_get(s, "seq")));
		snprintf(round, sizeof round, "%lld", (long long)json_integer_value(json_object_get(s, "round")));
		cell_num(json_object_get(s, "value"), v, sizeof v);
		table_row(t, seq, round, json_is_true(json_object_get(s, "warmup")) ? "yes" : "no",
			  json_string_value(json_object_get(s, "arm")), json_string_value(json_object_get(s, "metric")), v);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_experiment_cancel(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	struct query q;
	uint64_t id;
	int rc;

	if ((rc = cli_id(cmd, "an experiment ID", a->pos[0], &id)) != EXIT_OK)
		return rc;
	query_init(&q, "/v1/experiments");
	query_segment_u64(&q, id);
	if ((rc = http_show(c, "DELETE", query_path(&q), NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	printf("experiment %llu: cancel asked; it stops before its next run, its settings put back\n",
	       (unsigned long long)id);
	http_result_free(&r);
	return EXIT_OK;
}

static void print_evidence(const char *label, const json_t *list)
{
	const json_t *ev;
	size_t i;

	json_array_foreach(list, i, ev) {
		const json_t *ci = json_object_get(ev, "ci95_pct"), *w = json_object_get(ev, "workload");
		out_line(stdout, "    %s %s %+.1f %% [%+.1f, %+.1f], p %.3g (experiment %lld, %s, %lld rounds)", label,
			 json_string_value(json_object_get(ev, "metric")),
			 json_number_value(json_object_get(ev, "median_diff_pct")), json_number_value(json_array_get(ci, 0)),
			 json_number_value(json_array_get(ci, 1)), json_number_value(json_object_get(ev, "p_value")),
			 (long long)json_integer_value(json_object_get(ev, "experiment")),
			 json_is_string(json_object_get(w, "probe")) ? json_string_value(json_object_get(w, "probe"))
			 : json_string_value(json_array_get(json_object_get(w, "argv"), 0)) ?: "?",
			 (long long)json_integer_value(json_object_get(ev, "rounds")));
	}
}

/* Does the profile's dry run (keys with knob and values) set knob to value? */
static bool profile_sets(const json_t *diff, const char *knob, const char *value)
{
	const json_t *k, *v;
	size_t i, j;

	json_array_foreach(json_object_get(diff, "keys"), i, k) {
		if (strcmp(json_string_value(json_object_get(k, "knob")) ?: "", knob))
			continue;
		json_array_foreach(json_object_get(k, "values"), j, v)
			if (!strcmp(json_string_value(v) ?: "", value))
				return true;
	}
	return false;
}

/* advise --apply NAME: the advice's knob fragments against profile NAME through the profile
 * apply's dry run (nothing is written): which advice the profile carries, which it lacks, and what
 * an apply would do. EXIT_OK when it carries all of it. */
static int advise_apply(struct cli *c, const struct command *cmd, const char *advice_path, const char *name)
{
	struct http_result adv, dry;
	const json_t *ad;
	json_t *body;
	size_t i;
	int rc, lacks = 0, called;

	if ((rc = http_expect(c, "GET", advice_path, NULL, &adv)) != EXIT_OK)
		return rc;
	body = json_pack("{s:s, s:b}", "name", name, "dry_run", 1);
	called = http_call(c, "POST", "/v1/profile", body, &dry);
	json_decref(body);
	if (called == 0 && dry.status == 404 &&
	    !strcmp(json_string_value(json_object_get(dry.body, "code")) ?: "", mp_code_name(MPE_REQUEST_NOT_FOUND))) {
		http_result_free(&dry);
		http_result_free(&adv);
		out_error("this daemon has no profile apply (POST /v1/profile): nothing checked; `mempolicyctl "
			  "profile diff %s` shows what the profile would change", name);
		return EXIT_REFUSED;
	}
	if ((rc = http_judge(c, called, &dry)) != EXIT_OK) {
		http_result_free(&adv);
		return rc;
	}
	(void)cmd;
	json_array_foreach(json_object_get(adv.body, "advice"), i, ad) {
		const char *frag = json_string_value(json_object_get(ad, "profile_fragment"));
		char line[256];

		/* "[knobs]\nKNOB = VALUE\n...": each knob line against the profile */
		for (const char *l = frag ? strchr(frag, '\n') : NULL; l && l[1]; l = strchr(l + 1, '\n')) {
			char knob[128], value[128];
			snprintf(line, sizeof line, "%.*s", (int)strcspn(l + 1, "\n"), l + 1);
			if (sscanf(line, "%127s = %127s", knob, value) != 2)
				continue;
			bool has = profile_sets(dry.body, knob, value);
			lacks += !has;
			out_line(stdout, "%s %s: %s = %s (advised over %s)", has ? "carries" : "LACKS  ", name, knob, value,
				 json_string_value(json_object_get(ad, "instead_of")));
		}
	}
	if (c->json)
		out_json(dry.body);
	else
		out_line(stdout, "dry run of %s: %lld keys would be written, nothing was; `mempolicyctl profile apply %s` "
			 "applies it", name, (long long)json_integer_value(json_object_get(json_object_get(dry.body, "summary"),
										    "differs")), name);
	http_result_free(&dry);
	http_result_free(&adv);
	return lacks ? EXIT_REFUSED : EXIT_OK;
}

int cmd_advise(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	struct query q;
	const json_t *ad;
	size_t i;
	int rc;

	(void)cmd;
	query_init(&q, "/v1/advice");
	if (a->floor.set)
		query_arg_u64(&q, "floor_pct", a->floor.v);
	if (a->apply)
		return advise_apply(c, cmd, query_path(&q), a->apply);
	if ((rc = http_show(c, "GET", query_path(&q), NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	out_line(stdout, "from %lld experiments on this host (%s), floor %.0f %% at 95 %%; nothing is applied",
		 (long long)json_integer_value(json_object_get(r.body, "experiments_considered")),
		 json_string_value(json_object_get(json_object_get(r.body, "host"), "kernel_release")),
		 json_number_value(json_object_get(r.body, "floor_pct")));
	json_array_foreach(json_object_get(r.body, "advice"), i, ad) {
		const char *frag = json_string_value(json_object_get(ad, "profile_fragment"));
		out_line(stdout, "%s", json_string_value(json_object_get(ad, "setting")));
		out_line(stdout, "  instead of %s", json_string_value(json_object_get(ad, "instead_of")));
		print_evidence("better:", json_object_get(ad, "better"));
		print_evidence("costs: ", json_object_get(ad, "costs"));
		if (frag) {
			out_line(stdout, "  profile fragment:");
			for (const char *l = frag; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0'))
				out_line(stdout, "    %.*s", (int)strcspn(l, "\n"), l);
		} else
			out_line(stdout, "  (a policy or CPU binding: run the workload under it with `mempolicyctl run`)");
	}
	json_array_foreach(json_object_get(r.body, "contradictions"), i, ad) {
		out_line(stdout, "contradiction: %s vs %s", json_string_value(json_array_get(json_object_get(ad, "settings"), 0)),
			 json_string_value(json_array_get(json_object_get(ad, "settings"), 1)));
		print_evidence("first better: ", json_object_get(ad, "first_better"));
		print_evidence("second better:", json_object_get(ad, "second_better"));
	}
	if (!json_array_size(json_object_get(r.body, "advice")) && !json_array_size(json_object_get(r.body, "contradictions")))
		out_line(stdout, "no setting was better beyond the floor");
	http_result_free(&r);
	return EXIT_OK;
}
