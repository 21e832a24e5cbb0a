/* The drift watcher's thread: the managed set from the profile state, the fanotify group over its
 * files, and the checks (drift_record.c records what a check found and acts on the policy). */
#include "server/ops/drift.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/testhold.h"
#include "server/clock.h"
#include "server/kernel/fanwatch.h"
#include "server/log.h"
#include "server/ops/drift_cause.h"
#include "server/ops/drift_int.h"
#include "server/ops/profile_state.h"
#include "server/priv/act.h"

struct drift_watcher {
	const struct app *app;           /* borrowed */
	pthread_t th;
	int stop_fd;                     /* owned: an eventfd, written once to stop */
	int fan_fd;                      /* owned: the group, -1 without one */
	int64_t check_ns;                /* the slow timer */
	struct dw_key *keys;             /* owned, n of them: the managed set */
	size_t n;
	int64_t apply_op;                /* the apply the managed set is of (its operation id) */
	struct fw_target t[FW_MAX];      /* the targets fan_fd's marks were asked for, nt of them */
	struct dw_files {                /* and their files as they were then (a mark is on an inode) */
		int n;
		dev_t dev[FW_FILES_MAX];
		ino_t ino[FW_FILES_MAX];
	} tf[FW_MAX];
	size_t nt;
	uint64_t marked;                 /* and the ones marked */
	/* Work put off until the events are quiet (settle): the rebuild's check of every key and the
	 * rows of drifts that ended (drift_record.c's list). settle_at is when (monotonic ns), 0
	 * with nothing put off; first when the oldest of it was put off. */
	bool catch_up;
	int64_t settle_at, settle_first;
};

/* An apply's own writes, its state install and the end of its request come within a millisecond
 * or two: what the watcher can do after them waits until its events have been quiet this long,
 * so that it neither commits nor reads while the apply does. Never longer than DW_SETTLE_MAX_NS
 * after the first of it (a stream of events does not put it off for good). */
#define DW_SETTLE_NS     (20LL * 1000 * 1000)
#define DW_SETTLE_MAX_NS (200LL * 1000 * 1000)

static pid_t self_pid;   /* getpid(), once: asked for every event */

static void files_of(const struct dw_key *dk, struct dw_files *f)
{
	memset(f, 0, sizeof *f);   /* padding too: the files are compared with memcmp */
	f->n = dk->nfiles;
	memcpy(f->dev, dk->dev, sizeof f->dev);
	memcpy(f->ino, dk->ino, sizeof f->ino);
}

/* The group w has marks on exactly these targets' files, the same inodes: it can stay. */
static bool same_marks(const struct drift_watcher *w, const struct fw_target *t, const struct dw_files *tf, size_t nt)
{
	return w->fan_fd >= 0 && nt && nt == w->nt && !memcmp(t, w->t, nt * sizeof *t) &&
	       !memcmp(tf, w->tf, nt * sizeof *tf);
}

/* The values the kernel changes with no write anyone could see: khugepaged raises min_free_kbytes
 * when THP is enabled; memory offlining, hugetlb demotion and a failed page shrink pools. */
static bool kernel_changes(const struct ps_key *k)
{
	return k->k.kind == PROF_POOL || (k->k.kind == PROF_KNOB && !strcmp(k->k.key, "vm.min_free_kbytes"));
}

/* The key's target for the group, false when it has none (a cgroup's mems: no file of the kind the
 * helper marks). */
static bool target_of(const struct app *app, const struct dw_key *dk, struct fw_target *t)
{
	*t = (struct fw_target){ 0 };
	if (dk->pk.k.kind == PROF_KNOB && dk->knob) {
		for (size_t i = 0; i < knobs_count(app->knobs); i++)
			if (knobs_at(app->knobs, i) == dk->knob) {
				*t = (struct fw_target){ .kind = FW_KNOB, .index = (uint32_t)i };
				return true;
			}
	}
	if (dk->pk.k.kind == PROF_POOL) {
		*t = (struct fw_target){ .kind = FW_POOL, .size_kb = dk->pk.k.size_kb, .node = dk->pk.k.node };
		return true;
	}
	return false;
}

/* The (dev, inode) of each file the key's mark covers: an event's file is matched against them. */
static void key_files(const struct app *app, struct dw_key *dk, const struct fw_target *t)
{
	char paths[FW_FILES_MAX][4096];
	int n = fw_target_files(app->knobs, app->sysfs_root, app->procfs_root, t, paths);
	struct stat st;

	dk->nfiles = 0;
	for (int i = 0; i < n; i++)
		if (stat(paths[i], &st) == 0) {
			dk->dev[dk->nfiles] = st.st_dev;
			dk->ino[dk->nfiles++] = st.st_ino;
		}
}

