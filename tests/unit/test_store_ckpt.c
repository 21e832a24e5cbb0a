/* The checkpointer (server/store/ckpt.c): a commit that leaves the WAL past 1000 frames does not
 * copy it back itself; the checkpointer's thread does. Observed in the WAL index, the -shm file,
 * whose layout SQLite documents (walformat.html): the header's mxFrame (offset 16, the frames in
 * the WAL) and the checkpoint information's nBackfill (offset 96, the frames copied back). The
 * test build's hold (MEMPOLICYD_TEST_HOLD_CKPT, a FIFO) keeps the checkpointer waiting while the
 * commits run, so what the commits did is seen without it and no timing is involved. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/internal.h"
#include "tests/unit/check_main.h"

static char dir[64], path[96], shm[112], fifo[112];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/mpd-storeckpt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/t.db", dir);
	snprintf(shm, sizeof shm, "%s-shm", path);
	snprintf(fifo, sizeof fifo, "%s/hold", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A 32-bit field of the WAL index, in this machine's byte order (as SQLite writes it). */
static uint32_t shm_u32(off_t at)
{
	uint32_t v = 0;
	int fd = open(shm, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &v, sizeof v, at), (ssize_t)sizeof v);
	close(fd);
	return v;
}

#define MX_FRAME 16
#define N_BACKFILL 96

/* Lets the held checkpointer go: it waits in open(2) for a writer; this open returns once it has
 * opened its end, and the close is its EOF. The hold is disarmed first, so it does not wait again. */
static void release(void)
{
	int fd;

	unsetenv("MEMPOLICYD_TEST_HOLD_CKPT");
	ck_assert_int_ge(fd = open(fifo, O_WRONLY | O_CLOEXEC), 0);
	close(fd);
}

START_TEST(commits_past_the_threshold_leave_the_checkpoint_to_its_thread)
{
	struct op_record op = { .kind = "knobs.set", .source = "api", .started_ns = 1, .status = "running" };
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	struct store *st;
	mp_err e = { 0 };
	int i;

	setenv("MEMPOLICYD_TEST_HOLD_CKPT", fifo, 1);
	st = store_open(path, &e);
	ck_assert_msg(st != NULL, "%s", e.detail);
	/* Each insert is a commit of a few frames. A commit that checkpointed would copy the WAL
	 * back, and the next one would start it again from its first frame: it would never hold 1100. */
	for (i = 0; i < 20000 && shm_u32(MX_FRAME) < 1100; i++)
		ck_assert_int_gt(history_insert(st, &op, &e), 0);
	ck_assert_msg(shm_u32(MX_FRAME) >= 1100, "the WAL never held 1100 frames in %d commits: a commit "
		      "checkpointed it (%u frames now)", i, shm_u32(MX_FRAME));
	ck_assert_uint_eq(shm_u32(N_BACKFILL), 0);
	release();
	/* The checkpointer copies what the WAL holds (bounded: 10 s). */
	for (i = 0; i < 1000 && shm_u32(N_BACKFILL) == 0; i++)
		nanosleep(&pause, NULL);
	ck_assert_uint_ge(shm_u32(N_BACKFILL), 1100);
	/* And the writer goes on: the next commit starts the fully copied WAL again. */
	ck_assert_int_gt(history_insert(st, &op, &e), 0);
	ck_assert_uint_lt(shm_u32(MX_FRAME), 1100);
	store_close(st);
}
END_TEST

/* A writer that never pauses: a passive checkpoint beside it could not finish, so past the bound
 * the commit checkpoints itself (as every commit past 1000 frames did before the checkpointer),
 * and the WAL stays bounded with the checkpointer still held. */
START_TEST(past_the_bound_the_commit_checkpoints_itself)
{
	struct op_record op = { .kind = "knobs.set", .source = "api", .started_ns = 1, .status = "running" };
	struct store *st;
	mp_err e = { 0 };
	uint32_t most = 0;
	int i;

	setenv("MEMPOLICYD_TEST_HOLD_CKPT", fifo, 1);
	st = store_open(path, &e);
	ck_assert_msg(st != NULL, "%s", e.detail);
	for (i = 0; i < 40000 && shm_u32(N_BACKFILL) == 0; i++) {
		ck_assert_int_gt(history_insert(st, &op, &e), 0);
		if (shm_u32(MX_FRAME) > most)
			most = shm_u32(MX_FRAME);
	}
	ck_assert_msg(shm_u32(N_BACKFILL) > 0, "nothing was checkpointed in %d commits", i);
	ck_assert_uint_ge(most, CKPT_INLINE_FRAMES);
	ck_assert_uint_lt(most, CKPT_INLINE_FRAMES + 100);   /* the commit that crossed it */
	release();
	store_close(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("store_ckpt");
	TCase *t = tcase_create("ckpt");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, commits_past_the_threshold_leave_the_checkpoint_to_its_thread);
	tcase_add_test(t, past_the_bound_the_commit_checkpoints_itself);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
