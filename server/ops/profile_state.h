/* The profile in force: its name, its state (none, applied, degraded with reasons), the last
 * apply's operation and job, and every managed key with what it expects, where it is read from,
 * its last actual value and whether it drifts. One object, created by main() and reached as
 * app->profile_state; struct app stays read-only, the object locks itself, so the API's readers,
 * the apply job (ops/profile_apply.c), the drift watcher and the start-time apply may all call it
 * from any thread. Readers take a snapshot (a copy) and never hold the lock.
 *
 * Who writes what: the apply job installs a new managed set (profile_state_install); the drift
 * watcher reports drift and yields keys; a failed validation leaves the set in force and records
 * its error. Every change of the managed set (an apply, a yield) makes changes_fd readable. */
#ifndef MPD_OPS_PROFILE_STATE_H
#define MPD_OPS_PROFILE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/profiles/profile.h"

enum ps_state { PS_NONE, PS_APPLIED, PS_DEGRADED };

/* Why a profile is degraded: bits of ps_snapshot.reasons, named by ps_reason_name(bit index). */
enum ps_reason {
	PSR_DRIFT = 1u << 0,                 /* a managed key differs from the profile now */
	PSR_PARTIAL_ALLOCATION = 1u << 1,    /* a pool ended short of its target at the deadline */
	PSR_UNSUPPORTED_REQUIRED = 1u << 2,  /* a required key this kernel lacks */
	PSR_APPLY_FAILED = 1u << 3,          /* a write the kernel refused (the knobs rolled back) */
	PSR_INVALID_PROFILE = 1u << 4,       /* the files of the profile in force no longer validate */
};
#define PS_NREASONS 5

#define PS_PATHS_MAX 3                       /* files one key is read from (a pool: its own, the global ones) */
#define PS_PATH_MAX  512
#define PS_ACTUAL_MAX 256

/* One managed key. k is the merged document's key as validated (id, kind, comparator, values,
 * on-drift, required, source file:line). */
struct ps_key {
	struct prof_key k;
	int npaths;
	char paths[PS_PATHS_MAX][PS_PATH_MAX]; /* absolute, under sysfs_root/procfs_root: the first is the
	                                        * key's own file, the others files whose writes change it
	                                        * (vm/nr_hugepages for the default size's pools) */
	bool supported;              /* false: this kernel lacks it (why says so) */
	bool managed;                /* false after a yield, until the profile is applied again */
	bool have_actual;
	char actual[PS_ACTUAL_MAX];  /* the last value read (at apply, or the drift watcher's) */
	bool in_sync;                /* actual satisfies the comparator (read at apply, or reported) */
	bool drifting;               /* the drift watcher's last report: changed since the apply */
	char outcome[24];            /* the last apply's: written, in_sync, resized, partial, failed,
	                              * rolled_back, skipped, unsupported */
	char why[256];               /* the outcome's sentence: why partial, failed or unsupported */
};

/* The last error of an activation that did not apply (a profile that failed validation, a file
 * that changed under the apply): the profile in force stays, this says why nothing changed. */
struct ps_error {
	bool set;
	char profile[PROF_NAME_MAX];
	char code[48];               /* the registry's code (mp_code_name) */
	char detail[512];            /* "db.conf:7:3: ..." */
	struct prof_loc loc;         /* loc.line 0: no place */
	int64_t at_ns;
};

/* A copy of the whole state (ps_snapshot_free frees keys). */
struct ps_snapshot {
	char name[PROF_NAME_MAX];    /* "" when no profile is active */
	enum ps_state state;
	unsigned reasons;            /* enum ps_reason bits; 0 unless state is PS_DEGRADED */
	int64_t operation_id;        /* the last apply's history operation, 0 before any */
	int64_t job_id;              /* its job, 0 before any */
	int64_t applied_ns;          /* when it ended, 0 before any */
	int64_t applying_job;        /* a profile.apply job running now, else 0 */
	bool stale;                  /* the profile's files changed while it was applied */
	struct ps_error error;
	uint64_t generation;         /* counts changes of the managed set */
	size_t n;
	struct ps_key *keys;         /* owned, n of them, in the document's order */
};

struct profile_state;

/* name: the configured active profile (NULL: none); it stays "none" until an apply. NULL on out of
 * memory or when the eventfd cannot be made. */
struct profile_state *profile_state_new(const char *name);
void profile_state_free(struct profile_state *ps);   /* NULL is fine */

/* A copy of everything, for readers. 0, or -1 when out of memory (*out is then empty). */
int profile_state_snapshot(struct profile_state *ps, struct ps_snapshot *out);
void ps_snapshot_free(struct ps_snapshot *s);
/* The active profile's name into buf ("" for none); true when there is one. */
bool profile_state_name(struct profile_state *ps, char *buf, size_t len);

/* An eventfd (EFD_NONBLOCK, owned by the object) that is readable once the managed set changed:
 * an apply installed, a key yielded. The reader read(2)s it to re-arm, then takes a snapshot. */
int profile_state_changes_fd(struct profile_state *ps);

/* The drift watcher's reports. set_drift: key_id's actual value (copied; NULL keeps the last) and
 * whether it is out of sync; a drifting managed key makes the state degraded with reason drift,
 * the last key back in sync clears it. yield: the key is no longer managed (the admin's hand
 * wins) until the next apply; its drift clears. 0, or -1 when no managed key has that id. */
int profile_state_set_drift(struct profile_state *ps, const char *key_id, bool drifting, const char *actual);
int profile_state_yield(struct profile_state *ps, const char *key_id);

/* ---- for the apply (ops/profile_apply.c) ---------------------------------------------------- */

/* The profile.apply job job_id began to run (its run(), on the worker). */
void profile_state_applying(struct profile_state *ps, int64_t job_id);
/* The apply of job_id ended: name with keys (stolen, n of them) is the profile in force, with the
 * reasons it is degraded for (0: applied). Drift clears, and so does the last error. */
void profile_state_install(struct profile_state *ps, const char *name, struct ps_key *keys, size_t n,
			   unsigned reasons, int64_t operation_id, int64_t job_id, bool stale);
/* An activation of `name` that changed nothing (validation failed, or the job ended before any
 * write): the error is recorded; the profile in force stays. in_force: name is the profile in
 * force, whose files now fail (reason invalid_profile until an apply succeeds). job_id: the job
 * that ended so, 0 when none was started. */
void profile_state_reject(struct profile_state *ps, const char *name, const char *code, const char *detail,
			  const struct prof_loc *loc, int64_t job_id);
/* Waits until the apply of job_id ended (installed or rejected; 0: until none runs), or timeout_ms
 * pass (< 0: no limit); true when it ended. For a start-time apply that must end before READY=1
 * (a job cancelled while still queued never runs, so never ends here: bound the wait). */
bool profile_state_wait(struct profile_state *ps, int64_t job_id, int64_t timeout_ms);

const char *ps_state_name(enum ps_state s);     /* "none", "applied", "degraded" */
const char *ps_reason_name(int bit);            /* bit index 0..PS_NREASONS-1: "drift", ... */
/* A key's verdict: "unsupported", "yielded", "drift" (the watcher saw it change), "differs" (out of
 * sync since the apply, a pool short of its target), or "in_sync". */
const char *ps_key_verdict(const struct ps_key *k);

#endif
