/* The serving side of the boundary (server/priv/client.c) against a stand-in helper forked here,
 * which answers each channel as it is told: honestly, with another request's sequence number,
 * another type, or a short datagram. An answer that is not the request's loses that channel for
 * good (the stand-in sees it shut down) and the others go on; with none left a request is EPIPE at
 * once; a request after the helper is gone closes no descriptor. The real
 * helper's side of these is test_priv.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/priv/chans.h"
#include "server/priv/priv.h"
#include "tests/unit/check_main.h"

static char proc_root[96];   /* the generated tree the stand-in opens procfs files in */

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

/* A request takes the free channel last put back: with two, the first request takes channel 1. */
START_TEST(an_answer_not_the_requests_loses_its_channel_for_good)
{
	static const enum fake bad[] = { WRONG_SEQ, WRONG_TYPE, SHORT };

	for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
		enum fake modes[2] = { HONEST, bad[b] };

		start_fake(modes, 2);
		ck_assert_int_eq(priv_compact(), -EPROTO);
		assert_ended(1);
		ck_assert(priv_lost());
		/* The lost channel is never handed out again: each of these would take it. */
		for (int i = 0; i < 4; i++)
			ck_assert_int_eq(priv_compact(), 0);
		stop_fake();
	}
}
END_TEST

START_TEST(with_no_channel_left_a_request_is_epipe_at_once)
{
	enum fake modes[2] = { WRONG_TYPE, WRONG_SEQ };

	start_fake(modes, 2);
	ck_assert_int_eq(priv_compact(), -EPROTO);
	ck_assert_int_eq(priv_compact(), -EPROTO);
	ck_assert_int_eq(priv_compact(), -EPIPE);
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
		ck_assert_int_eq(priv_proc_open(4242, PROC_NUMA_MAPS), -EPIPE);
		ck_assert_int_ne(fcntl(canary, F_GETFD), -1);
	}
	close(canary);
	stop_fake();
}
END_TEST

static Suite *channel_suite(void)
{
	Suite *s = suite_create("priv_channel");
	TCase *tc = tcase_create("channel");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, an_answer_not_the_requests_loses_its_channel_for_good);
	tcase_add_test(tc, with_no_channel_left_a_request_is_epipe_at_once);
	tcase_add_test(tc, a_proc_open_after_the_helper_is_gone_closes_nothing);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(channel_suite)
