/* Profiles as the API reads them: the directory's profiles with their parse state, one merged
 * document checked against this host, and the dry run (what an apply would do). The parser and
 * merger are server/profiles/; this file adds what a key means here — the knob catalogue's types
 * and lists, the host's pools and nodes, the cgroups — reading the kernel only, writing nothing.
 * The apply (ops/profile_apply.c) and the profile state's readers start from the same checked
 * document; drift (planned) will too. */
#ifndef MPD_OPS_PROFILES_H
#define MPD_OPS_PROFILES_H

#include <jansson.h>

#include "server/app.h"
#include "server/kernel/cgroup.h"
#include "server/kernel/topology.h"
#include "server/profiles/profile.h"

enum prof_verdict { PROF_IN_SYNC, PROF_DIFFERS, PROF_UNSUPPORTED };

/* One key against the host now. */
struct profile_eval {
	enum prof_verdict verdict;
	bool have_now;
	char now[1024];              /* the kernel's value, as text */
	char target[PROF_VALUE_MAX]; /* what an apply would write (canonical), when it differs */
	char reason[192];            /* why unsupported */
};

/* A merged profile checked against this host: what the apply starts from. */
struct profile_checked {
	struct prof_doc doc;
	struct profile_eval *ev;     /* owned, doc.n of them, in doc.keys' order */
	bool unsupported_required;   /* a required key is unsupported: the profile is degraded */
	struct topology *topo;       /* owned, NULL when the topology cannot be read or no key is a cgroup */
	struct cg_hier cg;
	bool have_cg;                /* cg was detected (only when a key is a cgroup) */
	uint64_t digest;             /* of the files' text as the merge read them (profiles_digest) */
};

/* now (the kernel's text; now_num its number when numeric) against k's comparator and values: in
 * sync? The apply's verdict and the drift watcher's. */
bool profiles_satisfied(const struct prof_key *k, const char *now, bool numeric, uint64_t now_num);

/* Merges `name` from the profiles directory and evaluates every key against the kernel now
 * (reads only). 0, or -1 with pe at the first error; free *ck with profiles_checked_free either way. */
int profiles_check(const struct app *app, const char *name, struct profile_checked *ck, struct prof_err *pe);
/* profiles_check reading from dir (a ConfigMap snapshot pinned by the reload, ops/profile_reload.h). */
struct prof_dir;
int profiles_check_in(const struct app *app, const struct prof_dir *dir, const char *name, struct profile_checked *ck,
		      struct prof_err *pe);
void profiles_checked_free(struct profile_checked *ck);
/* Evaluates ck's document (already merged) against the kernel now, again: ck->ev, the topology and
 * unsupported_required are refreshed. 0, or -1 with pe (a value this kernel no longer allows). */
int profiles_evaluate(const struct app *app, struct profile_checked *ck, struct prof_err *pe);
/* The same for the keys whose again[i] is true (NULL: every key); the others keep their ck->ev[i]
 * (and count for unsupported_required as it says). */
int profiles_evaluate_keys(const struct app *app, struct profile_checked *ck, const bool *again, struct prof_err *pe);
/* The digest of doc's files (its include chain) as they are now, computed as profiles_check
 * computed doc's: a changed file, an include added or removed gives another. 0, or -1 with pe
 * when a file of the chain can no longer be read. */
int profiles_digest(const struct app *app, const struct prof_doc *doc, uint64_t *digest, struct prof_err *pe);

/* {"dir", "active", "profiles": [{name, file, active, state, reasons?, error?, keys?}]}. A
 * missing default directory is an empty list. 0 with *out (owned), or -1 with pe->e. */
int profiles_list(const struct app *app, json_t **out, struct prof_err *pe);
/* The merged document of `name`, every key with its comparator, values, on-drift, required,
 * source and whether this kernel has it. 0 with *out, or -1: pe->e is profile.not_found or the
 * profile's own error (with pe->loc). */
int profiles_show(const struct app *app, const char *name, json_t **out, struct prof_err *pe);
/* The dry run: per key now, wanted, verdict (in_sync, differs, unsupported) and the action an
 * apply would take (write, resize, none). Reads the kernel, writes nothing. As profiles_show. */
int profiles_diff(const struct app *app, const char *name, json_t **out, struct prof_err *pe);
/* At start: logs each profile's state (an invalid one as an error). */
void profiles_log_start(const struct app *app);

#endif
