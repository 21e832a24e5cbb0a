/* The profiles directory's reload: a watch (profiles/watch.h) says the set changed; this reads
 * the whole set (pinned to one ConfigMap swap), checks every profile in it against this host,
 * and only when all of it is valid activates the profile in force again (it may have changed in
 * the swap). Otherwise nothing is activated: the profile in force stays, and the error (the
 * first invalid profile's file:line:column) goes to the log and to the reload hook. */
#ifndef MPD_OPS_PROFILE_RELOAD_H
#define MPD_OPS_PROFILE_RELOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "server/app.h"
#include "server/profiles/dir.h"

/* The reading of one changed set. */
struct reload_verdict {
	unsigned nprofiles;          /* profiles in the set */
	bool ok;                     /* every one valid, and the one in force among them */
	struct prof_err err;         /* when !ok: the first invalid profile's error */
	char invalid[PROF_NAME_MAX]; /* when !ok: that profile's name ("" for the directory) */
	char activate[PROF_NAME_MAX];/* when ok: the profile to activate ("" when none is in force) */
};

/* Checks every profile of dir against the host (reads only). active: the profile in force (NULL
 * none). 0 with *v filled (v->ok says the verdict), -1 only when out of memory. */
int profile_reload_check(const struct app *app, const struct prof_dir *dir, const char *active,
			 struct reload_verdict *v);

/* What a reload does with its verdict (the caller's: the profile state and profile_activate). */
struct reload_hooks {
	void *ctx;
	/* The profile in force now (copied into buf; "" none). */
	void (*active)(void *ctx, char *buf, size_t len);
	/* The set is valid: activate v->activate from dir (pinned to the swap that was checked). 0
	 * done (activated, or failed and logged), or the id of the activation already running, which
	 * the reload waits for (wait) before it calls valid again. */
	int64_t (*valid)(void *ctx, const struct prof_dir *dir, const struct reload_verdict *v);
	/* Waits up to ms for activation job_id to end; true when it has. */
	bool (*wait)(void *ctx, int64_t job_id, int ms);
	/* The set is not: the profile in force stays; v->err says why. */
	void (*invalid)(void *ctx, const struct prof_dir *dir, const struct reload_verdict *v);
};

struct profile_reload;

/* Watches app->profiles_dir in a thread of its own. A directory that cannot be watched (it does
 * not exist at start) is logged and not watched: NULL with e clear. NULL with e set on failure. */
struct profile_reload *profile_reload_start(const struct app *app, const struct reload_hooks *h, mp_err *e);
/* Stops, joins, frees. NULL is fine. */
void profile_reload_stop(struct profile_reload *r);

#endif
