/* The listening sockets the API is served on, made before libmicrohttpd takes them over. */
#ifndef MPD_API_LISTEN_H
#define MPD_API_LISTEN_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"

/* Which file is our socket: removed at stop only if the path still names it. */
struct unix_socket_id {
	dev_t dev;
	ino_t ino;
};

/* Binds and listens on a Unix socket (mode 0666, set by the umask at bind: authorisation is per
 * request, from SO_PEERCRED). Only a socket file nobody answers on is replaced; anything else at
 * the path (a live daemon's socket, a regular file, a directory, a symlink) is an error and left
 * alone. Fills id; returns the fd or -1. */
int listen_unix_socket(const char *path, struct unix_socket_id *id, mp_err *e);
/* Unlinks path if it is still the socket id names. */
void listen_unix_release(const char *path, const struct unix_socket_id *id);
/* "127.0.0.1:8700", "localhost:8700" or "[::1]:8700"; any address ("0.0.0.0:8443") only when
 * any_address (the listener speaks TLS). The fd or -1. */
int listen_tcp(const char *spec, bool any_address, mp_err *e);

#endif
