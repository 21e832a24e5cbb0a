/* Validation of a launch request: every field checked, resolved and allocated before anything is
 * forked, so that a bad request starts nothing and records nothing. */
#include "server/ops/launch.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonfields.h"
#include "server/app.h"
#include "server/kernel/topology.h"

#define MAX_ARGS      4096
#define MAX_ENV       4096
#define MAX_GROUPS    1024
#define MIN_INTERVAL  100        /* ms: a numa_maps walk costs about as much as smaps */
#define MAX_INTERVAL  3600000

/* A member that must be a string when present; NULL when absent. */
static int opt_string(const json_t *obj, const char *key, const char *where, const char **out, mp_err *e)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"%s%s\" must be a string", where, key);
	*out = json_string_value(v);
	return 0;
}

int launch_parse_nodes(const char *text, const char *field, bool allow_empty, idset *out, mp_err *e)
{
	if (allow_empty && !*text) {
		idset_clear(out);
		return 0;
	}
	if (strlen(text) > 1024 || idset_parse_client(text, out) < 0)
		return mp_fail(e, MPE_NODES_MALFORMED, EINVAL,
			       "\"%s\" is not a list like \"0-1,3\" (ascending ranges, ids below %d)", field, IDSET_MAX);
	return 0;
}

int launch_check_nodes(const struct topology *t, const idset *set, const char *field, bool need_memory,
		       mp_err *e)
{
	bool memory = false;

	for (int n = idset_next(set, 0); n >= 0; n = idset_next(set, (unsigned)n + 1)) {
		unsigned i = (unsigned)n;
		int ix;
		if ((ix = topo_index(t, i)) < 0)
			return mp_fail(e, MPE_NODES_NOT_IN_TOPOLOGY, 0, "%s: node %u is not online on this host", field, i);
		memory |= t->nodes[ix].has_memory;
	}
	if (need_memory && !memory)
		return mp_fail(e, MPE_NODES_NOT_IN_TOPOLOGY, 0, "%s: none of the nodes has memory", field);
	return 0;
}

/* ---- the policy ----------------------------------------------------------------------------- */

int launch_parse_policy(const struct app *app, const json_t *p, const struct topology *t, struct launch_req *r,
			mp_err *e)
{
	static const char *const fields[] = { "mode", "nodes", "flags", NULL };
	const struct mpol_caps *mc = &app->caps.mpol;
	const struct mpol_mode *m;
	const char *mode, *nodes;
	json_t *flags, *f;
	size_t i;
	int fl = 0;

	if (!json_is_object(p))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"policy\" must be an object");
	if (json_only_fields(p, "policy.", fields, e) < 0 || opt_string(p, "mode", "policy.", &mode, e) < 0 ||
	    opt_string(p, "nodes", "policy.", &nodes, e) < 0)
		return -1;
	if (!mode)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"policy.mode\" is required");
	if (!(m = mpol_mode_by_name(mode)))
		return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "unknown policy mode '%.32s' (bind, preferred, "
			       "preferred-many, interleave, weighted-interleave, local, default)", mode);
	if ((m->mode == MPD_MPOL_PREFERRED_MANY && !mc->preferred_many) ||
	    (m->mode == MPD_MPOL_WEIGHTED_INTERLEAVE && !mc->weighted_interleave))
		return mp_fail(e, MPE_PROCESS_UNSUPPORTED, EINVAL, "this kernel does not accept the %s policy", m->name);
	flags = json_object_get(p, "flags");
	if (flags && !json_is_array(flags))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"policy.flags\" must be an array of strings");
	json_array_foreach(flags, i, f) {
		const char *s = json_string_value(f);
		int bit = !s ? 0 : !strcmp(s, "static") ? MPD_MPOL_F_STATIC_NODES
			: !strcmp(s, "relative") ? MPD_MPOL_F_RELATIVE_NODES
			: !strcmp(s, "balancing") ? MPD_MPOL_F_NUMA_BALANCING : -1;
		if (!s)
			return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"policy.flags\" must be an array of strings");
		if (bit < 0)
			return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "unknown policy flag '%.32s' (static, relative, "
				       "balancing)", s);
		fl |= bit;
	}
	if ((fl & (MPD_MPOL_F_STATIC_NODES | MPD_MPOL_F_RELATIVE_NODES)) && !m->flags_ok)
		return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "the %s policy takes no static/relative flag", m->name);
	if ((fl & MPD_MPOL_F_STATIC_NODES) && (fl & MPD_MPOL_F_RELATIVE_NODES))
		return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "static and relative exclude each other");
	if (fl & MPD_MPOL_F_NUMA_BALANCING) {
		if (m->mode != MPD_MPOL_BIND && m->mode != MPD_MPOL_PREFERRED_MANY)
			return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "balancing goes only with bind or preferred-many");
		if (m->mode == MPD_MPOL_BIND ? !mc->balancing_bind : !mc->balancing_preferred_many)
			return mp_fail(e, MPE_PROCESS_UNSUPPORTED, EINVAL,
				       "this kernel does not accept the balancing flag with %s", m->name);
	}
	idset_clear(&r->nodes);
	if (nodes && launch_parse_nodes(nodes, "policy.nodes", m->nodes != MPOL_NODES_REQUIRED, &r->nodes, e) < 0)
		return -1;
	if (m->nodes == MPOL_NODES_REQUIRED && !nodes)
		return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "the %s policy needs \"nodes\"", m->name);
	if (m->mode == MPD_MPOL_PREFERRED && idset_count(&r->nodes) > 1)
		return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "preferred takes one node (preferred-many takes several)");
	if (m->nodes == MPOL_NODES_NONE && idset_count(&r->nodes))
		return mp_fail(e, MPE_PROCESS_BAD_POLICY, 0, "the %s policy takes no nodes", m->name);
	/* Relative nodes are numbered within the cpuset's nodes, and static ones may name nodes that
	 * come later: only plain lists must name online nodes. */
	if (!(fl & (MPD_MPOL_F_STATIC_NODES | MPD_MPOL_F_RELATIVE_NODES)) && idset_count(&r->nodes) &&
	    launch_check_nodes(t, &r->nodes, "policy.nodes", true, e) < 0)
		return -1;
	r->mode = m->name;
	r->policy = m->mode | fl;
	return 0;
}

