/* The profiles directory's reload (profile_reload.h). */
#include "server/ops/profile_reload.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/log.h"
#include "server/ops/profiles.h"
#include "server/profiles/watch.h"

int profile_reload_check(const struct app *app, const struct prof_dir *dir, const char *active,
			 struct reload_verdict *v)
{
	char **names = NULL;
	size_t n = 0;
	bool found = !active || !*active;
	int rc;

	memset(v, 0, sizeof *v);
	if ((rc = prof_dir_list_in(dir, &names, &n)) < 0) {
		if (rc == -ENOMEM)
			return -1;
		mp_fail(&v->err.e, rc == -EXDEV ? MPE_PROFILE_INCLUDE_ESCAPE : MPE_PROFILE_UNREADABLE, -rc,
			"the profiles directory %s cannot be read: %s", dir->path,
			rc == -EXDEV ? "its ..data is not a symlink to a ..TIMESTAMP entry of it" : strerror(-rc));
		return 0;
	}
	v->nprofiles = (unsigned)n;
	/* Every profile, not only the one in force: a set is taken whole or not at all, so that a
	 * broken file is reported when it arrives, not when someone later activates it. */
	for (size_t i = 0; i < n; i++) {
		struct profile_checked ck;
		struct prof_err pe = { 0 };
		int bad = profiles_check_in(app, dir, names[i], &ck, &pe);
		profiles_checked_free(&ck);
		if (bad < 0) {
			if (pe.e.code == MPE_INTERNAL_NOMEM) {
				prof_dir_names_free(names, n);
				return -1;
			}
			v->err = pe;
			snprintf(v->invalid, sizeof v->invalid, "%s", names[i]);
			prof_dir_names_free(names, n);
			return 0;
		}
		if (!found && !strcmp(names[i], active))
			found = true;
	}
	prof_dir_names_free(names, n);
	if (!found) {
		snprintf(v->invalid, sizeof v->invalid, "%s", active);
		snprintf(v->err.loc.file, sizeof v->err.loc.file, "%s.conf", active);
		mp_fail(&v->err.e, MPE_PROFILE_NOT_FOUND, 0, "%s.conf: the profile in force is no longer in the set",
			active);
		return 0;
	}
	v->ok = true;
	if (active)
		snprintf(v->activate, sizeof v->activate, "%s", active);
	return 0;
}

struct profile_reload {
	const struct app *app;       /* borrowed */
	struct reload_hooks hooks;
	struct prof_watch *watch;    /* owned */
	int stop[2];                 /* owned: a byte on stop[1] ends the thread */
	pthread_t thread;
};

/* Waits for activation job_id to end, a slice at a time so that a stop is not held up by it, and
 * at most RETRY_S (a job cancelled while queued never ends: the activation is then tried again);
 * false when the reload is stopping. */
#define RETRY_S 10
static bool wait_behind(struct profile_reload *r, int64_t job_id)
{
	struct pollfd p = { .fd = r->stop[0], .events = POLLIN };

	for (int slice = 0; slice < RETRY_S * 10 && !r->hooks.wait(r->hooks.ctx, job_id, 100); slice++)
		if (poll(&p, 1, 0) > 0)
			return false;
	return true;
}

