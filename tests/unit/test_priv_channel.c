/* The serving side of the boundary (server/priv/client.c) against a stand-in helper forked here,
 * which answers each channel as it is told: honestly, with another request's sequence number,
 * another type, or a short datagram. An answer that is not the request's loses that channel for
 * good (the stand-in sees it shut down) and fails closed: the helper is lost, and every request
 * after is EPIPE at once, none sent; a request after the helper is gone closes no descriptor; the not-moved count a migration
 * answers in `value` reaches the caller and the job's record ("partial", pages_not_moved). The real
 * helper's side of these is test_priv.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/app.h"
#include "server/jobs/jobs.h"
#include "server/ops/pact.h"
#include "server/ops/pmigrate.h"
#include "server/priv/act.h"
#include "server/priv/chans.h"
#include "server/priv/priv.h"
#include "server/store/db.h"
#include "tests/unit/check_main.h"

static char root[64], proc_root[96];   /* the generated tree; the stand-in opens procfs files in it */
/* The process the tree describes: this test's own, so that a pidfd of it can be opened (the
 * migrate job brackets its check by pid with one) while its files are the tree's. */
static pid_t target;

enum fake { HONEST, WRONG_SEQ, WRONG_TYPE, SHORT };

#define NOT_MOVED 3   /* what the stand-in answers every migration with */

static int report[2] = { -1, -1 };   /* the stand-in writes '0' + i when channel i ends */

/* The stand-in helper: one answer per request on each of n channels, as modes[i] says. A
 * PRIV_PROC_OPEN is answered with the file of the generated tree; a PRIV_MIGRATE with rc 0 and
 * NOT_MOVED pages not moved, as the helper answers a migration that left pages behind. */
static void fake_serve(const int *fds, int n, const enum fake *modes)
{
	struct pollfd p[PRIV_CHANNELS];
	static unsigned char buf[PRIV_MSG_MAX + 1];
	int open = n;

	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	while (open > 0) {
		if (poll(p, (nfds_t)n, -1) < 0)
			_exit(1);
		for (int i = 0; i < n; i++) {
			struct priv_reply rep = { .h = { .magic = PRIV_MAGIC, .len = sizeof rep } };
			const struct priv_hdr *h = (const void *)buf;
			ssize_t r;
			int pass = -1;
			char c = (char)('0' + i);

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			if ((r = recv(p[i].fd, buf, sizeof buf, 0)) <= 0) {
				if (write(report[1], &c, 1) != 1)
					_exit(1);
				close(p[i].fd);
				p[i].fd = -1;
				open--;
				continue;
			}
			if ((size_t)r >= sizeof *h) {
				rep.h.type = h->type;
				rep.h.seq = h->seq;
			}
			if (rep.h.type == PRIV_MIGRATE)
				rep.value = NOT_MOVED;
			if (rep.h.type == PRIV_PROC_OPEN) {
				const struct priv_proc_open *m = (const void *)buf;
				if ((pass = proc_open_guarded(proc_root, m->pid, (enum proc_file)m->file)) < 0)
					rep.rc = pass;
			}
			if (modes[i] == WRONG_SEQ)
				rep.h.seq++;
			if (modes[i] == WRONG_TYPE)
				rep.h.type = rep.h.type == PRIV_COMPACT ? PRIV_KNOB_WRITE : PRIV_COMPACT;
			(void)priv_send(p[i].fd, &rep, modes[i] == SHORT ? 8 : sizeof rep, pass);
			if (pass >= 0)
				close(pass);
		}
	}
	_exit(0);
}

/* Forks the stand-in over n channels and hands their other ends to the client, as priv_start does. */
static void start_fake(const enum fake *modes, int n)
{
	int sv[PRIV_CHANNELS][2], mine[PRIV_CHANNELS], theirs[PRIV_CHANNELS];
	pid_t pid;

	ck_assert_int_eq(pipe(report), 0);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv[i]), 0);
		mine[i] = sv[i][0];
		theirs[i] = sv[i][1];
	}
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		for (int i = 0; i < n; i++)
			close(mine[i]);
		close(report[0]);
		fake_serve(theirs, n, modes);
	}
	for (int i = 0; i < n; i++)
		close(theirs[i]);
	close(report[1]);
	priv_chans_adopt(mine, n, pid);
	ck_assert(priv_active());
	ck_assert(!priv_lost());
}

