#include "server/ops/processes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"
#include "server/clock.h"
#include "server/kernel/proc.h"
#include "server/priv/act.h"
#include "server/store/db.h"
#include "server/store/procs.h"
#include "server/store/samples.h"

int process_pid_parse(const char *s, pid_t *pid, mp_err *e)
{
	uint64_t v;

	/* One spelling, as for every id in a path (api/request.c's req_path_id): "01" is no pid. */
	if (parse_u64_canonical(s, &v) < 0 || v < 1 || v > PROC_PID_MAX)
		return mp_fail(e, MPE_PROCESS_BAD_PID, 0, "a pid is a decimal number from 1 to %d, without leading zeros",
			       PROC_PID_MAX);
	*pid = (pid_t)v;
	return 0;
}

struct gate_arg {
	const struct app *app;             /* borrowed */
	const struct proc_caller *who;     /* borrowed */
	process_rule rule;
	mp_err *e;                         /* borrowed: the rule's refusal */
};

static int gate_may(void *arg, const struct placement *p)
{
	const struct gate_arg *g = arg;

	return g->rule(g->app, g->who, p, g->e) < 0 ? PL_REFUSED : 0;
}

int process_read(const struct app *app, pid_t pid, uint64_t expect_start, struct placement *p, mp_err *e)
{
	return process_read_for(app, pid, expect_start, 0, NULL, NULL, p, e);
}

int process_read_for(const struct app *app, pid_t pid, uint64_t expect_start, unsigned flags,
		     const struct proc_caller *who, process_rule rule, struct placement *p, mp_err *e)
{
	struct gate_arg g = { .app = app, .who = who, .rule = rule, .e = e };
	struct pl_gate gate = { .may = gate_may, .arg = &g };
	bool judged = who && rule && !who->admin;
	int rc = pl_read_gated(app->procfs_root, act_proc_open, pid, expect_start, flags, judged ? &gate : NULL, p);

	switch (rc) {
	case 0:
		return 0;
	case PL_REFUSED:
		return -1;
	case -ESRCH:
		return mp_fail(e, MPE_PROCESS_NOT_FOUND, ESRCH, "no process %d (or it exited while being read)", (int)pid);
	case -ESTALE:
		if (expect_start)
			return mp_fail(e, MPE_PROCESS_CHANGED, 0,
				       "pid %d now names another process than the one started at %" PRIu64, (int)pid,
				       expect_start);
		/* The process exited and its pid was reused between the first and last read. */
		return mp_fail(e, MPE_PROCESS_NOT_FOUND, ESRCH, "process %d exited while being read", (int)pid);
	case -ENOMEM:
		return mp_nomem(e);
	case -EACCES:
	case -EPERM:
		return mp_fail(e, MPE_PROCESS_DENIED, -rc, "the kernel refuses the daemon process %d's files: %s",
			       (int)pid, strerror(-rc));
	case -EINVAL:
		return mp_fail(e, MPE_PROCESS_UNREADABLE, EINVAL,
			       "process %d: a line of its procfs files (line %d) has a shape the daemon does not know",
			       (int)pid, p->bad_line);
	default:
		return mp_fail(e, MPE_PROCESS_UNREADABLE, -rc, "process %d: %s", (int)pid, strerror(-rc));
	}
}

int process_may_read(const struct app *app, const struct proc_caller *who, const struct placement *p, mp_err *e)
{
	(void)app;
	if (who->admin)
		return 0;
	if (!who->known)
		return mp_fail(e, MPE_AUTH_FORBIDDEN, 0,
			       "process placement shows addresses and files: only a local caller may read it");
	if (p->uid == (long)who->uid && p->euid == (long)who->uid && p->suid == (long)who->uid)
		return 0;
	return mp_fail(e, MPE_AUTH_FORBIDDEN, 0,
		       "process %d is not yours: only root, the admin group or its own user may read it",
		       (int)p->pid);
}

static json_t *nodes_text(const idset *s)
{
	char buf[4096];
	return json_string(idset_format(s, buf, sizeof buf) < 0 ? "" : buf);
}

static json_t *share(uint64_t part, uint64_t whole)
{
	return whole ? json_real((double)part / (double)whole) : json_null();
}

static json_t *flags_json(unsigned f)
{
	json_t *a = json_array();
	if (f & PL_F_STATIC)
		json_array_append_new(a, json_string("static"));
	if (f & PL_F_RELATIVE)
		json_array_append_new(a, json_string("relative"));
	if (f & PL_F_BALANCING)
		json_array_append_new(a, json_string("balancing"));
	return a;
}

