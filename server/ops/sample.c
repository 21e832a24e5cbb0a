#include "server/ops/sample.h"

#include <sys/wait.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/ops/processes.h"
#include "server/store/db.h"
#include "server/store/procs.h"

#define KIND "process.sample"

void sample_record(const struct app *app, const struct child_info *ci, unsigned seq, const int *wait_status)
{
	json_t *req = json_pack("{s:i, s:I, s:I, s:i, s:s}", "pid", (int)ci->pid, "start_time",
				(json_int_t)ci->start_time, "launch_operation_id", (json_int_t)ci->launch_op_id, "seq",
				(int)seq, "source", "watch");
	json_t *res = json_pack("{s:i, s:I}", "pid", (int)ci->pid, "start_time", (json_int_t)ci->start_time);
	int64_t now = clk_wall_ns();
	struct op_record op = {
		.kind = KIND, .source = "watch", .has_actor = ci->has_uid, .actor_uid = ci->actor_uid,
		.actor_name = ci->actor_name, .started_ns = now, .finished_ns = now, .status = "ok",
		.request = req, .result = res, .kernel_release = app->caps.kernel_release,
	};
	mp_err e = { 0 };

	if (wait_status) {
		json_object_set_new(res, "exited", WIFSIGNALED(*wait_status)
			? json_pack("{s:i}", "signal", WTERMSIG(*wait_status))
			: json_pack("{s:i}", "code", WEXITSTATUS(*wait_status)));
	}
	/* While the process runs, the sample is its placement (the shape GET /v1/processes/{pid}
	 * answers without mappings), read for this very process: a pid reused since is not read. */
	if (!wait_status && res) {
		struct placement p;
		mp_err pe = { 0 };
		int rc = process_read_for(app, ci->pid, ci->start_time, PL_NO_ENDS, NULL, NULL, &p, &pe);
		if (rc == 0 && p.n_mappings) {
			json_t *pj = placement_json(&p);
			if (pj)
				json_object_update(res, pj);
			json_decref(pj);
			pl_free(&p);
		} else if (rc == 0) {
			/* A live process always maps something: none means its memory is gone already
			 * (it is exiting, between exit_mm and the zombie the watcher then collects; the
			 * helper's round trip under --user makes that window easier to land in). */
			pl_free(&p);
			json_object_set_new(res, "placement_error", json_string("the process is exiting: no memory map left"));
		} else {
			json_object_set_new(res, "placement_error", json_string(pe.detail));
		}
	}
	if (!req || !res)
		log_error("pid %d: sample %u: out of memory", (int)ci->pid, seq);
	else if (procs_db_record(app->store, &op, &e) < 0)
		log_error("pid %d: recording sample %u: %s", (int)ci->pid, seq, e.detail);
	json_decref(req);
	json_decref(res);
}
