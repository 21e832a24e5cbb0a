/* Privilege separation: a small helper process keeps the privileges the kernel writes need; the
 * daemon (HTTP, JSON, SQLite, jobs) drops to an unprivileged user with no capabilities and asks
 * the helper for each privileged step over a socketpair (server/priv/proto.h).
 *
 * The room: everything of the boundary is in server/priv/ — the wire format and its table of
 * request types (proto.h, helper.c), the serving side's requests (client.c, client_spawn.c), the
 * helper's loop and handlers (helper.c, helper_spawn.c), start, drop and the user (start.c), the
 * helper's capabilities (caps.c). Nothing above calls these requests directly: ops/ and api/ call
 * the facade (act.h), which alone decides between the helper and this process. server/kernel/
 * holds the primitives both sides act with and knows nothing of this directory.
 *
 * The daemon stays the parent and the helper is its child: socket activation (LISTEN_PID),
 * sd_notify from MAINPID and the signals systemd sends all keep naming the process they did
 * before. */
#ifndef MPD_PRIV_PRIV_H
#define MPD_PRIV_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "server/kernel/knobs.h"
#include "server/kernel/mpol.h"
#include "server/kernel/spawn.h"
#include "server/priv/proto.h"

#define PRIV_CHANNELS 4

/* ---- start and drop (start.c) --------------------------------------------------------------- */

/* The user the daemon drops to, looked up before anything forks (NSS may need files the
 * unprivileged side cannot read). */
struct priv_user {
	char name[64];
	uid_t uid;
	gid_t gid;
};
/* 0, or -1 with MPE_CONFIG_USER when there is no such user or it is root. */
int priv_lookup_user(const char *name, struct priv_user *u, mp_err *e);

/* The API's Unix socket as the helper is given it: the serving side keeps the listener and
 * accepts on it (libmicrohttpd, as a single process does); the helper keeps a copy that it never
 * accepts on, to know which file the socket is bound to (server/priv/identity.h). */
struct priv_api {
	int listen_fd;       /* borrowed: the listener (the helper's copy is made by the fork) */
	uid_t serving_uid;   /* the serving side's own user: its connections carry no identity */
};

/* Forks the helper over the catalogue and roots (borrowed; the helper keeps its copy-on-write
 * image of them). Call as root, before any thread starts and before the store is opened: the
 * helper closes every fd but its ends of the socketpairs, its copy of api->listen_fd, and stdio.
 * probe_mem_pct is the share of free memory a probe may take, which the helper checks itself.
 * Without api no connection has an identity, and the helper refuses every launch. 0, or -1 with
 * MPE_PRIV_START. */
int priv_start(const struct knob_catalogue *knobs, const char *sysfs_root, const char *procfs_root, unsigned probe_mem_pct,
	       const struct priv_api *api, mp_err *e);

/* The NFD labels file (--node-labels-file, borrowed: lives as long as the config) the helper
 * forked after this writes on PRIV_LABELS_WRITE, and no other path. Call before priv_start. */
void priv_set_labels_file(const char *path);

/* The calling process becomes u: supplementary groups, gid, uid; every capability set empty
 * (effective, permitted, inheritable, ambient, bounding); no_new_privs. Checked afterwards from
 * the kernel's own view. 0, or -1 with MPE_PRIV_START. */
int priv_drop(const struct priv_user *u, mp_err *e);

/* ---- the serving side's channels and requests (client.c, client_spawn.c) --------------------- */

/* True once priv_start() succeeded in this process (the daemon side, never the helper). */
bool priv_active(void);
/* Stops the helper (closes the socketpair, reaps it). Safe without one. */
void priv_stop(void);
/* The helper's pid while one runs, else -1. */
pid_t priv_helper_pid(void);

/* Fail closed. True once a channel to the helper was lost — EOF or a socket error on it (the
 * helper died or ended its thread), or an answer that was not the request's (type, sequence
 * number, size) — or the helper exited, and true from then on: every request then fails with
 * -EPIPE at once, without being sent, over every channel (one channel lost is the helper lost). */
bool priv_lost(void);
/* Checks whether the helper exited (a SIGCHLD came): marks it lost if so. Returns priv_lost(). */
bool priv_check_helper(void);
/* fn runs once, in the thread that found the helper lost (main.c: it wakes the main thread).
 * Set before the first request. */
void priv_on_lost(void (*fn)(void));
/* Requests of type sent to the helper since start, and the type's name (priv_requests[]): 0 for
 * a type out of the set (*name untouched). */
uint64_t priv_requests_sent(unsigned type, const char **name);

/* The requests. Each returns what the direct kernel call would: 0 (or a count) or -errno; -EPIPE
 * when the helper is gone. Up to PRIV_CHANNELS in flight at once (one per socketpair, each served
 * by its own helper thread); more wait for a free one. */