/* ---- CPUs ----------------------------------------------------------------------------------- */

int launch_parse_cpus(const char *cpus, const char *cpunodes, const struct topology *t, struct launch_req *r,
		      mp_err *e)
{
	idset want, online;
	unsigned max = 0;

	idset_clear(&online);
	for (int i = 0; i < t->n_nodes; i++)
		for (unsigned c = 0; c < IDSET_MAX; c++)
			if (idset_has(&t->nodes[i].cpus, c)) {
				idset_add(&online, c);
				max = c + 1 > max ? c + 1 : max;
			}
	if (cpus && cpunodes)
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "give \"cpus\" or \"cpunodes\", not both");
	if (cpus) {
		if (launch_parse_nodes(cpus, "cpus", false, &want, e) < 0)
			return -1;
		for (unsigned c = 0; c < IDSET_MAX; c++)
			if (idset_has(&want, c) && !idset_has(&online, c))
				return mp_fail(e, MPE_PROCESS_BAD_CPUS, 0, "cpus: CPU %u is not online on this host", c);
	} else {
		idset nodes;
		if (launch_parse_nodes(cpunodes, "cpunodes", false, &nodes, e) < 0 ||
		    launch_check_nodes(t, &nodes, "cpunodes", false, e) < 0)
			return -1;
		idset_clear(&want);
		for (unsigned n = 0; n < IDSET_MAX; n++)
			if (idset_has(&nodes, n))
				for (unsigned c = 0; c < IDSET_MAX; c++)
					if (idset_has(&t->nodes[topo_index(t, n)].cpus, c))
						idset_add(&want, c);
		if (!idset_count(&want))
			return mp_fail(e, MPE_PROCESS_BAD_CPUS, 0, "cpunodes: the nodes have no CPUs");
	}
	if (!(r->cpus = CPU_ALLOC(max)))
		return mp_nomem(e);
	r->cpus_size = CPU_ALLOC_SIZE(max);
	CPU_ZERO_S(r->cpus_size, r->cpus);
	for (unsigned c = 0; c < max; c++)
		if (idset_has(&want, c))
			CPU_SET_S(c, r->cpus_size, r->cpus);
	idset_format(&want, r->cpus_text, sizeof r->cpus_text);
	return 0;
}

/* ---- identity ------------------------------------------------------------------------------- */

/* Only root may name another user: anyone else runs as themselves, with the groups the socket
 * says they have (not the group database's: a caller who dropped a group stays without it). */
