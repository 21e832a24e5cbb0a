/* /v1/processes/{pid}: where a process's memory is (read-only; launching, migrating and
 * collapsing are proc-act's, in the same resource), and its samples over time from history. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/api/api.h"
#include "server/clock.h"
#include "server/ops/processes.h"
#include "server/store/db.h"
#include "server/store/samples.h"

static void caller_of(const struct req *rq, struct proc_caller *who)
{
	who->known = rq->who.known;
	who->admin = rq->who.admin;
	who->uid = rq->who.uid;
	who->name = rq->who.name;
	who->source = "api";
}

/* GET /v1/processes/{pid}?start_time=T&mappings=false&sample=true */
int api_process_get(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "start_time", "mappings", "sample", NULL };
	struct proc_caller who;
	struct placement p;
	bool mappings = true, sample = false;
	uint64_t start = 0;
	int64_t started_ns = clk_wall_ns(), op_id = 0;
	pid_t pid;
	json_t *out;

	caller_of(rq, &who);
	if (req_query_only(rq, allowed, e) < 0 || process_pid_parse(rq->param[0], &pid, e) < 0 ||
	    req_query_u64(rq, "start_time", 1, INT64_MAX, &start, e) < 0 ||
	    req_query_bool(rq, "mappings", &mappings, e) < 0 || req_query_bool(rq, "sample", &sample, e) < 0)
		return -1;
	/* Who may see it is judged before anything only the privileged side may open is opened. */
	if (process_read_for(rq->app, pid, start, mappings ? 0 : PL_NO_ENDS, &who, process_may_read, &p, e) < 0)
		return -1;
	if (sample && (op_id = process_sample_record(rq->app, &who, &p, started_ns, e)) < 0)
		goto fail;
	if (!(out = placement_json(&p))) {
		mp_nomem(e);
		goto fail;
	}
	if (sample)
		json_object_set_new(out, "operation_id", json_integer(op_id));
	if (mappings) {
		/* 100 000 mappings are 17 MB: written as text, not built as a tree (ops/processes_text.c). */
		size_t len;
		char *text = placement_text(&p, out, &len);   /* owned until req_reply_text */
		pl_free(&p);
		if (!text)
			return mp_nomem(e);
		return req_reply_text(rq, text, len, "application/json");
	}
	pl_free(&p);
	return req_reply(rq, 200, out);
fail:
	pl_free(&p);
	return -1;
}

/* GET /v1/processes/{pid}/samples?start_time=T&limit=N: the process.sample operations of one
 * process, oldest first. Without start_time: the live process with this pid, else the last one
 * sampled. Open like /v1/history, where the same records are: summaries carry no addresses. */
int api_process_samples(struct req *rq, mp_err *e)
{
	static const char *const allowed[] = { "start_time", "limit", NULL };
	uint64_t start = 0, limit = 100;
	pid_t pid;
	json_t *samples;

	if (req_query_only(rq, allowed, e) < 0 || process_pid_parse(rq->param[0], &pid, e) < 0 ||
	    req_query_u64(rq, "start_time", 1, INT64_MAX, &start, e) < 0 ||
	    req_query_u64(rq, "limit", 1, 10000, &limit, e) < 0)
		return -1;
	if (!start && process_samples_start(rq->app, pid, &start, e) < 0)
		return -1;
	if (!(samples = samples_list(rq->app->store, pid, start, (int)limit, e)))
		return -1;
	return req_reply(rq, 200, json_pack("{s:i, s:I, s:o}", "pid", (int)pid, "start_time", (json_int_t)start,
					    "samples", samples));
}
