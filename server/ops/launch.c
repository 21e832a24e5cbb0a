/* POST /v1/processes: validate (launch_req.c) → record a running process.launch → fork and set the
 * child up (act_spawn: kernel/spawn.c, in the helper under --user) → finish the record with the
 * pid and start time → hand the child to its watcher (children.c). */
#include "server/ops/launch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonfields.h"
#include "server/app.h"
#include "server/clock.h"
#include "server/kernel/proc.h"
#include "server/log.h"
#include "server/ops/children.h"
#include "server/priv/act.h"
#include "server/store/db.h"
#include "server/store/procs.h"

#define KIND "process.launch"

static json_t *policy_json(const struct launch_req *r)
{
	char nodes[1024];
	json_t *flags;

	if (!r->mode)
		return json_null();
	flags = json_array();
	if (r->policy & MPD_MPOL_F_STATIC_NODES)
		json_array_append_new(flags, json_string("static"));
	if (r->policy & MPD_MPOL_F_RELATIVE_NODES)
		json_array_append_new(flags, json_string("relative"));
	if (r->policy & MPD_MPOL_F_NUMA_BALANCING)
		json_array_append_new(flags, json_string("balancing"));
	idset_format(&r->nodes, nodes, sizeof nodes);
	return json_pack("{s:s, s:s, s:o}", "mode", r->mode, "nodes", nodes, "flags", flags);
}

/* Through the helper under --user: the child is its, and of another uid than the daemon's. */
static void kill_reap(pid_t pid)
{
	int rc = act_kill(pid);

	if (rc < 0) {
		log_warn("pid %d: cannot kill it after a failed record: %s", (int)pid, strerror(-rc));
		return;
	}
	act_reap(pid, NULL, false);
}

int launch_start(const struct app *app, const json_t *body, const struct launch_who *who, json_t **out, mp_err *e)
{
	struct launch_req r;
	struct spawn_spec s;
	struct child_info ci = { 0 };
	enum spawn_step step;
	json_t *res = NULL;
	int64_t op_id;
	uint64_t start = 0;
	pid_t pid;
	int rc = -1, kr;

	*out = NULL;
	if (launch_parse(app, body, who, &r, e) < 0)
		return -1;
	if (children_reserve(app->children, e) < 0)
		goto out_req;
	struct op_record op = {
		.kind = KIND, .source = "api", .has_actor = true, .actor_uid = who->uid, .actor_name = who->name,
		.started_ns = clk_wall_ns(), .status = "running", .request = r.record,
		.kernel_release = app->caps.kernel_release,
	};
	/* A launch the daemon cannot record is not made. */
	if ((op_id = procs_db_begin(app->store, &op, e)) < 0)
		goto out_slot;
	s = (struct spawn_spec){
		.argv = r.argv, .envp = r.envp, .path = r.path, .cwd = r.cwd, .uid = r.uid, .gid = r.gid,
		.groups = r.groups, .ngroups = r.ngroups, .cpus = r.cpus, .cpus_size = r.cpus_size,
		.set_policy = r.mode != NULL, .policy = r.policy, .thp = r.thp, .peer_fd = who->conn_fd,
	};
	mpol_mask_from(&r.nodes, &s.nodes);
	pid = act_spawn(&s, &step);
	if (pid < 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s: %s", spawn_step_name(step), strerror((int)-pid));
		res = json_pack("{s:s}", "step", spawn_step_name(step));
		if (procs_db_finish(app->store, op_id, "failed", (int)-pid, msg, res, e) < 0)
			goto out_slot;
		mp_fail(e, step == SPAWN_EXEC ? MPE_PROCESS_EXEC_FAILED : MPE_PROCESS_SETUP_FAILED, (int)-pid,
			"starting '%.200s' failed at %s: %s (operation %lld)", r.argv[0], spawn_step_name(step),
			strerror((int)-pid), (long long)op_id);
		goto out_slot;
	}
	/* The start time makes the pid an identity: pids are reused, (pid, start time) is not. */
	if ((kr = proc_start_time(app->procfs_root, pid, &start)) < 0)
		log_warn("pid %d: reading its start time: %s", (int)pid, strerror(-kr));
	res = json_pack("{s:i, s:I, s:I, s:i, s:i, s:s, s:o, s:o, s:o}", "pid", (int)pid, "start_time",
			(json_int_t)start, "operation_id", (json_int_t)op_id, "uid", (int)r.uid, "gid", (int)r.gid,
			"user", r.user, "policy", policy_json(&r), "cpus", r.cpus ? json_string(r.cpus_text) : json_null(),
			"watch", r.interval_ms ? json_pack("{s:i}", "interval_ms", (int)r.interval_ms) : json_null());
	if (!res) {
		kill_reap(pid);
		procs_db_finish(app->store, op_id, "failed", ENOMEM, "out of memory after the start: killed", NULL, e);
		mp_nomem(e);
		goto out_slot;
	}
	if (procs_db_finish(app->store, op_id, "ok", 0, NULL, res, e) < 0) {
		/* Unrecorded, so undone: the row stays "running" as the evidence of the attempt. */
		kill_reap(pid);
		goto out_slot;
	}
	ci = (struct child_info){ .pid = pid, .start_time = start, .launch_op_id = op_id,
				  .interval_ms = r.interval_ms, .has_uid = true, .actor_uid = who->uid };
	snprintf(ci.actor_name, sizeof ci.actor_name, "%s", who->name ? who->name : "");
	children_adopt(app->children, &ci);
	log_info("launched pid %d ('%s') as uid %d, policy %s (operation %lld)", (int)pid, r.argv[0], (int)r.uid,
		 r.mode ? r.mode : "inherited", (long long)op_id);
	*out = res;
	res = NULL;
	rc = 0;
	goto out_req;
out_slot:
	children_release(app->children);
out_req:
	json_decref(res);
	launch_req_free(&r);
	return rc;
}

