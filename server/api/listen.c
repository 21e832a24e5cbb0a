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

int listen_unix_socket(const char *path, mp_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		return mp_fail(e, MPE_CONFIG_SOCKET, 0, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mp_fail(e, MPE_HTTP_LISTEN, errno, "socket: %s", strerror(errno));
	/* A socket file left by a crashed daemon: remove it only if nobody answers on it. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(fd);
		return mp_fail(e, MPE_HTTP_LISTEN, EADDRINUSE, "another daemon is listening on %s", path);
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(path, 0666) < 0 || listen(fd, 128) < 0) {
		int err = errno;
		close(fd);
		return mp_fail(e, MPE_HTTP_LISTEN, err, "cannot listen on %s: %s", path, strerror(err));
	}
	return fd;
}

/* Parses "127.0.0.1:8080" or "[::1]:8080"; only loopback addresses are accepted until TLS exists. */
int listen_tcp_loopback(const char *spec, mp_err *e)
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
	if (!colon[1] || *end || port > 65535)
		return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "bad port in '%s'", spec);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		host[strlen(host) - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1 || !IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "'%s' is not a loopback address (TLS is not "
				       "supported yet, so only loopback is allowed)", spec);
		sl = sizeof *s6;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof host, "127.0.0.1");
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1 || (ntohl(s4->sin_addr.s_addr) >> 24) != 127)
			return mp_fail(e, MPE_CONFIG_LISTEN_TCP, 0, "'%s' is not a loopback address (TLS is not "
				       "supported yet, so only loopback is allowed)", spec);
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
