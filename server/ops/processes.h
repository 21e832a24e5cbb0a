/* Reading processes: placement (kernel/placement.h) as JSON, who may read which process, and the
 * process.sample operation. proc-act's launch watch and migrate before/after use the same calls,
 * so every placement in history has one shape. */
#ifndef MPD_OPS_PROCESSES_H
#define MPD_OPS_PROCESSES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "server/app.h"
#include "server/kernel/placement.h"

struct proc_caller {
	bool known;                  /* false over TCP: no identity */
	bool admin;                  /* root or the admin group */
	uid_t uid;
	const char *name;            /* borrowed; "" when the uid has none */
	const char *source;          /* "api", "watch", ... */
};

/* A pid from client text ("1".."4194304", strict). 0, or -1 with 400 process.bad_pid. */
int process_pid_parse(const char *s, pid_t *pid, mp_err *e);

/* A rule on who may see or act on a process, judged on its stat and status (pid, start time,
 * uids): 0, or -1 with e (403 auth.forbidden). */
typedef int (*process_rule)(const struct app *app, const struct proc_caller *who, const struct placement *p,
			    mp_err *e);

/* Reads pid's placement into *p (pl_free it). expect_start 0: any process with this pid; else it
 * must be that one (409 process.changed). 404 process.not_found when there is none or it exited
 * mid-read; 500 process.unreadable for files the parser refuses. The daemon's own read: no
 * caller to judge. */
int process_read(const struct app *app, pid_t pid, uint64_t expect_start, struct placement *p, mp_err *e);
/* The same for a caller: with pl_read_opts flags (PL_NO_ENDS for a summary without the mapping
 * list), and rule(app, who, ...) judged before any file only the privileged side may open is
 * opened (a caller who may not see the process costs no privileged open) and again after the
 * reads (pl_read_gated). who NULL or an admin: no rule. */
int process_read_for(const struct app *app, pid_t pid, uint64_t expect_start, unsigned flags,
		     const struct proc_caller *who, process_rule rule, struct placement *p, mp_err *e);

/* Who may read a process's placement (its mappings and their addresses): an admin any process;
 * another local caller only a process whose real, effective and saved uid are all its own (the
 * uid part of the kernel's own PTRACE_MODE_READ check for numa_maps); over TCP nobody. 0 or -1
 * with 403 auth.forbidden. A process_rule. */
int process_may_read(const struct app *app, const struct proc_caller *who, const struct placement *p, mp_err *e);

/* The placement as the API shows it without the mapping list: nodes, totals, locality, policies
 * (the shape recorded in history). NULL on out of memory. */
json_t *placement_json(const struct placement *p);
/* The answer with every mapping as JSON text (malloc'd, *len bytes; NULL on out of memory): head
 * (placement_json(p) and any members the caller added; taken) with p's mappings written
 * after it as its last member, "mappings", without building them as a tree (processes_text.c). */
char *placement_text(const struct placement *p, json_t *head, size_t *len);

/* Records a process.sample operation of p (already read) with its summary as the result; the
 * request is {"pid", "start_time"}. Returns the operation id, or -1 with e. */
int64_t process_sample_record(const struct app *app, const struct proc_caller *who, const struct placement *p,
			      int64_t started_ns, mp_err *e);

/* The start time GET /v1/processes/{pid}/samples means without ?start_time=: the live process with
 * this pid, else the last one sampled. 0, or -1 with 404 process.not_found (neither) or the
 * store's error. */
int process_samples_start(const struct app *app, pid_t pid, uint64_t *start, mp_err *e);

#endif