static int parse_user(const json_t *body, const struct launch_who *who, struct launch_req *r, mp_err *e)
{
	json_t *u = json_object_get(body, "user");
	struct passwd pw, *res = NULL;
	char buf[4096];
	int ng = MAX_GROUPS, rc;

	if (!who->known)
		return mp_fail(e, MPE_AUTH_FORBIDDEN, 0, "launching needs a caller known from the Unix socket");
	if (u && !json_is_string(u) && !json_is_integer(u))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"user\" must be a user name or a uid");
	if (u) {
		if (json_is_string(u))
			rc = getpwnam_r(json_string_value(u), &pw, buf, sizeof buf, &res);
		else if (json_integer_value(u) < 0 || json_integer_value(u) >= (json_int_t)UINT32_MAX)
			return mp_fail(e, MPE_PROCESS_BAD_USER, 0, "\"user\": no such uid");
		else
			rc = getpwuid_r((uid_t)json_integer_value(u), &pw, buf, sizeof buf, &res);
		if (rc != 0 || !res)
			return mp_fail(e, MPE_PROCESS_BAD_USER, rc, "\"user\": no such user");
		if (who->uid != 0 && pw.pw_uid != who->uid)
			return mp_fail(e, MPE_AUTH_FORBIDDEN, 0, "only root may launch as another user");
	}
	if (!u || (res && pw.pw_uid == who->uid && who->uid != 0)) {
		r->uid = who->uid;
		r->gid = who->gid;
		snprintf(r->user, sizeof r->user, "%s", who->name ? who->name : "");
		if (!(r->groups = calloc(who->ngroups + 1, sizeof *r->groups)))
			return mp_nomem(e);
		memcpy(r->groups, who->groups, who->ngroups * sizeof *r->groups);
		r->ngroups = who->ngroups;
		return 0;
	}
	r->uid = pw.pw_uid;
	r->gid = pw.pw_gid;
	snprintf(r->user, sizeof r->user, "%s", pw.pw_name);
	if (!(r->groups = calloc(MAX_GROUPS, sizeof *r->groups)))
		return mp_nomem(e);
	if (getgrouplist(pw.pw_name, pw.pw_gid, r->groups, &ng) < 0)
		ng = MAX_GROUPS;   /* more than we keep: the first MAX_GROUPS */
	r->ngroups = (size_t)ng;
	return 0;
}

/* ---- argv, env, cwd, thp, watch -------------------------------------------------------------- */

static int parse_argv(const json_t *a, struct launch_req *r, mp_err *e)
{
	size_t i;
	json_t *v;

	if (!a)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"argv\" (the program and its arguments) is required");
	if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > MAX_ARGS)
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"argv\" must be an array of 1 to %d strings", MAX_ARGS);
	if (!(r->argv = calloc(json_array_size(a) + 1, sizeof *r->argv)))
		return mp_nomem(e);
	json_array_foreach(a, i, v) {
		if (!json_is_string(v))
			return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"argv\" must be an array of strings");
		if (!(r->argv[i] = strdup(json_string_value(v))))
			return mp_nomem(e);
	}
	if (!r->argv[0][0])
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "\"argv[0]\" (the program) is empty");
	return 0;
}

/* The whole environment of the program (the CLI sends its own, as numactl passes it on). */
static int parse_env(const json_t *env, struct launch_req *r, mp_err *e)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	if (env && (!json_is_object(env) || json_object_size(env) > MAX_ENV))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"env\" must be an object of at most %d name: value strings",
			       MAX_ENV);
	if (!(r->envp = calloc((env ? json_object_size(env) : 0) + 1, sizeof *r->envp)))
		return mp_nomem(e);
	json_object_foreach((json_t *)env, k, v) {
		if (!json_is_string(v))
			return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"env\" values must be strings");
		if (!*k || strchr(k, '='))
			return mp_fail(e, MPE_REQUEST_INVALID, 0, "an \"env\" name is empty or contains '='");
		if (asprintf(&r->envp[n++], "%s=%s", k, json_string_value(v)) < 0) {
			r->envp[--n] = NULL;
			return mp_nomem(e);
		}
		if (!strcmp(k, "PATH") && !(r->path = strdup(json_string_value(v))))
			return mp_nomem(e);
	}
	return 0;
}

