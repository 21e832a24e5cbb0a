/* The listening sockets the API is served on, made before libmicrohttpd takes them over. */
#ifndef MPD_API_LISTEN_H
#define MPD_API_LISTEN_H

#include "common/err.h"

/* Binds and listens on a Unix socket (mode 0666: authorisation is per request, from
 * SO_PEERCRED). A socket file left by a dead daemon is replaced; one a live daemon answers on is
 * an error. Returns the fd or -1. */
int listen_unix_socket(const char *path, mp_err *e);
/* "127.0.0.1:8700", "localhost:8700" or "[::1]:8700": loopback only until TLS exists. The fd or -1. */
int listen_tcp_loopback(const char *spec, mp_err *e);

#endif