/* Writes by the daemon itself: this process, the helper, and the helper's probe children (its
 * children running this binary: a launched program is the caller's own and its writes count). */
static bool own_pid(pid_t pid)
{
	pid_t helper = act_helper_pid();

	return pid > 0 && (pid == self_pid || (helper > 0 && pid == helper));
}

static bool own_write(const struct drift_writer *wr)
{
	static char self_exe[512];
	pid_t helper = act_helper_pid();

	if (own_pid(wr->pid))
		return true;
	if (!self_exe[0]) {
		ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
		self_exe[n > 0 ? n : 0] = '\0';
	}
	return wr->named && (wr->ppid == self_pid || (helper > 0 && wr->ppid == helper)) && self_exe[0] &&
	       !strcmp(wr->exe, self_exe);
}

struct event_ctx {
	struct drift_watcher *w;
	bool overflow;
};

static void on_event(void *arg, const struct fw_event *ev)
{
	struct event_ctx *c = arg;
	struct drift_watcher *w = c->w;
	struct drift_writer wr;
	/* The daemon's or the helper's own write (every write of an apply): known by the pid alone,
	 * so the writer is not named (its /proc files read, a PROC_OPEN to the helper) only to be
	 * dropped. */
	bool own = own_pid(ev->pid), attributed = false;

	if (ev->overflow) {
		c->overflow = true;
		return;
	}
	/* A close wrote nothing: its write's own event (FAN_MODIFY, queued before it) read the key.
	 * Read again when the close is handled, the key shows what was written since, by someone
	 * else, and the closer would be named for it: a shell's close queued before an apply, handled
	 * after it, took the drift of a write right after the apply for its own (seen beside
	 * stress-ng: test_a_write_right_after_the_apply_is_recorded). */
	if (!ev->modify)
		return;
	for (size_t i = 0; i < w->n; i++) {
		struct dw_key *dk = &w->keys[i];
		bool hit = false;
		for (int f = 0; f < dk->nfiles && !hit; f++)
			hit = dk->dev[f] == ev->dev && dk->ino[f] == ev->ino;
		if (!hit)
			continue;
		/* Named once per event, at the moment it is handled, under the event's pidfd. */
		if (!own && !attributed) {
			/* The kernel's pid: its files are the kernel's procfs, never a generated tree's. */
			drift_attribute("/proc", ev->pid, ev->pidfd, ev->pidfd_info, &wr);
			attributed = true;
		}
		if (own || own_write(&wr)) {
			dw_note_own(w->app, dk);
			continue;
		}
		/* A close after a write already handled is no second sighting of the drift: only a
		 * write counts one. */
		dw_check(w->app, dk, ev->pid > 0 ? DC_PROCESS : DC_UNKNOWN, &wr, ev->modify);
	}
}

/* A key's drift carried over a rebuild of the same apply (a yield of another key): its open row
 * stays the one a further sighting updates. A new apply ends every drift. */
static void carry_over(struct dw_key *dk, struct dw_key *old, size_t nold)
{
	for (size_t i = 0; i < nold; i++)
		if (!strcmp(old[i].pk.k.id, dk->pk.k.id)) {
			dk->row = old[i].row;
			dk->open = old[i].open;
			dk->first_ns = old[i].first_ns;
			dk->last_ns = old[i].last_ns;
			dk->count = old[i].count;
			dk->cause = old[i].cause;
			memcpy(dk->sig, old[i].sig, sizeof dk->sig);
			dk->writer = old[i].writer;
			old[i].writer = NULL;
			return;
		}
}

/* What the apply that replaced old left its key at: the new set's baseline (its read-back), or the
 * last value old saw when the key is not managed any more. */
static const char *replaced_actual(const struct dw_key *old, const struct dw_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i].pk.k.id, old->pk.k.id) && keys[i].have_last)
			return keys[i].last;
	return old->last;
}

