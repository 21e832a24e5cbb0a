/* Launching a program under a memory policy (POST /v1/processes): validate everything first (a bad
 * request starts nothing and records nothing), record a running process.launch operation, fork and
 * set the child up as the caller (kernel/spawn.c), and finish the operation with the pid and its
 * start time, or with the step and errno the kernel refused. The launched process is then watched
 * until it exits (ops/children.c): reaped, and sampled when the request asked for it. */
#ifndef MPD_OPS_LAUNCH_H
#define MPD_OPS_LAUNCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/parse.h"
#include "server/kernel/spawn.h"

struct app;
struct topology;

/* The caller, as the API knows it (SO_PEERCRED and SO_PEERGROUPS). */
struct launch_who {
	bool known;                  /* false over TCP: no identity, so no launch */
	uid_t uid;
	gid_t gid;
	const char *name;            /* borrowed; "" when the uid has no name */
	const gid_t *groups;         /* borrowed: the caller's supplementary groups */
	size_t ngroups;
	int conn_fd;                 /* borrowed: the caller's connection, which the privileged helper
	                              * accepted and knows the client of; -1 when none */
};

/* A validated launch request. Everything the forked child reads is here, allocated before fork. */
struct launch_req {
	char **argv;                 /* owned, NULL-terminated */
	char **envp;                 /* owned, NULL-terminated "KEY=value" */
	char *path;                  /* owned: PATH from env, or NULL */
	char *cwd;                   /* owned */
	uid_t uid;
	gid_t gid;
	char user[64];               /* the user's name, "" when none */
	gid_t *groups;               /* owned */
	size_t ngroups;
	cpu_set_t *cpus;             /* owned (CPU_ALLOC), NULL when not asked */
	size_t cpus_size;
	char cpus_text[256];         /* the CPUs as a list, for the record */
	const char *mode;            /* static mode name, NULL when no policy was asked */
	int policy;                  /* mode | flags */
	idset nodes;
	enum spawn_thp thp;
	unsigned interval_ms;        /* 0: not watched (reaped only) */
	json_t *record;              /* owned: the request as recorded (env values left out) */
};

/* Fills r from body, or fails with a 4xx code having changed nothing. */
int launch_parse(const struct app *app, const json_t *body, const struct launch_who *who, struct launch_req *r,
		 mp_err *e);
void launch_req_free(struct launch_req *r);

/* Starts the program. On success *out is {"pid", "start_time", "operation_id", "uid", "gid",
 * "user", "policy", "watch"} (owned by the caller). */
int launch_start(const struct app *app, const json_t *body, const struct launch_who *who, json_t **out, mp_err *e);

/* POST /v1/processes/self: the caller (pid, from SO_PEERCRED) will set the policy, CPUs and THP
 * mode on itself and exec the program, as numactl does: the kernel lets a process set only its own
 * policy, so a program on the caller's terminal, with its stdio and exit status, is the caller's
 * own process. Checked as launch_parse checks a launch (argv, policy, cpus, cpunodes, thp, cwd;
 * env, user and watch are the daemon-started launch's only), recorded as a finished
 * process.launch of pid with "self": true in its result. *out is {"pid", "start_time",
 * "operation_id", "uid", "gid", "user", "policy", "cpus", "watch": null, "self": true, "apply"}
 * (owned by the caller), "apply" being what the caller is to do: {"mode": the set_mempolicy(2)
 * mode with its flags, or null to keep the inherited policy, "nodes": its node list, "cpus": the
 * CPU list for sched_setaffinity(2) or null, "thp": "disable" / "except-advised" / null}. */
int launch_self(const struct app *app, const json_t *body, const struct launch_who *who, pid_t pid, json_t **out,
		mp_err *e);

/* The "policy" object and the "cpus"/"cpunodes" members of a launch, also what a probe takes
 * (ops/probes.c): fill r->mode/policy/nodes and r->cpus/cpus_size/cpus_text, or fail 4xx. */
int launch_parse_policy(const struct app *app, const json_t *p, const struct topology *t, struct launch_req *r,
			mp_err *e);
int launch_parse_cpus(const char *cpus, const char *cpunodes, const struct topology *t, struct launch_req *r,
		      mp_err *e);

/* Node lists from clients: idset_parse_client's strict list form; "" only when allow_empty.
 * 400 MPE_NODES_MALFORMED naming field. */
int launch_parse_nodes(const char *text, const char *field, bool allow_empty, idset *out, mp_err *e);
/* Every node of set must be online in t, and (need_memory) at least one must have memory: 422
 * MPE_NODES_NOT_IN_TOPOLOGY. */
int launch_check_nodes(const struct topology *t, const idset *set, const char *field, bool need_memory,
		       mp_err *e);

#endif