/* One changed set: read, decide, hand over. */
static void reload_once(struct profile_reload *r, const struct prof_change *c)
{
	struct prof_dir dir = { .path = r->app->profiles_dir, .snap = c->configmap ? c->snap : NULL };
	struct reload_verdict v;
	char active[PROF_NAME_MAX] = "";

	r->hooks.active(r->hooks.ctx, active, sizeof active);
	if (profile_reload_check(r->app, &dir, active, &v) < 0) {
		log_error("profiles reload: out of memory; the profile in force stays");
		return;
	}
	/* The swap was replaced while it was read (its directory may be half removed): the next
	 * swap's rename is waiting, and that read is the one that counts. */
	if (c->configmap && !prof_watch_still(r->watch, c->snap)) {
		log_info("profiles reload: swap %s was replaced while it was read; reading the next one", c->snap);
		return;
	}
	if (!v.ok) {
		/* The state first, then the line: a reader who saw the line finds the error recorded. */
		r->hooks.invalid(r->hooks.ctx, &dir, &v);
		log_error("profiles reload%s%s: %s%s%s; nothing activated, the profile in force (%s) stays",
			  c->configmap ? " of swap " : "", c->configmap ? c->snap : "", v.invalid[0] ? v.invalid : "",
			  v.invalid[0] ? ": " : "", v.err.e.detail, active[0] ? active : "none");
		return;
	}
	log_info("profiles reload%s%s: %u profile(s), all valid; %s%s", c->configmap ? " of swap " : "",
		 c->configmap ? c->snap : "", v.nprofiles, v.activate[0] ? "activating " : "none in force",
		 v.activate);
	/* Behind an activation already running (the start-time apply, an API call): the set is
	 * activated once it ended, so the newest files are what stays in force. */
	for (int64_t busy; (busy = r->hooks.valid(r->hooks.ctx, &dir, &v)) > 0;) {
		log_info("profiles reload: job %lld activates a profile; %s is activated again once it ends",
			 (long long)busy, v.activate);
		if (!wait_behind(r, busy))
			return;
	}
}

static void *thread_main(void *arg)
{
	struct profile_reload *r = arg;
	struct pollfd p[2] = { { .fd = prof_watch_fd(r->watch), .events = POLLIN }, { .fd = r->stop[0], .events = POLLIN } };

	for (;;) {
		struct prof_change c;
		int rc;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("profiles watch: poll: %s; the directory is no longer watched", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if ((rc = prof_watch_read(r->watch, &c)) < 0) {
			log_error("profiles watch: read: %s; the directory is no longer watched", strerror(-rc));
			break;
		}
		/* A directory removed with its files: nothing left to reload, the watch ends. */
		if (c.changed && !c.lost)
			reload_once(r, &c);
		if (c.lost) {
			log_error("profiles watch: %s was removed or moved; it is no longer watched (restart to watch it again)",
				  r->app->profiles_dir);
			break;
		}
	}
	return NULL;
}

struct profile_reload *profile_reload_start(const struct app *app, const struct reload_hooks *h, mp_err *e)
{
	struct profile_reload *r = calloc(1, sizeof *r);
	int err = 0;

	if (!r) {
		mp_nomem(e);
		return NULL;
	}
	r->app = app;
	r->hooks = *h;
	r->stop[0] = r->stop[1] = -1;
	if (!(r->watch = prof_watch_open(app->profiles_dir, &err))) {
		if (err == -ENOMEM) {
			mp_nomem(e);
		} else {
			mp_err_clear(e);
			log_warn("profiles watch: %s cannot be watched (%s): its changes are read only at start",
				 app->profiles_dir, strerror(-err));
		}
		free(r);
		return NULL;
	}
	if (pipe2(r->stop, O_CLOEXEC) < 0 || pthread_create(&r->thread, NULL, thread_main, r) != 0) {
		mp_fail(e, MPE_INTERNAL_ERROR, errno, "cannot start the profiles watch");
		if (r->stop[0] >= 0) {
			close(r->stop[0]);
			close(r->stop[1]);
		}
		prof_watch_close(r->watch);
		free(r);
		return NULL;
	}
	log_info("profiles watch: %s (inotify on the directory; a ConfigMap volume reloads on its ..data swap)",
		 app->profiles_dir);
	return r;
}

void profile_reload_stop(struct profile_reload *r)
{
	if (!r)
		return;
	if (write(r->stop[1], "x", 1) < 0)
		log_warn("profiles watch: cannot signal its stop: %s", strerror(errno));
	pthread_join(r->thread, NULL);
	close(r->stop[0]);
	close(r->stop[1]);
	prof_watch_close(r->watch);
	free(r);
}
