#include "server/ops/cgroups.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "server/clock.h"
#include "server/kernel/cgroup.h"
#include "server/kernel/topology.h"
#include "server/priv/act.h"
#include "server/store/db.h"
#include "server/store/procs.h"

/* One cpuset.mems change at a time, from validation to its record, so a parent's effective mems
 * cannot change between the check and the write by our own hand, and history order is the order
 * of the writes. */
static pthread_mutex_t cg_lock = PTHREAD_MUTEX_INITIALIZER;

static int hier(const struct app *app, struct cg_hier *h, mp_err *e)
{
	if (cg_detect(app->sysfs_root, h) < 0)
		return mp_fail(e, MPE_CGROUP_UNAVAILABLE, ENOENT,
			       "no cpuset controller is mounted under %s/fs/cgroup (v2 with cpuset, or v1 cpuset)",
			       app->sysfs_root);
	return 0;
}

/* The path as text, before anything is looked at: a bad path is 400 on any host. */
static int check_path(const char *path, mp_err *e)
{
	if (cg_path_check(path) < 0)
		return mp_fail(e, MPE_CGROUP_BAD_PATH, EINVAL,
			       "a cgroup path is names of 1 to 255 bytes separated by single '/': no '..', '.', "
			       "empty segment, leading or trailing '/', or control character");
	return 0;
}

/* Opens a checked path: the fd, or -1 with the problem. */
static int open_cg(const struct app *app, const struct cg_hier *h, const char *path, mp_err *e)
{
	int fd;

	if (check_path(path, e) < 0)
		return -1;
	fd = cg_open(app->sysfs_root, h, path);
	if (fd >= 0)
		return fd;
	if (fd == -ENOENT)
		return mp_fail(e, MPE_CGROUP_NOT_FOUND, ENOENT, "no cgroup %.200s", path);
	if (fd == -ELOOP || fd == -ENOTDIR)
		return mp_fail(e, MPE_CGROUP_BAD_PATH, -fd, "%.200s: a symlink or a file on the way (never followed)",
			       path);
	return mp_fail(e, MPE_CGROUP_NOT_FOUND, -fd, "cgroup %.200s cannot be opened: %s", path, strerror(-fd));
}

static int read_cg(int fd, const struct cg_hier *h, const char *path, struct cg_state *st, mp_err *e)
{
	int rc = cg_read(fd, h, !*path, st);
	if (rc < 0)
		return mp_fail(e, MPE_CGROUP_NOT_FOUND, -rc, "cgroup %.200s cannot be read: %s", path, strerror(-rc));
	return 0;
}

static json_t *state_json(const struct cg_hier *h, const char *path, const struct cg_state *st)
{
	return json_pack("{s:s, s:i, s:s, s:b, s:b, s:o, s:o, s:o, s:I}", "path", path, "version", h->version,
			 "mount", h->mount_rel, "root", st->is_root, "cpuset", st->cpuset,
			 "mems", st->cpuset && !st->is_root ? json_string(st->mems) : json_null(),
			 "mems_effective", st->cpuset ? json_string(st->effective) : json_null(),
			 "memory_migrate", st->memory_migrate < 0 ? json_null() : json_boolean(st->memory_migrate),
			 "procs", (json_int_t)st->procs);
}

json_t *cgroup_get(const struct app *app, const char *path, mp_err *e)
{
	struct cg_hier h;
	struct cg_state st;
	char **names = NULL;
	size_t n = 0;
	json_t *out = NULL, *kids;
	int fd, rc;

	if (check_path(path, e) < 0 || hier(app, &h, e) < 0 || (fd = open_cg(app, &h, path, e)) < 0)
		return NULL;
	if (read_cg(fd, &h, path, &st, e) < 0)
		goto out;
	if ((rc = cg_children(fd, &names, &n)) < 0) {
		mp_fail(e, MPE_CGROUP_NOT_FOUND, -rc, "cgroup %.200s cannot be listed: %s", path, strerror(-rc));
		goto out;
	}
	kids = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(kids, json_string(names[i]));
	if ((out = state_json(&h, path, &st)))
		json_object_set_new(out, "children", kids);
	else
		json_decref(kids);
	if (!out)
		mp_nomem(e);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(fd);
	return out;
}

/* The body: exactly {"mems": string}; the nodes parsed, online with memory, and within the
 * parent's effective mems. */