static json_t *node_json(const struct placement *p, const struct pl_node *n)
{
	json_t *h = json_object();
	char sz[32];

	for (int i = 0; i < p->n_hsizes; i++) {
		format_size_kb(p->hsize_kb[i], sz, sizeof sz);
		json_object_set_new(h, sz, json_pack("{s:I, s:I}", "pages", (json_int_t)n->hugetlb_pages[i], "bytes",
						     (json_int_t)(n->hugetlb_pages[i] * p->hsize_kb[i] * 1024)));
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:o, s:I}", "node", (json_int_t)n->id,
			 "base_bytes", (json_int_t)n->base_bytes, "thp_bytes", (json_int_t)n->thp_bytes,
			 "hugetlb_bytes", (json_int_t)n->hugetlb_bytes, "hugetlb", h,
			 "total_bytes", (json_int_t)(n->base_bytes + n->thp_bytes + n->hugetlb_bytes));
}

/* Per distinct policy: how many mappings and bytes it governs (summed by pl_summarise). */
static json_t *policies_json(const struct placement *p)
{
	json_t *a = json_array();

	for (size_t i = 0; i < p->n_policies; i++) {
		const struct pl_policy *pol = &p->policies[i];
		json_array_append_new(a, json_pack("{s:s, s:s, s:o, s:o, s:b, s:I, s:I, s:o}", "policy", pol->text,
						   "mode", pl_mode_name(pol->mode), "flags", flags_json(pol->flags),
						   "nodes", pol->names_nodes ? nodes_text(&pol->nodes) : json_null(),
						   "maybe_truncated", pol->maybe_truncated, "mappings", (json_int_t)pol->mappings,
						   "bytes", (json_int_t)pol->bytes,
						   "locality", pol->names_nodes ? share(pol->local_bytes, pol->bytes) : json_null()));
	}
	return a;
}

json_t *placement_json(const struct placement *p)
{
	json_t *nodes = json_array(), *out;
	uint64_t base = 0, hugetlb = 0, resident_mappings = 0;

	for (int i = 0; i < p->n_nodes; i++) {
		json_array_append_new(nodes, node_json(p, &p->nodes[i]));
		base += p->nodes[i].base_bytes;
		hugetlb += p->nodes[i].hugetlb_bytes;
	}
	for (size_t i = 0; i < p->n_mappings; i++)
		resident_mappings += p->mappings[i].pages > 0;
	out = json_pack("{s:i, s:I, s:s, s:I, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}, "
			"s:{s:I, s:I, s:o}, s:o}",
			"pid", (int)p->pid, "start_time", (json_int_t)p->start_time, "name", p->name,
			"uid", (json_int_t)p->uid,
			"mems_allowed", p->have_mems_allowed ? nodes_text(&p->mems_allowed) : json_null(),
			"nodes", nodes,
			"totals", "resident_bytes", (json_int_t)p->resident_bytes, "base_bytes", (json_int_t)base,
			"thp_bytes", (json_int_t)(p->smaps_read ? p->thp_bytes : p->rollup_thp_kb * 1024),
			"thp_unattributed_bytes", (json_int_t)p->thp_unattributed_bytes,
			"hugetlb_bytes", (json_int_t)hugetlb, "rollup_thp_bytes", (json_int_t)(p->rollup_thp_kb * 1024),
			"mappings", (json_int_t)p->n_mappings, "resident_mappings", (json_int_t)resident_mappings,
			"smaps_read", p->smaps_read,
			"locality", "policy_bytes", (json_int_t)p->policy_bytes,
			"on_policy_nodes_bytes", (json_int_t)p->policy_local_bytes,
			"share", share(p->policy_local_bytes, p->policy_bytes),
			"policies", policies_json(p));
	return out;
}

int64_t process_sample_record(const struct app *app, const struct proc_caller *who, const struct placement *p,
			      int64_t started_ns, mp_err *e)
{
	struct op_record op = { 0 };
	json_t *request = json_pack("{s:i, s:I}", "pid", (int)p->pid, "start_time", (json_int_t)p->start_time);
	json_t *result = placement_json(p);
	int64_t id = -1;

	if (!request || !result) {
		mp_nomem(e);
		goto out;
	}
	op.kind = "process.sample";
	op.source = who->source ? who->source : "api";
	op.has_actor = who->known;
	op.actor_uid = who->uid;
	op.actor_name = who->name;
	op.started_ns = started_ns;
	op.finished_ns = clk_wall_ns();
	op.status = "ok";
	op.request = request;
	op.result = result;
	op.kernel_release = app->caps.kernel_release;
	id = procs_db_record(app->store, &op, e);
out:
	json_decref(request);
	json_decref(result);
	return id;
}

int process_samples_start(const struct app *app, pid_t pid, uint64_t *start, mp_err *e)
{
	/* Only the start time is wanted: stat, not a placement read. */
	*start = 0;
	if (proc_start_time(app->procfs_root, pid, start) < 0 && samples_last_start_time(app->store, pid, start, e) < 0)
		return -1;
	if (!*start)
		return mp_fail(e, MPE_PROCESS_NOT_FOUND, 0, "no process %d and no samples of one", (int)pid);
	return 0;
}
