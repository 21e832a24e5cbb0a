/* A compromised serving side against the helper (issue 17, item 2), on the real kernel, as root.
 *
 * This program is built from the daemon's own code. It makes the API's Unix listening socket as
 * the daemon does (listen_unix_socket), forks the real helper with it (priv_start), then becomes
 * the serving process (priv_drop to the mempolicyd user, sandbox_serving), which accepts on that
 * socket itself as the daemon does, and misbehaves: every request type of the closed set, with
 * hostile contents, with every descriptor it holds — the listener, the helper's channels, a
 * socketpair, a socket connected to a root-owned listener, TCP sockets, its own connection to the
 * API socket, connections whose client has since closed or half-closed, a connection accepted on a
 * listener of its own to which a root client connected, and live connections of a root and a
 * nobody client.
 *
 * The residual docs/DESIGN.md states (Security, "Who a launch is for") is all that may act: a
 * launch as a client whose connection is open at that moment, within what that client may do (as
 * itself; as anyone when it is root). Every other launch is refused before anything is forked,
 * each with the errno of its own reason (server/priv/identity.h): a refusal is the helper's
 * answer, which comes after its decision, and a launch that did start is reaped and its marker
 * file looked at, so no sleep proves an absence. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/api/listen.h"
#include "server/kernel/knobs.h"
#include "server/kernel/sandbox.h"
#include "server/kernel/spawn.h"
#include "server/priv/priv.h"
#include "tests/unit/check_main.h"

static char root[64], sys_root[96], proc_root[96];

#include "tests/unit/tree.h"

#define THP "kernel/mm/transparent_hugepage/"
#define POOL "kernel/mm/hugepages/hugepages-2048kB/"
#define NOBODY 65534

static char api_path[128], host_path[128], evil_path[160], marks[128];
static struct knob_catalogue *cat;
static struct priv_user served;
static int api_fd = -1, host_listener = -1, tcp_listener = -1;

/* A client process that connects to a Unix socket when told, and the serving side's end of its
 * connection. */
struct client {
	pid_t pid;
	int ctl;       /* 'g': connect; 'h': shut the sending side; closing it ends the client */
	int fd;        /* the connection as the serving side accepted it */
};

/* ---- the daemon's start, as server/main.c does it ------------------------------------------- */

/* A root process that removes the tree once this one has exited (the serving side cannot: the
 * files are root's and the launched programs'), also when a check failed. */
static void janitor(void)
{
	int p[2];
	pid_t pid;
	char x;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		char *argv[] = { "rm", "-rf", root, NULL };
		/* Only the pipe: the helper's channels must end with the test process. */
		if (dup2(p[0], 3) < 0 || syscall(SYS_close_range, 4U, ~0U, 0U) < 0 || setsid() < 0)
			_exit(1);
		(void)!read(3, &x, 1);
		execv("/bin/rm", argv);
		_exit(1);
	}
	close(p[0]);   /* p[1] stays open in this process until it exits */
}