/* Channel i was shut down by the client: the stand-in saw it end (within 10 s). */
static void assert_ended(int i)
{
	struct pollfd p = { .fd = report[0], .events = POLLIN };
	char c = 0;

	ck_assert_int_eq(poll(&p, 1, 10000), 1);
	ck_assert_int_eq(read(report[0], &c, 1), 1);
	ck_assert_int_eq(c, '0' + i);
}

static void stop_fake(void)
{
	priv_stop();
	close(report[0]);
	report[0] = -1;
}

/* A request takes the free channel last put back: with two, the first request takes channel 1.
 * Fail closed: the channel that answered wrong is shut down for good, and with it the helper is
 * lost, so the requests after fail with EPIPE at once over the honest channel too, none sent. */
START_TEST(an_answer_not_the_requests_loses_its_channel_and_the_helper)
{
	static const enum fake bad[] = { WRONG_SEQ, WRONG_TYPE, SHORT };

	for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
		enum fake modes[2] = { HONEST, bad[b] };
		const char *name;
		uint64_t sent;

		start_fake(modes, 2);
		ck_assert_int_eq(priv_compact(), -EPROTO);
		assert_ended(1);
		ck_assert(priv_lost());
		sent = priv_requests_sent(PRIV_COMPACT, &name);
		for (int i = 0; i < 4; i++)
			ck_assert_int_eq(priv_compact(), -EPIPE);
		ck_assert_uint_eq(priv_requests_sent(PRIV_COMPACT, &name), sent);
		stop_fake();
	}
}
END_TEST

START_TEST(once_lost_a_request_is_epipe_at_once)
{
	enum fake modes[2] = { WRONG_TYPE, WRONG_SEQ };

	start_fake(modes, 2);
	ck_assert_int_eq(priv_compact(), -EPROTO);
	ck_assert_int_eq(priv_compact(), -EPIPE);   /* the other channel is not tried */
	ck_assert_int_eq(priv_pool_write(2048, 0, 1), -EPIPE);
	ck_assert(priv_lost());
	stop_fake();
}
END_TEST

/* A descriptor whose number the stack already holds where priv_proc_open keeps its fd. */
static __attribute__((noinline)) void leave_on_stack(int fd)
{
	volatile int words[512];

	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		words[i] = fd;
}

