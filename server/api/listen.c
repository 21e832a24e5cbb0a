/* Listening sockets for the API: a Unix socket, and optionally loopback TCP. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/api/listen.h"

/* What is at path now: nothing (0), a socket nobody answers on (0, removed), or a refusal. Only a
 * stale socket is ever removed: a regular file, a directory or a symlink at the socket path is
 * somebody's data (one typo away from being the database), and a socket someone answers on is a
 * live daemon. The path is checked with lstat, so a symlink is refused, never followed. */
static int clear_stale(const struct sockaddr_un *sa, const char *path, mp_err *e)
{
	struct stat st;
	int probe, rc, err;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return mp_fail(e, MPE_CONFIG_SOCKET, errno, "cannot look at %s: %s", path, strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return mp_fail(e, MPE_CONFIG_SOCKET, EEXIST, "%s exists and is %s, not a socket: refusing to "
			       "remove it (is --socket a typo?)", path,
			       S_ISREG(st.st_mode) ? "a regular file" : S_ISDIR(st.st_mode) ? "a directory" :
			       S_ISLNK(st.st_mode) ? "a symbolic link" : "not a socket");
	/* Non-blocking: a live daemon whose backlog is full answers EAGAIN rather than hanging us. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (probe < 0)
		return mp_fail(e, MPE_HTTP_LISTEN, errno, "socket: %s", strerror(errno));
	rc = connect(probe, (const struct sockaddr *)sa, sizeof *sa);
	err = errno;
	close(probe);
	if (rc == 0 || err == EAGAIN || err == EINPROGRESS)
		return mp_fail(e, MPE_HTTP_LISTEN, EADDRINUSE, "another daemon is listening on %s", path);
	if (err != ECONNREFUSED)
		return mp_fail(e, MPE_CONFIG_SOCKET, err, "cannot tell whether %s is in use: %s", path, strerror(err));
	if (unlink(path) < 0 && errno != ENOENT)
		return mp_fail(e, MPE_CONFIG_SOCKET, errno, "cannot remove the stale socket %s: %s", path,
			       strerror(errno));
	return 0;
}

int listen_unix_socket(const char *path, struct unix_socket_id *id, mp_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old_mask;
	int fd, rc, err;

	if (strlen(path) >= sizeof sa.sun_path)
		return mp_fail(e, MPE_CONFIG_SOCKET, 0, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (clear_stale(&sa, path, e) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mp_fail(e, MPE_HTTP_LISTEN, errno, "socket: %s", strerror(errno));
	/* The file gets its mode at bind (Linux: the socket inode's 0777 less the umask; an fchmod
	 * before bind is honoured too, but the umask would still take group and other write). Set it
	 * there rather than chmod by name afterwards, which in a shared directory could change
	 * whatever another user put at the path in between. Start-up: no other thread makes files. */
	old_mask = umask(0111);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	err = errno;
	umask(old_mask);
	if (rc < 0 || lstat(path, &st) < 0 || listen(fd, 128) < 0) {
		err = rc < 0 ? err : errno;
		close(fd);
		return mp_fail(e, MPE_HTTP_LISTEN, err, "cannot listen on %s: %s", path, strerror(err));
	}
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return fd;
}

void listen_unix_release(const char *path, const struct unix_socket_id *id)
{
	struct stat st;

	/* Another daemon may have replaced the file since (after ours was removed by hand): its
	 * socket is not ours to remove. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == id->dev && st.st_ino == id->ino)
		unlink(path);
}

/* Parses "127.0.0.1:8080" or "[::1]:8080". Without TLS only loopback addresses: the plain listener
 * has no caller identity and nothing on it is encrypted, so it stays on this host. */
int listen_tcp(const char *spec, bool any_address, mp_err *e)
{
	char host[64];
	const char *colon = strrchr(spec, ':');
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	unsigned long port;
	char *end;
	int fd, one = 1;

	if (!colon || (size_t)(colon - spec) >= sizeof host)
		return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "--listen-tcp wants ADDR:PORT, got '%s'", spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || port > 65535)
		return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "bad port in '%s'", spec);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		host[strlen(host) - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "'%s' is not an IPv6 address", spec);
		if (!any_address && !IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "'%s' is not a loopback address (without "
				       "--tls-cert and --tls-key only loopback is allowed)", spec);
		sl = sizeof *s6;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof host, "127.0.0.1");
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "'%s' is not an IPv4 address", spec);
		if (!any_address && (ntohl(s4->sin_addr.s_addr) >> 24) != 127)
			return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "'%s' is not a loopback address (without "
				       "--tls-cert and --tls-key only loopback is allowed)", spec);
		sl = sizeof *s4;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mp_fail(e, MPE_HTTP_LISTEN, errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 512) < 0) {
		int err = errno;
		close(fd);
		return mp_fail(e, MPE_HTTP_LISTEN, err, "cannot listen on %s: %s", spec, strerror(err));
	}
	return fd;
}
