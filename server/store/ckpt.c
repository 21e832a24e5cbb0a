/* The checkpointer: the WAL copied back into the database file on a thread of its own, over a
 * connection of its own, so that no commit pays for it.
 *
 * Before, the writer's WAL hook ran the passive checkpoint itself, in the thread that had just
 * committed: once every 1000 frames (a few dozen knob changes) one request copied about 4 MB and
 * waited for two fdatasyncs, 5–55 ms on a shared disk, and at 200 changes a round that request
 * was the round's p99 (bench/README.md §19, `limits.readers`). Now the hook only asks; this thread
 * checkpoints. A passive checkpoint takes neither the writer's lock nor a reader's, so commits and
 * reads go on while it copies and syncs. The durability is the same: synchronous=NORMAL syncs the
 * WAL at checkpoints only, whichever connection runs them. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/testhold.h"
#include "server/log.h"
#include "server/store/internal.h"

/* Below the writers: a checkpoint is bulk copying and disk waits that nobody is waiting for, so it
 * yields the core to a commit, yet it is never starved (a nice value, not SCHED_IDLE): the WAL
 * it trails behind must not grow without end on a busy machine. */
#define CKPT_NICE 10
#define CKPT_CATCH_UP_S 1

struct ckpt {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool asked;                   /* under lock: a commit left the WAL past the threshold */
	/* Under lock. A pass copies the frames the WAL held when it began; commits go on meanwhile,
	 * and only a WAL copied to its end lets the next commit restart it. Each pass costs two
	 * syncs, so the next one waits for CKPT_FRAMES more frames rather than chase every commit of
	 * a busy writer; one left behind is finished once the writer pauses (behind). A WAL shorter
	 * than at the last pass was restarted, and the next ask past the threshold is taken. */
	int next_at;                  /* the WAL's frames at which an ask wakes the thread */
	int last_log;                 /* the WAL's frames when the last pass began */
	int latest;                   /* the WAL's frames at the last ask */
	bool behind;                  /* the last pass did not reach the WAL's end */
	bool stopping;                /* under lock */
	sqlite3 *db;                  /* owned; this thread's connection, read-write, used by it alone */
	struct store *st;             /* borrowed: the scans count */
};

/* Test builds only (common/testhold.h): with MEMPOLICYD_TEST_HOLD_CKPT naming a FIFO, each pass
 * waits before it runs until a test has opened and closed the FIFO, so a test sees what the commits
 * did without the checkpoint (tests/unit/test_store_ckpt.c). */
static void test_hold(void)
{
	test_hold_fifo("MEMPOLICYD_TEST_HOLD_CKPT");
}

static void *run(void *p)
{
	struct ckpt *ck = p;

	/* On Linux a nice value is a thread's own: PRIO_PROCESS with a thread id sets that thread's. */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), CKPT_NICE) < 0)
		log_warn("store: the checkpointer cannot lower its priority to nice %d (%s); it runs at normal "
			 "priority", CKPT_NICE, strerror(errno));
	pthread_mutex_lock(&ck->lock);
	for (;;) {
		if (ck->stopping)
			break;
		if (!ck->asked && !ck->behind) {
			pthread_cond_wait(&ck->cond, &ck->lock);
			continue;
		}
		if (!ck->asked) {
			/* Left behind by commits: once the writer pauses (no ask for CKPT_CATCH_UP_S),
			 * one more pass copies the rest, so that the next commit can restart the WAL
			 * instead of growing it. */
			struct timespec until;
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += CKPT_CATCH_UP_S;
			if (pthread_cond_timedwait(&ck->cond, &ck->lock, &until) == ETIMEDOUT)
				ck->asked = true;
			continue;
		}
		ck->asked = false;
		pthread_mutex_unlock(&ck->lock);
		test_hold();
		/* A statistics scan began since the ask: it holds its snapshot for seconds, which the
		 * checkpoint cannot get past; the first commit after it asks again. */
		int log = -1, done = -1;
		if (!__atomic_load_n(&ck->st->scans, __ATOMIC_RELAXED))
			sqlite3_wal_checkpoint_v2(ck->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
		pthread_mutex_lock(&ck->lock);
		ck->last_log = log;
		/* Not run (a scan, an error): the next commit past the threshold asks again. */
		ck->next_at = log > 0 ? log + CKPT_FRAMES : CKPT_FRAMES;
		ck->behind = log > 0 && (done < log || ck->latest > log);
	}
	pthread_mutex_unlock(&ck->lock);
	return NULL;
}

int ckpt_start(struct store *st, const char *path, mp_err *e)
{
	struct ckpt *ck = calloc(1, sizeof *ck);

	if (!ck)
		return mp_nomem(e);
	ck->st = st;
	ck->next_at = CKPT_FRAMES;
	pthread_mutex_init(&ck->lock, NULL);
	{
		pthread_condattr_t ca;   /* the catch-up wait is not moved by a change of the wall clock */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ck->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* NOMUTEX: only this thread uses the connection. It writes no row: READWRITE because a
	 * checkpoint writes the database file. */
	/* The read opens the connection's WAL: until a connection has read, SQLite does not know the
	 * file is in WAL mode, and its checkpoints would do nothing. */
	if (sqlite3_open_v2(path, &ck->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
	    sqlite3_exec(ck->db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL) != SQLITE_OK) {
		mp_fail(e, MPE_STORE_OPEN, 0, "cannot open database %s for its checkpoints: %s", path,
			ck->db ? sqlite3_errmsg(ck->db) : "out of memory");
		goto fail;
	}
	if (pthread_create(&ck->thread, NULL, run, ck)) {
		mp_fail(e, MPE_STORE_OPEN, 0, "cannot start the checkpointer thread");
		goto fail;
	}
	st->ckpt = ck;
	return 0;
fail:
	sqlite3_close_v2(ck->db);
	pthread_cond_destroy(&ck->cond);
	pthread_mutex_destroy(&ck->lock);
	free(ck);
	return -1;
}

void ckpt_ask(struct store *st, int frames)
{
	struct ckpt *ck = st->ckpt;

	if (!ck)
		return;
	pthread_mutex_lock(&ck->lock);
	ck->latest = frames;
	/* One wake-up for any number of commits while it is busy. */
	if (!ck->asked && (frames >= ck->next_at || frames < ck->last_log)) {
		ck->asked = true;
		pthread_cond_signal(&ck->cond);
	}
	pthread_mutex_unlock(&ck->lock);
}

void ckpt_stop(struct store *st)
{
	struct ckpt *ck = st->ckpt;

	if (!ck)
		return;
	pthread_mutex_lock(&ck->lock);
	ck->stopping = true;
	pthread_cond_signal(&ck->cond);
	pthread_mutex_unlock(&ck->lock);
	pthread_join(ck->thread, NULL);
	sqlite3_close_v2(ck->db);   /* not the last connection: the writer closes after it */
	pthread_cond_destroy(&ck->cond);
	pthread_mutex_destroy(&ck->lock);
	free(ck);
	st->ckpt = NULL;
}