START_TEST(a_proc_open_after_the_helper_is_gone_closes_nothing)
{
	enum fake modes[1] = { WRONG_TYPE };
	int canary;

	start_fake(modes, 1);
	ck_assert_int_eq(priv_compact(), -EPROTO);   /* the one channel is lost */
	ck_assert_int_ge(canary = open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
	for (int i = 0; i < 8; i++) {
		leave_on_stack(canary);
		ck_assert_int_eq(priv_proc_open(target, PROC_NUMA_MAPS), -EPIPE);
		ck_assert_int_ne(fcntl(canary, F_GETFD), -1);
	}
	close(canary);
	stop_fake();
}
END_TEST

/* ---- the not-moved count -------------------------------------------------------------------- */

static void copy_fixture(const char *name, const char *as)
{
	char from[PATH_MAX], cmd[2 * PATH_MAX + 16];

	snprintf(from, sizeof from, "%s/tests/unit/fixtures/proc/%s", MPD_SRCDIR, name);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s/%d/%s'", from, proc_root, (int)target, as);
	ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", proc_root, rel);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "%s\n", text);
	fclose(f);
}

static void make_tree(void)
{
	char dir[PATH_MAX];

	snprintf(root, sizeof root, "/tmp/mpd-privch-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	target = getpid();
	snprintf(dir, sizeof dir, "%s/%d", proc_root, (int)target);
	ck_assert_int_eq(mkdir(proc_root, 0755), 0);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	put("meminfo", "AnonHugePages:         0 kB");   /* no THP: numa_maps and maps are read */
	put("vmstat", "pgmigrate_success 0");
	copy_fixture("stat", "stat");   /* start time 987654 */
	copy_fixture("status", "status");
	copy_fixture("huge.numa_maps", "numa_maps");
	copy_fixture("huge.maps", "maps");
}

static void drop_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(the_helpers_not_moved_count_reaches_the_caller)
{
	enum fake modes[1] = { HONEST };
	struct mpol_mask from, to;
	idset a, b;

	make_tree();
	ck_assert_int_eq(idset_parse("1", &a), 0);
	ck_assert_int_eq(idset_parse("0", &b), 0);
	mpol_mask_from(&a, &from);
	mpol_mask_from(&b, &to);
	start_fake(modes, 1);
	ck_assert_int_eq(act_migrate(proc_root, target, 987654, &from, &to), NOT_MOVED);
	stop_fake();
	drop_tree();
}
END_TEST

/* The migrate job through the helper, on the generated tree: the record is partial, with the
 * helper's count. */
START_TEST(a_migration_that_left_pages_records_partial)
{
	enum fake modes[1] = { HONEST };
	struct app app = { 0 };
	struct pact_args *arg = calloc(1, sizeof *arg);   /* the runner's once submitted */
	char path[160];
	json_t *job = NULL, *res;
	mp_err e = { 0 };
	int64_t id;

	make_tree();
	snprintf(path, sizeof path, "%s/j.db", root);
	app.procfs_root = proc_root;
	app.sysfs_root = root;
	snprintf(app.caps.kernel_release, sizeof app.caps.kernel_release, "test");
	ck_assert_msg((app.store = store_open(path, &e)) != NULL, "%s", e.detail);
	ck_assert_ptr_nonnull(app.jobs = jobs_open(&app, &e));
	ck_assert_int_eq(jobs_register(app.jobs, &migrate_job, &e), 0);
	ck_assert_int_eq(jobs_start(app.jobs, 1, &e), 0);
	start_fake(modes, 1);
	ck_assert_ptr_nonnull(arg);
	*arg = (struct pact_args){ .app = &app, .pid = target, .start_time = 987654 };
	ck_assert_int_eq(idset_parse("1", &arg->from), 0);
	ck_assert_int_eq(idset_parse("0", &arg->to), 0);
	snprintf(arg->from_text, sizeof arg->from_text, "1");
	snprintf(arg->to_text, sizeof arg->to_text, "0");
	struct job_spec spec = { .kind = &migrate_job, .arg = arg, .origin.source = "api" };
	ck_assert_ptr_nonnull(job = jobs_submit(app.jobs, &spec, NULL, &e));
	id = json_integer_value(json_object_get(job, "id"));
	json_decref(job);
	/* Until it has ended (a presence waited for, at most 10 s). */
	for (int i = 0; i < 1000; i++) {
		const char *st;
		ck_assert_ptr_nonnull(job = jobs_get(app.jobs, id, &e));
		st = json_string_value(json_object_get(job, "status"));
		if (strcmp(st, "queued") && strcmp(st, "running"))
			break;
		json_decref(job);
		job = NULL;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	ck_assert_ptr_nonnull(job);
	ck_assert_str_eq(json_string_value(json_object_get(job, "status")), "partial");
	ck_assert_str_eq(json_string_value(json_object_get(job, "reason")), "not_moved");
	res = json_object_get(job, "result");
	ck_assert_int_eq(json_integer_value(json_object_get(res, "pages_not_moved")), NOT_MOVED);
	json_decref(job);
	stop_fake();
	jobs_close(app.jobs);
	store_close(app.store);
	drop_tree();
}
END_TEST

static Suite *channel_suite(void)
{
	Suite *s = suite_create("priv_channel");
	TCase *tc = tcase_create("channel");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, an_answer_not_the_requests_loses_its_channel_and_the_helper);
	tcase_add_test(tc, once_lost_a_request_is_epipe_at_once);
	tcase_add_test(tc, a_proc_open_after_the_helper_is_gone_closes_nothing);
	tcase_add_test(tc, the_helpers_not_moved_count_reaches_the_caller);
	tcase_add_test(tc, a_migration_that_left_pages_records_partial);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(channel_suite)