int priv_knob_write(const struct knob_catalogue *c, const struct knob *k, const char *value);
/* knob_write_each (kernel/knobs.h) in the helper, PRIV_KNOB_BATCH writes per message: how many
 * were attempted (rc[] says how each went), or -errno when none was (refused, the helper gone). */
long priv_knob_writes(const struct knob_catalogue *c, const struct knob *const *ks, const char *const *values,
		      size_t n, int *rc);
int priv_pool_write(uint64_t size_kb, int node, uint64_t count);
/* htlb_run_steps in the helper; steps[] holds max entries (max <= HTLB_RUN_MAX). */
int priv_pool_run(uint64_t size_kb, int node, uint64_t from, uint64_t goal, uint64_t batch, unsigned max,
		  int64_t budget_ns, struct htlb_step *steps, unsigned *n);
int priv_compact(void);
/* An open read-only fd (owned by the caller) of the pid's file, or -errno (-ESRCH: no such pid). */
int priv_proc_open(pid_t pid, enum proc_file f);
long priv_migrate(pid_t pid, uint64_t start_time, const struct mpol_mask *from, const struct mpol_mask *to);
long priv_collapse(int pidfd, uint64_t start, uint64_t len);
/* cpuset.mems = text (a kernel node list, "" to inherit) in the cgroup directory dirfd (borrowed). */
int priv_cg_mems(int dirfd, const char *text);

/* spawn_start through the helper: s->peer_fd (borrowed), the client's connection, goes along, and
 * the helper takes the client's credentials from it only when it is a live connection of the API
 * socket (server/priv/identity.h). The pid, or -errno with *step. */
pid_t priv_spawn(const struct spawn_spec *s, enum spawn_step *step);
/* spawn_reap of a child the helper started; without nohang it polls (the helper never blocks a
 * channel on a child). */
int priv_reap(pid_t pid, int *status, bool nohang);
/* The same with the child's resource usage (the helper's wait4) in *ru when not NULL. */
struct rusage;
int priv_reap_usage(pid_t pid, int *status, bool nohang, struct rusage *ru);

/* A probe child (`--probe-child KIND PARAMS`) of pass `pass` of probe table entry kind, with its
 * typed parameters (borrowed), started by the helper under s's policy and CPUs, its stdout
 * s->stdout_fd (borrowed); s->argv is not read. The pid, or -errno with *step: -EINVAL (step fork)
 * when the helper refused the parameters, -E2BIG when they need more than the share of free
 * memory. */
pid_t priv_probe_start(const struct spawn_spec *s, unsigned kind, unsigned pass, const union probe_params *params,
		       enum spawn_step *step);
/* SIGKILL to a child the helper started: 0 or -errno. */
int priv_kill(pid_t pid);
/* fw_open in the helper: a fanotify group (owned by the caller) marking the files of the n
 * targets, *marked the targets marked; or -errno. */
int priv_watch(const struct fw_target *t, unsigned n, uint64_t *marked);
/* The labels file's whole text (len <= NFD_TEXT_MAX), checked and written by the helper. */
int priv_labels_write(const char *text, size_t len);

/* One datagram on a channel, with pass_fd attached (SCM_RIGHTS) when >= 0; EINTR retried. Both
 * sides use it: the daemon for requests, the helper for answers. Bytes sent, or -1 with errno. */
ssize_t priv_send(int sock, const void *buf, size_t len, int pass_fd);

/* One exchange: sends len bytes as one datagram (with send_fd attached when >= 0; a message of at
 * least a header gets the channel's next sequence number written into it), fills *rep (and *fd,
 * owned by the caller, when one came back, else -1). 0 when *rep is the answer to this request;
 * -EPROTO when the answer was not (the channel is then lost); -EPIPE when the channel or all are
 * lost; -ENOTCONN without a helper; another -errno from the socket. The requests above use it, and
 * the helper's tests send raw messages with it. */
int priv_exchange(void *msg, size_t len, int send_fd, struct priv_reply *rep, int *fd);

/* The parameters text of a probe child (helper_spawn.c), made from the typed ones by
 * probe_recheck against the topology under sysfs_root and the share pct of its free memory: 0 with
 * *text (owned by the caller) set, -EINVAL (the kind's parse refused them, logged), -E2BIG (more
 * than the share) or -ENOMEM. The helper calls it for every PRIV_PROBE_START; the in-process path
 * (act_probe_start) too, so that both start the child alike. */
int priv_probe_text(unsigned kind, const union probe_params *p, unsigned pass, const char *sysfs_root, unsigned pct,
		    char **text);
/* The command line of a probe child of table entry kind: "/proc/self/exe" (resolved in the
 * child, after fork: this binary), --probe-child, the kind's name, text (borrowed). -EINVAL for a
 * kind not in the table. */
int priv_probe_argv(char *argv[5], unsigned kind, const char *text);

#endif