/* Whether the state has changed since poll() looked (an apply installed meanwhile). */
static bool changes_pending(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* The managed set changed (an apply, a yield): a new group with marks on the new set, made before
 * the old one is closed so that no write between the two goes unseen. Each key's baseline is the
 * value the state last knew (the apply's read-back), and every key is checked once the marks are
 * there: a write after the apply read it back and before the group existed is a drift too (its
 * writer unknown). */
static void rebuild(struct drift_watcher *w)
{
	const struct app *app = w->app;
	struct ps_snapshot snap;
	struct fw_target t[FW_MAX];
	struct dw_files tf[FW_MAX];
	size_t slot[FW_MAX], nt = 0;
	struct dw_key *keys = NULL;   /* owned until it replaces w->keys */
	uint64_t marked = 0;
	int fd = -1;
	bool kept;

	if (profile_state_snapshot(app->profile_state, &snap) < 0) {
		log_error("drift watcher: out of memory taking the profile state: the managed set is not re-marked");
		return;
	}
	if (snap.n && !(keys = calloc(snap.n, sizeof *keys))) {
		ps_snapshot_free(&snap);
		log_error("drift watcher: out of memory: the managed set is not re-marked");
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < snap.n; i++) {
		struct dw_key *dk = &keys[n];
		if (!snap.keys[i].managed || !snap.keys[i].supported || snap.keys[i].k.kind == PROF_CGROUP)
			continue;
		dk->pk = snap.keys[i];
		dk->knob = dk->pk.k.kind == PROF_KNOB ? knobs_find(app->knobs, dk->pk.k.key) : NULL;
		if (dk->pk.k.kind == PROF_KNOB && !dk->knob) {
			*dk = (struct dw_key){ 0 };   /* the slot is the next key's */
			continue;
		}
		dk->timer = kernel_changes(&dk->pk);
		if (nt < FW_MAX && target_of(app, dk, &t[nt])) {
			key_files(app, dk, &t[nt]);
			files_of(dk, &tf[nt]);
			slot[nt++] = n;
		}
		if (dk->pk.have_actual) {
			snprintf(dk->last, sizeof dk->last, "%s", dk->pk.actual);
			dk->have_last = true;
		} else {
			dk->have_last = dw_read(app, dk, dk->last, sizeof dk->last, NULL) == 0;
		}
		if (snap.operation_id == w->apply_op)
			carry_over(dk, w->keys, w->n);
		n++;
	}
	/* A new apply ends every drift of the set it replaces: it wrote each key back (its own
	 * writes' events, handled with this set, may not be read yet, and are then not this set's). */
	if (snap.operation_id != w->apply_op)
		for (size_t i = 0; i < w->n; i++)
			if (w->keys[i].open)
				dw_end_replaced(app, &w->keys[i], replaced_actual(&w->keys[i], keys, n));
	w->apply_op = snap.operation_id;
	ps_snapshot_free(&snap);
	/* The same files as the group has marks on (the same profile applied again): the group stays,
	 * so no write falls between two groups and no helper request is made. */
	if ((kept = same_marks(w, t, tf, nt))) {
		fd = w->fan_fd;
		marked = w->marked;
	} else if (nt && (fd = act_watch(app->knobs, app->sysfs_root, app->procfs_root, t, (unsigned)nt, &marked)) < 0)
		log_warn("drift watcher: no fanotify group (%s): the %zu managed keys are checked every %lld s instead",
			 strerror(-fd), n, (long long)(w->check_ns / CLK_NS));
	for (size_t i = 0; i < nt; i++)
		keys[slot[i]].marked = fd >= 0 && (marked >> i & 1);
	for (size_t i = 0; i < n; i++)
		if (!keys[i].marked)
			keys[i].timer = true;   /* no event will tell: the timer must */
	if (w->fan_fd >= 0 && w->fan_fd != fd)
		close(w->fan_fd);
	w->fan_fd = fd;
	memcpy(w->t, t, nt * sizeof *t);
	memcpy(w->tf, tf, nt * sizeof *tf);
	w->nt = fd >= 0 ? nt : 0;
	w->marked = marked;
	dw_keys_free(w->keys, w->n);
	w->keys = keys;
	w->n = n;
	/* Writes since the group was made are events: named first, then the catch-up finds only
	 * what came before it. A new group's catch-up is now: a change found later could be the
	 * kernel's after the group existed (the timer's `kernel`), not a write before it. The kept
	 * group had no gap, so its catch-up waits until the apply that woke this is done (settle):
	 * it only finds what came between the apply's read-back and this set. */
	if (fd >= 0) {
		struct event_ctx c = { .w = w };
		(void)fw_read(fd, on_event, &c);
	}
	if (kept)
		w->catch_up = true;
	else
		for (size_t i = 0; i < n; i++)
			dw_check(app, &keys[i], DC_UNKNOWN, NULL, false);
	log_info("drift watcher: %zu managed keys, %zu with a mark%s", n, nt, kept ? " (the same files: the group kept)" : "");
}

static void check_all(struct drift_watcher *w, bool timer_only, enum drift_cause marked_cause)
{
	for (size_t i = 0; i < w->n; i++)
		if (!timer_only || w->keys[i].timer)
			dw_check(w->app, &w->keys[i], w->keys[i].marked ? marked_cause : DC_UNKNOWN, NULL, false);
}

/* Something was put off: it is done once the events have been quiet DW_SETTLE_NS. */
static void arm(struct drift_watcher *w)
{
	int64_t now = clk_mono_ns();

	if (!w->catch_up && !dw_ends_pending())
		return;
	if (!w->settle_first)
		w->settle_first = now;
	w->settle_at = now + DW_SETTLE_NS < w->settle_first + DW_SETTLE_MAX_NS ? now + DW_SETTLE_NS
										  : w->settle_first + DW_SETTLE_MAX_NS;
}

/* What was put off, done: the rebuild's check of every key, then the drifts' ends written (the
 * check's among them). */
static void settle(struct drift_watcher *w)
{
	if (w->catch_up) {
		w->catch_up = false;
		check_all(w, false, DC_UNKNOWN);
	}
	dw_ends_flush(w->app);
	w->settle_at = w->settle_first = 0;
}

/* The poll's timeout in ms: until the slow timer or the settle, whichever is first. */
static int timeout_ms(const struct drift_watcher *w, int64_t next)
{
	int64_t at = w->settle_at && w->settle_at < next ? w->settle_at : next, left = at - clk_mono_ns();

	return left <= 0 ? 0 : (int)(left / 1000000 + 1);
}

static void *run(void *arg)
{
	struct drift_watcher *w = arg;
	int changes = profile_state_changes_fd(w->app->profile_state);
	int64_t next = clk_mono_ns() + w->check_ns;

	rebuild(w);
	arm(w);
	for (;;) {
		struct pollfd p[3] = { { .fd = w->stop_fd, .events = POLLIN }, { .fd = changes, .events = POLLIN },
				       { .fd = w->fan_fd, .events = POLLIN } };
		uint64_t v;
		int rc = poll(p, w->fan_fd >= 0 ? 3 : 2, timeout_ms(w, next));

		if (rc < 0 && errno != EINTR) {
			log_error("drift watcher: poll: %s; verification stops", strerror(errno));
			break;
		}
		if (p[0].revents)
			break;
		/* Test builds only (common/testhold.h): while the FIFO MEMPOLICYD_TEST_HOLD_DRIFT names
		 * exists, each wake-up waits here until a test has opened and closed it, so that the
		 * writes a test makes meanwhile are all queued when the watcher handles them. */
		test_hold_fifo("MEMPOLICYD_TEST_HOLD_DRIFT");
		/* A new managed set first, also one installed after poll() returned: the events read
		 * next may follow the apply's writes, and are judged against the set they follow (a
		 * write after an apply is a drift of that apply's, with its own writer). */
		if ((p[1].revents & POLLIN) || changes_pending(changes)) {
			(void)!read(changes, &v, sizeof v);
			rebuild(w);
		}
		if (w->fan_fd >= 0 && (p[2].revents & POLLIN)) {
			struct event_ctx c = { .w = w };
			int r = fw_read(w->fan_fd, on_event, &c);
			if (r < 0)
				log_warn("drift watcher: reading events: %s", strerror(-r));
			/* Events were lost: who wrote what is unknown, but what changed is not. */
			if (c.overflow)
				check_all(w, false, DC_UNKNOWN);
		}
		if (w->settle_at && clk_mono_ns() >= w->settle_at)
			settle(w);
		if (clk_mono_ns() >= next) {
			/* A change no write event told of: the kernel's own, where a mark would have seen
			 * any writer. What was put off comes first: the timer's check is of a settled set. */
			settle(w);
			check_all(w, true, DC_KERNEL);
			next = clk_mono_ns() + w->check_ns;
		}
		/* Whatever this round put off (an end a check found, a set changed) waits for quiet. */
		arm(w);
	}
	return NULL;
}

struct drift_watcher *drift_start(const struct app *app, unsigned check_s)
{
	struct drift_watcher *w = calloc(1, sizeof *w);

	if (!w || !app->profile_state)
		goto fail;
	*w = (struct drift_watcher){ .app = app, .fan_fd = -1, .check_ns = (int64_t)check_s * CLK_NS };
	self_pid = getpid();
	if ((w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		goto fail;
	if (pthread_create(&w->th, NULL, run, w) != 0) {
		close(w->stop_fd);
		goto fail;
	}
	return w;
fail:
	log_error("drift watcher: cannot start: the profile is verified only when asked (profile verify)");
	free(w);
	return NULL;
}

void drift_stop(struct drift_watcher *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	(void)!write(w->stop_fd, &one, sizeof one);
	pthread_join(w->th, NULL);
	/* What the thread put off, written: every drift's end is recorded. */
	dw_ends_flush(w->app);
	dw_ends_free();
	close(w->stop_fd);
	if (w->fan_fd >= 0)
		close(w->fan_fd);
	dw_keys_free(w->keys, w->n);
	free(w);
}