static int validate(const struct app *app, json_t *body, const struct cg_state *parent, const char **text,
		    idset *nodes, mp_err *e)
{
	json_t *v = json_object_get(body, "mems");
	const char *key;
	json_t *val;
	struct topology *t = NULL;
	int rc = -1;

	json_object_foreach(body, key, val)
		if (strcmp(key, "mems"))
			return mp_fail(e, MPE_REQUEST_UNKNOWN_FIELD, 0, "unknown field: %.64s (the body is {\"mems\": \"0-1\"})",
				       key);
	if (!v)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "mems is required (a node list such as \"0-1\")");
	if (!json_is_string(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "mems takes a string, a node list such as \"0-1\"");
	*text = json_string_value(v);
	idset_clear(nodes);
	if (!**text)
		return 0; /* empty: v2 inherits; v1 refuses it for a populated cpuset (ENOSPC) */
	if (strlen(*text) != json_string_length(v) || idset_parse_client(*text, nodes) < 0)
		return mp_fail(e, MPE_NODES_MALFORMED, EINVAL,
			       "mems must be a node list such as \"0-1,3\" (ascending ranges, ids below %d)", IDSET_MAX);
	if (!(t = malloc(sizeof *t)))
		return mp_nomem(e);
	if ((rc = topo_read(app->sysfs_root, t)) < 0) {
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -rc, "cannot read the NUMA topology");
		rc = -1;
		goto out;
	}
	rc = -1;
	for (unsigned id = 0; id < IDSET_MAX; id++) {
		int i;
		if (!idset_has(nodes, id))
			continue;
		if ((i = topo_index(t, id)) < 0 || !t->nodes[i].has_memory) {
			mp_fail(e, MPE_NODES_NOT_IN_TOPOLOGY, 0, "node %u is %s", id,
				i < 0 ? "not online" : "online but has no memory");
			goto out;
		}
		if (parent && parent->cpuset && !idset_has(&parent->effective_set, id)) {
			mp_fail(e, MPE_CGROUP_BAD_NODES, 0, "node %u is not in the parent cgroup's effective mems (%s)", id,
				parent->effective);
			goto out;
		}
	}
	rc = 0;
out:
	free(t);
	return rc;
}

int cgroup_set_mems(const struct app *app, const struct proc_caller *who, const char *path, json_t *body,
		    json_t **out, mp_err *e)
{
	struct cg_hier h;
	struct cg_state st, parent, after;
	char ppath[CG_PATH_MAX];
	const char *text = NULL, *slash, *status;
	struct op_record op = { 0 };
	json_t *request = NULL, *result = NULL;
	idset nodes;
	int64_t id;
	int fd = -1, pfd = -1, rc = -1, werr;

	*out = NULL;
	pthread_mutex_lock(&cg_lock);
	if (check_path(path, e) < 0 || hier(app, &h, e) < 0 || (fd = open_cg(app, &h, path, e)) < 0)
		goto out;
	if (!*path) {
		mp_fail(e, MPE_CGROUP_ROOT, 0, "the root cgroup's mems cannot be set (it has every node)");
		goto out;
	}
	if (read_cg(fd, &h, path, &st, e) < 0)
		goto out;
	if (!st.cpuset) {
		mp_fail(e, MPE_CGROUP_UNAVAILABLE, ENOENT,
			"cgroup %.200s has no cpuset.mems: its parent does not enable cpuset (cgroup.subtree_control)", path);
		goto out;
	}
	slash = strrchr(path, '/');
	snprintf(ppath, sizeof ppath, "%.*s", slash ? (int)(slash - path) : 0, path);
	if ((pfd = open_cg(app, &h, ppath, e)) < 0 || read_cg(pfd, &h, ppath, &parent, e) < 0)
		goto out;
	if (validate(app, body, &parent, &text, &nodes, e) < 0)
		goto out;

	request = json_pack("{s:s, s:s}", "path", path, "mems", text);
	op.kind = "cgroup.mems";
	op.source = who->source ? who->source : "api";
	op.has_actor = who->known;
	op.actor_uid = who->uid;
	op.actor_name = who->name;
	op.started_ns = clk_wall_ns();
	op.status = "running";
	op.request = request;
	op.kernel_release = app->caps.kernel_release;
	if (!request) {
		mp_nomem(e);
		goto out;
	}
	if ((id = procs_db_begin(app->store, &op, e)) < 0)
		goto out;

	werr = -act_cg_mems(fd, text);
	if (cg_read(fd, &h, false, &after) < 0)
		after = st;
	status = werr ? "failed" : "ok";
	result = json_pack("{s:i, s:s, s:s, s:s, s:s, s:o}", "version", h.version, "mems_before", st.mems,
			   "mems_after", after.mems, "effective_before", st.effective, "effective_after", after.effective,
			   "memory_migrate", after.memory_migrate < 0 ? json_null() : json_boolean(after.memory_migrate));
	if (werr)
		mp_fail(e, MPE_CGROUP_KERNEL_REFUSED, werr, "the kernel refused cpuset.mems = \"%.64s\" for %.200s: %s",
			text, path, strerror(werr));
	{
		mp_err se = { 0 };
		if (procs_db_finish(app->store, id, status, werr, werr ? e->detail : NULL, result, &se) < 0) {
			/* Written but not recorded: put the old mems back, as knobs do, and say so. */
			if (!werr)
				act_cg_mems(fd, st.mems);
			*e = se;
			status = "undone";
			werr = se.sys_errno;
		}
	}
	*out = json_pack("{s:I, s:s, s:s, s:O}", "operation_id", (json_int_t)id, "status", status, "path", path,
			 "result", result);
	if (!werr && strcmp(status, "undone")) {
		json_t *cur = state_json(&h, path, &after);
		json_object_update(*out, cur);
		json_decref(cur);
		rc = 0;
	}
out:
	pthread_mutex_unlock(&cg_lock);
	json_decref(request);
	json_decref(result);
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	return rc;
}