static int parse_misc(const struct app *app, const json_t *body, struct launch_req *r, mp_err *e)
{
	const char *cwd, *thp;
	json_t *w = json_object_get(body, "watch"), *iv;

	if (opt_string(body, "cwd", "", &cwd, e) < 0 || opt_string(body, "thp", "", &thp, e) < 0)
		return -1;
	if (cwd && (cwd[0] != '/' || strlen(cwd) >= PATH_MAX))
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "\"cwd\" must be an absolute path");
	if (!(r->cwd = strdup(cwd ? cwd : "/")))
		return mp_nomem(e);
	r->thp = SPAWN_THP_DEFAULT;
	if (thp && !strcmp(thp, "disable"))
		r->thp = SPAWN_THP_DISABLE;
	else if (thp && !strcmp(thp, "except-advised")) {
		if (!app->caps.mpol.thp_except_advised)
			return mp_fail(e, MPE_PROCESS_UNSUPPORTED, EINVAL, "this kernel has no PR_THP_DISABLE_EXCEPT_ADVISED "
				       "(6.18): thp \"except-advised\" cannot be set");
		r->thp = SPAWN_THP_EXCEPT_ADVISED;
	} else if (thp && strcmp(thp, "default"))
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "\"thp\" is default, disable or except-advised");
	if (!w || json_is_null(w))
		return 0;
	if (!json_is_object(w) || json_object_size(w) != 1 || !(iv = json_object_get(w, "interval_ms")))
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "\"watch\" is {\"interval_ms\": N}");
	if (!json_is_integer(iv) || json_integer_value(iv) < MIN_INTERVAL || json_integer_value(iv) > MAX_INTERVAL)
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "\"watch.interval_ms\" is an integer from %d to %d",
			       MIN_INTERVAL, MAX_INTERVAL);
	r->interval_ms = (unsigned)json_integer_value(iv);
	return 0;
}

/* What history keeps of the request: everything but the environment's values, which often
 * carry secrets. */
static json_t *record_of(const json_t *body)
{
	json_t *rec = json_deep_copy(body), *env = json_object_get(body, "env"), *names = json_array();
	const char *k;
	json_t *v;

	json_object_foreach(env, k, v)
		json_array_append_new(names, json_string(k));
	if (rec && env)
		json_object_set(rec, "env", names);
	json_decref(names);
	return rec;
}

int launch_parse(const struct app *app, const json_t *body, const struct launch_who *who, struct launch_req *r,
		 mp_err *e)
{
	static const char *const fields[] = { "argv", "policy", "cpus", "cpunodes", "thp", "cwd", "env", "watch",
					      "user", NULL };
	struct topology *t = NULL;
	const char *cpus, *cpunodes;
	json_t *p;
	int rc = -1, kr;

	memset(r, 0, sizeof *r);
	if (json_only_fields(body, "", fields, e) < 0 || parse_argv(json_object_get(body, "argv"), r, e) < 0 ||
	    opt_string(body, "cpus", "", &cpus, e) < 0 || opt_string(body, "cpunodes", "", &cpunodes, e) < 0 ||
	    parse_env(json_object_get(body, "env"), r, e) < 0 || parse_misc(app, body, r, e) < 0)
		goto out;
	if (!(t = malloc(sizeof *t))) {
		mp_nomem(e);
		goto out;
	}
	/* Only what the checks below use: the whole topology was a third of a launch's time in the
	 * daemon (bench/README.md section 8); node/online and has_memory from held files. */
	if ((kr = app->node_masks ? topo_read_nodes_held(app->node_masks, t, cpus || cpunodes)
				  : topo_read_nodes(app->sysfs_root, t, cpus || cpunodes)) < 0) {
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -kr, "reading the topology: %s", strerror(-kr));
		goto out;
	}
	if ((p = json_object_get(body, "policy")) && launch_parse_policy(app, p, t, r, e) < 0)
		goto out;
	if ((cpus || cpunodes) && launch_parse_cpus(cpus, cpunodes, t, r, e) < 0)
		goto out;
	if (parse_user(body, who, r, e) < 0)
		goto out;
	if (!(r->record = record_of(body))) {
		mp_nomem(e);
		goto out;
	}
	rc = 0;
out:
	free(t);
	if (rc < 0)
		launch_req_free(r);
	return rc;
}

void launch_req_free(struct launch_req *r)
{
	for (char **a = r->argv; a && *a; a++)
		free(*a);
	for (char **a = r->envp; a && *a; a++)
		free(*a);
	free(r->argv);
	free(r->envp);
	free(r->path);
	free(r->cwd);
	free(r->groups);
	if (r->cpus)
		CPU_FREE(r->cpus);
	json_decref(r->record);
	memset(r, 0, sizeof *r);
}