static void setup(void)
{
	struct unix_socket_id sid;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sockaddr_in si = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char evil_dir[96];
	mp_err e = { 0 };

	snprintf(root, sizeof root, "/tmp/mpd-ident-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	ck_assert_int_eq(chmod(root, 0755), 0);   /* the clients and the dropped side reach the sockets */
	janitor();
	snprintf(sys_root, sizeof sys_root, "%s/sys", root);
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	put(sys_root, THP "enabled", "always [madvise] never");
	put(sys_root, POOL "nr_hugepages", "0");
	put(sys_root, "devices/system/node/online", "0");
	put(sys_root, "fs/cgroup/a/cpuset.mems", "");
	put(proc_root, "sys/vm/compact_memory", "0");
	put(proc_root, "4242/stat", "4242 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0");
	snprintf(marks, sizeof marks, "%s/marks", root);
	ck_assert_int_eq(mkdir(marks, 0700), 0);
	ck_assert_int_eq(chmod(marks, 01777), 0);   /* a launch as nobody may leave its marker */
	ck_assert_ptr_nonnull(cat = knobs_build(sys_root, proc_root));
	ck_assert_msg(priv_lookup_user("mempolicyd", &served, &e) == 0, "%s (make user)", e.detail);
	/* A directory the serving side owns, where it may bind a socket of its own. */
	snprintf(evil_dir, sizeof evil_dir, "%s/evil", root);
	ck_assert_int_eq(mkdir(evil_dir, 0755), 0);
	ck_assert_int_eq(chown(evil_dir, served.uid, served.gid), 0);
	snprintf(evil_path, sizeof evil_path, "%s/api.sock", evil_dir);

	snprintf(api_path, sizeof api_path, "%s/api.sock", root);
	ck_assert_msg((api_fd = listen_unix_socket(api_path, &sid, &e)) >= 0, "%s", e.detail);
	/* Some root daemon's socket on the host, which the dropped side can still connect to. */
	snprintf(host_path, sizeof host_path, "%s/host.sock", root);
	memcpy(sa.sun_path, host_path, strlen(host_path) + 1);
	ck_assert_int_ge(host_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(bind(host_listener, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(chmod(host_path, 0666), 0);
	ck_assert_int_eq(listen(host_listener, 8), 0);
	ck_assert_int_ge(tcp_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(bind(tcp_listener, (struct sockaddr *)&si, sizeof si), 0);
	ck_assert_int_eq(listen(tcp_listener, 8), 0);

	struct priv_api api = { .listen_fd = api_fd, .serving_uid = served.uid };
	ck_assert_msg(priv_start(cat, sys_root, proc_root, 50, &api, &e) == 0, "%s", e.detail);
}

/* The serving process from here: the daemon's user, no capabilities, the seccomp filter. */
static void become_serving_side(void)
{
	mp_err e = { 0 };

	ck_assert_msg(priv_drop(&served, &e) == 0, "%s", e.detail);
	ck_assert_msg(sandbox_serving(&e) >= 0, "%s", e.detail);
	ck_assert_int_eq(geteuid(), served.uid);
}

static void teardown(void)
{
	priv_stop();
	knobs_free(cat);
	close(api_fd);
	api_fd = -1;
}

/* ---- clients ---------------------------------------------------------------------------------- */

/* A process of uid that connects to path when told (client_connect). Before become_serving_side
 * only: a root client needs root to start. */
static void client_spawn(struct client *c, uid_t uid, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ctl[2];

	memcpy(sa.sun_path, path, strlen(path) + 1);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl), 0);
	ck_assert_int_ge(c->pid = fork(), 0);
	if (c->pid == 0) {
		int s = -1;
		char x;
		/* Nothing of the serving side's stays open here: the helper's channels must end with it. */
		if (dup2(ctl[1], 3) < 0 || syscall(SYS_close_range, 4U, ~0U, 0U) < 0)
			_exit(1);
		if (uid && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
			_exit(1);
		/* Until the test closes its end: 'g' connects, 'h' shuts the sending side only. */
		while (read(3, &x, 1) == 1) {
			if (x == 'g' && ((s = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
					 connect(s, (struct sockaddr *)&sa, sizeof sa) < 0))
				_exit(2);
			if (x == 'h' && shutdown(s, SHUT_WR) < 0)
				_exit(4);
			if (write(3, &x, 1) != 1)
				_exit(3);
		}
		_exit(0);
	}
	close(ctl[1]);
	c->ctl = ctl[0];
	c->fd = -1;
}

/* The client connects; the serving side accepts the connection on listener. */
static void client_connect(struct client *c, int listener)
{
	struct ucred uc;
	socklen_t l = sizeof uc;
	char x;

	ck_assert_int_eq(write(c->ctl, "g", 1), 1);
	ck_assert_int_eq(read(c->ctl, &x, 1), 1);
	ck_assert_int_ge(c->fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC), 0);
	ck_assert_int_eq(getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &uc, &l), 0);
	ck_assert_int_eq(uc.pid, c->pid);
}

static void client_start(struct client *c, uid_t uid)
{
	client_spawn(c, uid, api_path);
	client_connect(c, api_fd);
}

/* The client shuts its sending side and stays: once it answers, the shutdown is done. */
static void client_half_close(struct client *c)
{
	char x;

	ck_assert_int_eq(write(c->ctl, "h", 1), 1);
	ck_assert_int_eq(read(c->ctl, &x, 1), 1);
}

/* The client closes its connection and exits; the serving side keeps its end. Once waitpid has
 * it, its socket is released: the hang-up is there to see. */
static void client_end(struct client *c)
{
	int st;

	close(c->ctl);
	ck_assert_int_eq(waitpid(c->pid, &st, 0), c->pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- requests --------------------------------------------------------------------------------- */

static struct priv_hdr hdr(uint32_t type, uint32_t len)
{
	return (struct priv_hdr){ .magic = PRIV_MAGIC, .type = type, .len = len };
}

static long ask(void *msg, size_t len, int fd)
{
	struct priv_reply rep;
	int back, rc = priv_exchange(msg, len, fd, &rep, &back);

	ck_assert_msg(rc == 0, "the helper did not answer: %s", strerror(-rc));
	if (back >= 0)
		close(back);
	return (long)rep.rc;
}

/* A launch of `touch <marks>/<name>` as uid (gid the same). */
static struct priv_spawn *spawn_msg(const char *name, uid_t uid)
{
	struct priv_spawn *m = calloc(1, sizeof *m);
	char marker[PATH_MAX];
	const char *argv[] = { "/usr/bin/touch", marker, "/", NULL };   /* the last string is the cwd */

	ck_assert_ptr_nonnull(m);
	snprintf(marker, sizeof marker, "%s/%s", marks, name);
	m->h = hdr(PRIV_SPAWN, sizeof *m);
	m->uid = uid;
	m->gid = uid;
	m->argc = 2;
	for (int i = 0; argv[i]; i++) {
		memcpy(m->data + m->data_len, argv[i], strlen(argv[i]) + 1);
		m->data_len += (uint32_t)strlen(argv[i]) + 1;
	}
	return m;
}

/* The owner of <marks>/<name>, or -1 when there is none. */
static long marker_owner(const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", marks, name);
	return stat(path, &st) == 0 ? (long)st.st_uid : -1;
}

/* rc is a launch's answer: a pid when the helper started it. A launch that should have been
 * refused is collected before the test fails, so that the failure names what it ran. */
static void expect_refused(long rc, const char *what, int fd)
{
	int st;

	if (rc > 0) {
		priv_reap((pid_t)rc, &st, false);
		ck_abort_msg("%s through fd %d was started (pid %ld)", what, fd, rc);
	}
	ck_assert_msg(rc < 0, "%s through fd %d: %ld", what, fd, rc);
}

/* A launch that should run: it is collected, and its marker says as whom it ran. */
static void expect_ran_as(long rc, const char *name, uid_t uid)
{
	int st = -1;

	ck_assert_msg(rc > 0, "the launch %s was refused: %s", name, strerror((int)-rc));
	ck_assert_int_eq(priv_reap((pid_t)rc, &st, false), 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_eq(marker_owner(name), (long)uid);
}

/* Every descriptor open in this process, in out (at most max). */
static int open_fds(int *out, int max)
{
	int n = 0;

	for (int fd = 0; fd < 1024 && n < max; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			out[n++] = fd;
	return n;
}

/* A request of type t whose contents are out of what the helper accepts, into buf; its size. */
static size_t hostile(uint32_t t, void *buf, size_t cap)
{
	memset(buf, 0, cap);
	switch (t) {
	case PRIV_KNOB_WRITE: {
		struct priv_knob_write *m = buf;
		*m = (struct priv_knob_write){ .h = hdr(t, sizeof *m), .index = 0 };
		for (size_t i = 0; i < knobs_count(cat); i++)
			if (!strcmp(knobs_at(cat, i)->name, "thp.enabled"))
				m->index = (uint32_t)i;
		memcpy(m->value, "never\nalways", 13);   /* two values, one of them a second line */
		return sizeof *m;
	}
	case PRIV_POOL_WRITE: {
		struct priv_pool *m = buf;
		*m = (struct priv_pool){ .h = hdr(t, sizeof *m), .size_kb = 2048, .node = -1, .count = (uint64_t)INT64_MAX + 1 };
		return sizeof *m;
	}
	case PRIV_POOL_RUN: {
		struct priv_pool_run *m = buf;
		*m = (struct priv_pool_run){ .h = hdr(t, sizeof *m), .size_kb = 2048, .node = -1, .max_steps = 1,
					     .from = 0, .goal = 512, .batch = 0 };
		return sizeof *m;
	}
	case PRIV_COMPACT: {
		/* It has no contents: with a descriptor it is refused, without it is the compaction the
		 * serving side is lent (not sent below). */
		struct priv_compact *m = buf;
		*m = (struct priv_compact){ .h = hdr(t, sizeof *m) };
		return sizeof *m;
	}
	case PRIV_PROC_OPEN: {
		struct priv_proc_open *m = buf;
		*m = (struct priv_proc_open){ .h = hdr(t, sizeof *m), .pid = 4242, .file = PROC_FILE_END };
		return sizeof *m;
	}
	case PRIV_MIGRATE: {
		struct priv_migrate *m = buf;
		*m = (struct priv_migrate){ .h = hdr(t, sizeof *m), .pid = 4242, .start_time = 777, .maxnode = 2 };
		m->from[0] = 1;
		m->to[0] = 1ULL << 9;   /* a node past maxnode */
		return sizeof *m;
	}
	case PRIV_COLLAPSE: {
		struct priv_collapse *m = buf;
		*m = (struct priv_collapse){ .h = hdr(t, sizeof *m), .start = 4096, .len = 4096 };
		return sizeof *m;   /* acts only on a pidfd: none of these descriptors is one */
	}
	case PRIV_CG_MEMS: {
		struct priv_cg_mems *m = buf;
		*m = (struct priv_cg_mems){ .h = hdr(t, sizeof *m) };
		m->nodes[0] = 1;
		return sizeof *m;   /* acts only in a cgroup directory: none of these is one */
	}
	case PRIV_SPAWN: {
		/* A launch as root whose strings do not add up (one more argument than the data holds):
		 * refused whatever connection it carries, also a live root client's. Who may launch
		 * through which descriptor: the matrix below. */
		struct priv_spawn *m = spawn_msg("matrix", 0);
		m->argc = 3;
		memcpy(buf, m, sizeof *m);
		free(m);
		return sizeof(struct priv_spawn);
	}
	case PRIV_REAP: {
		struct priv_reap *m = buf;
		*m = (struct priv_reap){ .h = hdr(t, sizeof *m), .pid = 1 };
		return sizeof *m;
	}
	case PRIV_PROBE_START: {
		struct priv_probe_start *m = buf;
		/* A kind past the probe table. (Starting a probe of a real kind is lent to the serving
		 * side, as any admin may through the API: stdout may well be a pipe's write end.) */
		*m = (struct priv_probe_start){ .h = hdr(t, sizeof *m), .kind = UINT32_MAX };
		return sizeof *m;
	}
	case PRIV_KILL: {
		struct priv_kill *m = buf;
		*m = (struct priv_kill){ .h = hdr(t, sizeof *m), .pid = 1 };
		return sizeof *m;
	}
	case PRIV_WATCH: {
		struct priv_watch *m = buf;
		/* A knob past the catalogue: the one index that could name a file of the attacker's. */
		*m = (struct priv_watch){ .h = hdr(t, sizeof *m), .n = 1 };
		m->t[0] = (struct fw_target){ .kind = FW_KNOB, .index = UINT32_MAX };
		return sizeof *m;
	}
	case PRIV_KNOB_WRITES: {
		/* A valid first write and a second value with a line after it: refused whole, so the
		 * valid one is not written either (assert_untouched: thp.enabled stays madvise). */
		struct priv_knob_writes *m = buf;
		m->h = hdr(t, sizeof *m);
		m->n = 2;
		for (size_t i = 0; i < knobs_count(cat); i++)
			if (!strcmp(knobs_at(cat, i)->name, "thp.enabled"))
				m->e[0].index = m->e[1].index = (uint32_t)i;
		memcpy(m->e[0].value, "never", 6);
		memcpy(m->e[1].value, "never\nalways", 13);
		return sizeof *m;
	}
	case PRIV_LABELS_WRITE: {
		/* No expiry line, and a line that is no label: a second file's content smuggled in. (This
		 * helper was also given no labels file: EPERM before the text is read.) */
		static const char text[] = "root::0:0::/root:/bin/sh\nmempolicyd.io/thp-enabled=never\n";
		struct priv_labels_write *m = buf;
		m->h = hdr(t, sizeof *m);
		m->len = sizeof text - 1;
		memcpy(m->text, text, sizeof text - 1);
		return sizeof *m;
	}
	}
	ck_abort_msg("request type %u has no hostile message here: add one", t);
	return 0;
}

/* Nothing a refused request could have reached has changed. */
static void assert_untouched(void)
{
	char buf[128];

	get(sys_root, THP "enabled", buf, sizeof buf);
	ck_assert_str_eq(buf, "always [madvise] never");
	get(sys_root, POOL "nr_hugepages", buf, sizeof buf);
	ck_assert_str_eq(buf, "0");
	get(proc_root, "sys/vm/compact_memory", buf, sizeof buf);
	ck_assert_str_eq(buf, "0");
	get(sys_root, "fs/cgroup/a/cpuset.mems", buf, sizeof buf);
	ck_assert_str_eq(buf, "");
}

/* ---- the tests -------------------------------------------------------------------------------- */

/* One of the helper's channels (the serving side's end of a SOCK_SEQPACKET socketpair) among
 * the fds, or -1. */
static int seqpacket_among(const int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		int t;
		socklen_t l = sizeof t;
		if (getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &t, &l) == 0 && t == SOCK_SEQPACKET)
			return fds[i];
	}
	return -1;
}

/* A launch as uid through fd, refused with want and nothing started. */
static void refused_with(int fd, uid_t uid, int want, const char *what)
{
	struct priv_spawn *m = spawn_msg("named", uid);
	long rc = ask(m, sizeof *m, fd);

	free(m);
	expect_refused(rc, what, fd);
	ck_assert_msg(rc == -want, "%s: %s, not %s", what, strerror((int)-rc), strerror(want));
	ck_assert_int_eq(marker_owner("named"), -1);
}

START_TEST(a_compromised_serving_side_launches_nothing_beyond_the_residual)
{
	struct client closed, half, live_root, live_nobody, evil_root;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sockaddr_in si;
	socklen_t sl = sizeof si;
	int fds[256], nfds, host_peer, tcp_peer, tcp_fresh, pair[2], notsock[2], evil_listener, self_client, self, chan;
	/* The largest request a hostile message is built in. */
	_Alignas(8) static unsigned char buf[sizeof(struct priv_spawn) > sizeof(struct priv_labels_write)
					     ? sizeof(struct priv_spawn) : sizeof(struct priv_labels_write)];
	struct priv_spawn *m;

	setup();
	client_start(&closed, 0);
	client_start(&half, 0);
	client_start(&live_root, 0);
	client_start(&live_nobody, NOBODY);
	client_spawn(&evil_root, 0, evil_path);   /* connects where the serving side tells it, below */
	client_end(&closed);
	client_half_close(&half);
	ck_assert_int_eq(getsockname(tcp_listener, (struct sockaddr *)&si, &sl), 0);
	become_serving_side();

	/* What it can still reach after the drop: a root daemon's socket on the host (its peer reads
	 * uid 0), TCP sockets (no credentials at all), the API socket itself (its own uid), a
	 * socketpair, and a listener of its own where a root client connects. */
	memcpy(sa.sun_path, host_path, strlen(host_path) + 1);
	ck_assert_int_ge(host_peer = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(connect(host_peer, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_ge(tcp_peer = socket(AF_INET, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(connect(tcp_peer, (struct sockaddr *)&si, sizeof si), 0);
	ck_assert_int_ge(tcp_fresh = socket(AF_INET, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
	ck_assert_int_eq(pipe(notsock), 0);
	memcpy(sa.sun_path, api_path, strlen(api_path) + 1);
	ck_assert_int_ge(self_client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(connect(self_client, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_ge(self = accept4(api_fd, NULL, NULL, SOCK_CLOEXEC), 0);
	memcpy(sa.sun_path, evil_path, strlen(evil_path) + 1);
	ck_assert_int_ge(evil_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(bind(evil_listener, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(chmod(evil_path, 0666), 0);
	ck_assert_int_eq(listen(evil_listener, 8), 0);
	client_connect(&evil_root, evil_listener);
	nfds = open_fds(fds, 256);
	/* The descriptors named above are among them; so are the helper's channels (the serving
	 * side's ends), the host and TCP listeners and the clients' control sockets. */
	ck_assert_int_ge(nfds, 20);

	/* Every request type with hostile contents, with no descriptor and with each one. */
	for (uint32_t t = 1; t < PRIV_TYPE_END; t++)
		for (int i = -1; i < nfds; i++) {
			size_t len = hostile(t, buf, sizeof buf);
			int fd = i < 0 ? -1 : fds[i];
			if (t == PRIV_COMPACT && fd < 0)
				continue;
			ck_assert_msg(ask(buf, len, fd) < 0, "request type %u with fd %d was carried out", t, fd);
		}

	/* A launch as root, and one as nobody, through every descriptor: only a live client's own
	 * connection may act for it. */
	for (int i = -1; i < nfds; i++) {
		int fd = i < 0 ? -1 : fds[i];
		m = spawn_msg("as-root", 0);
		if (fd != live_root.fd)
			expect_refused(ask(m, sizeof *m, fd), "a launch as uid 0", fd);
		free(m);
		m = spawn_msg("as-nobody", NOBODY);
		if (fd != live_nobody.fd && fd != live_root.fd)
			expect_refused(ask(m, sizeof *m, fd), "a launch as nobody", fd);
		free(m);
	}
	ck_assert_int_eq(marker_owner("as-root"), -1);
	ck_assert_int_eq(marker_owner("as-nobody"), -1);
	ck_assert_int_eq(marker_owner("matrix"), -1);
	/* Each by name, with the reason the helper gives. */
	refused_with(-1, 0, EBADF, "no descriptor");
	refused_with(notsock[0], 0, ENOTSOCK, "a pipe");
	refused_with(tcp_peer, 0, EAFNOSUPPORT, "a TCP connection");
	refused_with(tcp_fresh, 0, EAFNOSUPPORT, "an unconnected TCP socket");
	ck_assert_int_ge(chan = seqpacket_among(fds, nfds), 0);
	refused_with(chan, 0, EPROTOTYPE, "a channel to the helper");
	refused_with(api_fd, 0, EOPNOTSUPP, "the API's listener (its peer reads as root)");
	refused_with(evil_listener, 0, EOPNOTSUPP, "the serving side's own listener");
	refused_with(host_peer, 0, EPERM, "a connection to a root daemon's socket");
	refused_with(pair[0], 0, EPERM, "a socketpair");
	refused_with(self_client, 0, EPERM, "its own client end of the API socket");
	/* The case the kernel's word on the socket's file is for: a root client, still connected, on
	 * a listener the serving side bound where it could write. */
	refused_with(evil_root.fd, 0, EPERM, "a root client of another listener");
	refused_with(evil_root.fd, NOBODY, EPERM, "a root client of another listener, as nobody");
	refused_with(self, served.uid, EACCES, "its own connection to the API socket");
	refused_with(closed.fd, 0, ENOTCONN, "a root client's connection after it closed");
	refused_with(half.fd, 0, ENOTCONN, "a root client's connection after it half-closed");
	/* A live client's connection, as someone else: nobody may not be root. */
	refused_with(live_nobody.fd, 0, EPERM, "a nobody client's connection, as root");
	assert_untouched();

	/* The residual, exactly: a live client's own connection launches as that client, and a root
	 * client's as root (root may launch as anyone through the API). */
	m = spawn_msg("nobody-residual", NOBODY);
	expect_ran_as(ask(m, sizeof *m, live_nobody.fd), "nobody-residual", NOBODY);
	free(m);
	m = spawn_msg("root-residual", 0);
	expect_ran_as(ask(m, sizeof *m, live_root.fd), "root-residual", 0);
	free(m);
	/* ... until the client hangs up: its identity ends with its connection. */
	client_end(&live_root);
	refused_with(live_root.fd, 0, ENOTCONN, "a root client's connection once it closed");
	client_end(&live_nobody);
	client_end(&half);
	client_end(&evil_root);
	teardown();
}
END_TEST

/* The marks of a fanotify group, from /proc/self/fdinfo: each "fanotify ino:HEX sdev:HEX ..." line. */
static int group_marks(int fd, unsigned long *inos, int max)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	ck_assert_ptr_nonnull(f = fopen(path, "re"));
	while (fgets(line, sizeof line, f))
		if (n < max && sscanf(line, "fanotify ino:%lx", &inos[n]) == 1)
			n++;
	fclose(f);
	return n;
}

static unsigned long ino_of(const char *root_dir, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", root_dir, rel);
	ck_assert_int_eq(stat(path, &st), 0);
	return (unsigned long)st.st_ino;
}

static void watch_event(void *arg, const struct fw_event *ev)
{
	struct fw_event *out = arg;

	*out = *ev;
	out->pidfd = ev->pidfd >= 0 ? 1 : -1;   /* the fd is closed after the callback: whether it came */
}

/* The drift watcher's group (PRIV_WATCH): the serving side names knobs and pools, never a file,
 * and the helper marks their files only. Hostile contents are refused with no group; the group
 * it does get carries exactly the marks named, and the serving side cannot add one of its own
 * (its seccomp filter denies fanotify_mark) — neither on an arbitrary file nor a mount. A root
 * writer's event names it by pid, with its pidfd. */
START_TEST(the_watch_group_marks_only_managed_files)
{
	_Alignas(8) static struct priv_watch m;
	struct priv_reply rep;
	unsigned long inos[16];
	size_t thp;
	int fd, back, go[2], st;
	struct fw_event ev = { 0 };
	pid_t writer;
	uint64_t marked;

	setup();
	for (thp = 0; thp < knobs_count(cat) && strcmp(knobs_at(cat, thp)->name, "thp.enabled"); thp++)
		;
	ck_assert_uint_lt(thp, knobs_count(cat));
	/* A root process that writes the knob when told: a foreign writer. */
	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	ck_assert_int_ge(writer = fork(), 0);
	if (writer == 0) {
		char x, path[PATH_MAX];
		int w;
		close(go[1]);
		snprintf(path, sizeof path, "%s/" THP "enabled", sys_root);
		if (read(go[0], &x, 1) != 1 || (w = open(path, O_WRONLY | O_TRUNC)) < 0 ||
		    write(w, "always [madvise] never", 22) != 22)
			_exit(1);
		close(w);
		/* Stays until the test closes the pipe: its pidfd is still good when the event is read. */
		(void)!read(go[0], &x, 1);
		_exit(0);
	}
	close(go[0]);
	become_serving_side();

	struct { const char *what; struct fw_target t; uint32_t n, pad; } bad[] = {
		{ "no target", { .kind = FW_KNOB, .index = (uint32_t)thp }, 0, 0 },
		{ "more than FW_MAX", { .kind = FW_KNOB, .index = (uint32_t)thp }, FW_MAX + 1, 0 },
		{ "padding set", { .kind = FW_KNOB, .index = (uint32_t)thp }, 1, 1 },
		{ "a knob past the catalogue", { .kind = FW_KNOB, .index = (uint32_t)knobs_count(cat) }, 1, 0 },
		{ "a knob with a pool's fields", { .kind = FW_KNOB, .index = (uint32_t)thp, .size_kb = 2048 }, 1, 0 },
		{ "a size the kernel lacks", { .kind = FW_POOL, .size_kb = 4096, .node = -1 }, 1, 0 },
		{ "a node without that pool", { .kind = FW_POOL, .size_kb = 2048, .node = 5 }, 1, 0 },
		{ "a node below -1", { .kind = FW_POOL, .size_kb = 2048, .node = -2 }, 1, 0 },
		{ "an unknown kind", { .kind = 3, .index = (uint32_t)thp }, 1, 0 },
		{ "no kind", { .kind = 0 }, 1, 0 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&m, 0, sizeof m);
		m.h = hdr(PRIV_WATCH, sizeof m);
		m.n = bad[i].n;
		m.pad = bad[i].pad;
		m.t[0] = bad[i].t;
		ck_assert_int_eq(priv_exchange(&m, sizeof m, -1, &rep, &back), 0);
		ck_assert_msg(rep.rc == -EINVAL && back < 0, "%s: rc %lld, fd %d", bad[i].what, (long long)rep.rc, back);
	}
	/* A target past n is not a free slot for a file. */
	memset(&m, 0, sizeof m);
	m.h = hdr(PRIV_WATCH, sizeof m);
	m.n = 1;
	m.t[0] = (struct fw_target){ .kind = FW_KNOB, .index = (uint32_t)thp };
	m.t[1] = (struct fw_target){ .kind = FW_KNOB, .index = UINT32_MAX };
	ck_assert_int_eq(priv_exchange(&m, sizeof m, -1, &rep, &back), 0);
	ck_assert_int_eq(rep.rc, -EINVAL);
	ck_assert_int_lt(back, 0);
	/* With a descriptor attached: refused as every request that carries none. */
	m.t[1] = (struct fw_target){ 0 };
	ck_assert_int_eq(priv_exchange(&m, sizeof m, api_fd, &rep, &back), 0);
	ck_assert_int_eq(rep.rc, -EBADMSG);
	ck_assert_int_lt(back, 0);

	/* What it is lent: the knob and the pool, each its own file. */
	struct fw_target t[2] = { { .kind = FW_KNOB, .index = (uint32_t)thp }, { .kind = FW_POOL, .size_kb = 2048, .node = -1 } };
	ck_assert_int_ge(fd = priv_watch(t, 2, &marked), 0);
	ck_assert_uint_eq(marked, 3);
	ck_assert_int_eq(group_marks(fd, inos, 16), 2);
	ck_assert_uint_eq(inos[0] == ino_of(sys_root, THP "enabled") ? inos[1] : inos[0], ino_of(sys_root, POOL "nr_hugepages"));
	/* The serving side's own marks: on a file it can read, on the mount, on the tree's root. */
	ck_assert_int_eq(fanotify_mark(fd, FAN_MARK_ADD, FAN_MODIFY | FAN_ACCESS, AT_FDCWD, "/etc/passwd"), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_MODIFY, AT_FDCWD, "/"), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(fanotify_mark(fd, FAN_MARK_ADD, FAN_MODIFY | FAN_ACCESS | FAN_EVENT_ON_CHILD, AT_FDCWD, root), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID, O_RDONLY), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(group_marks(fd, inos, 16), 2);

	/* A foreign write is seen, with its writer. */
	ck_assert_int_eq(write(go[1], "w", 1), 1);
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, 10000), 1);
	}
	ck_assert_int_eq(fw_read(fd, watch_event, &ev), 0);
	ck_assert_int_eq(ev.pid, writer);
	ck_assert_uint_eq(ev.ino, ino_of(sys_root, THP "enabled"));
	/* Linux 5.15 and later report the writer's pidfd; it is still alive, so a real one. */
	{
		struct utsname u;
		unsigned maj = 0, min = 0;
		ck_assert_int_eq(uname(&u), 0);
		sscanf(u.release, "%u.%u", &maj, &min);
		if (maj > 5 || (maj == 5 && min >= 15))
			ck_assert(ev.pidfd_info && ev.pidfd >= 0);
	}
	close(go[1]);
	ck_assert_int_eq(waitpid(writer, &st, 0), writer);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	assert_untouched();
	teardown();
}
END_TEST

static Suite *identity_suite(void)
{
	Suite *s = suite_create("priv_identity");
	TCase *tc = tcase_create("hostile serving side");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_compromised_serving_side_launches_nothing_beyond_the_residual);
	tcase_add_test(tc, the_watch_group_marks_only_managed_files);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(identity_suite)