/* What the caller of a self launch is to set on itself: the kernel's numbers, so that the client
 * keeps no copy of the mode table. */
static json_t *apply_json(const struct launch_req *r)
{
	char nodes[1024];

	idset_format(&r->nodes, nodes, sizeof nodes);
	return json_pack("{s:o, s:s, s:o, s:o}", "mode", r->mode ? json_integer(r->policy) : json_null(), "nodes",
			 nodes, "cpus", r->cpus ? json_string(r->cpus_text) : json_null(), "thp",
			 r->thp == SPAWN_THP_DISABLE ? json_string("disable")
			 : r->thp == SPAWN_THP_EXCEPT_ADVISED ? json_string("except-advised") : json_null());
}

int launch_self(const struct app *app, const json_t *body, const struct launch_who *who, pid_t pid, json_t **out,
		mp_err *e)
{
	static const char *const fields[] = { "argv", "policy", "cpus", "cpunodes", "thp", "cwd", NULL };
	struct launch_req r;
	json_t *res = NULL, *apply = NULL;
	int64_t op_id;
	uint64_t start = 0;
	int rc = -1, kr;

	*out = NULL;
	if (!who->known || pid <= 0)
		return mp_fail(e, MPE_AUTH_FORBIDDEN, 0, "a launch as the caller's own process needs a caller known from "
			       "the Unix socket");
	if (json_only_fields(body, "", fields, e) < 0 || launch_parse(app, body, who, &r, e) < 0)
		return -1;
	/* Read now: (pid, start time) names the caller, whose exec keeps both. Unreadable (another
	 * pid namespace, a procfs root that is not the caller's): recorded as 0, as launch_start does. */
	if ((kr = proc_start_time(app->procfs_root, pid, &start)) < 0)
		log_warn("pid %d: reading its start time: %s", (int)pid, strerror(-kr));
	if (!(res = json_pack("{s:i, s:I, s:i, s:i, s:s, s:o, s:o, s:n, s:b}", "pid", (int)pid, "start_time",
			      (json_int_t)start, "uid", (int)r.uid, "gid", (int)r.gid, "user", r.user, "policy",
			      policy_json(&r), "cpus", r.cpus ? json_string(r.cpus_text) : json_null(), "watch", "self",
			      1)) ||
	    !(apply = apply_json(&r))) {
		mp_nomem(e);
		goto out;
	}
	struct op_record op = {
		.kind = KIND, .source = "api", .has_actor = true, .actor_uid = who->uid, .actor_name = who->name,
		.started_ns = clk_wall_ns(), .status = "ok", .request = r.record, .result = res,
		.kernel_release = app->caps.kernel_release,
	};
	op.finished_ns = op.started_ns;
	/* Recorded before the caller changes anything: a launch the daemon cannot record is refused. */
	if ((op_id = procs_db_record(app->store, &op, e)) < 0)
		goto out;
	json_object_set_new(res, "operation_id", json_integer((json_int_t)op_id));
	json_object_set_new(res, "apply", apply);
	apply = NULL;
	log_info("pid %d ('%s') launches itself as uid %d, policy %s (operation %lld)", (int)pid, r.argv[0], (int)r.uid,
		 r.mode ? r.mode : "inherited", (long long)op_id);
	*out = res;
	res = NULL;
	rc = 0;
out:
	json_decref(res);
	json_decref(apply);
	launch_req_free(&r);
	return rc;
}
