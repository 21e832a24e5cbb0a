/* One HTTP request over the daemon's Unix socket without libcurl, for `mempolicyctl run`, whose
 * whole work is one request and then the program's exec: it is launch latency, which numactl (one
 * set_mempolicy, no request) sets the bar for. libcurl's set-up for one request (its handle and
 * buffers, the multi handle's socketpair, the connection cache, five getsockname/getpeername) was
 * about 0.1 ms of a run (bench/README.md section 8). Every other command keeps libcurl
 * (client/http.c): they make several requests on one connection, or go over https.
 *
 * The request says Connection: close, so the answer is read to EOF; the daemon (libmicrohttpd,
 * a response built whole) sends a Content-Length, which is checked against what came. A chunked
 * answer is refused, never guessed at. */
#ifndef MPD_CLIENT_UNIXREQ_H
#define MPD_CLIENT_UNIXREQ_H

#include <stddef.h>

#include "client/http.h"

/* The largest answer read: a self launch's is a few hundred bytes, a problem about as much. */
#define UNIXREQ_MAX_ANSWER 65536

/* http_call's contract for one request over the socket at socket_path: 0 when the daemon answered
 * (any status; r->body set when it sent JSON, r->error when that did not parse), -1 when it could
 * not be reached or the answer is not HTTP (no socket, refused, reset, timed out): r->error says
 * why, as curl's path says it for the socket (the errno's text). body is borrowed, may be NULL. */
int unixreq_call(const char *socket_path, const char *method, const char *path, json_t *body,
		 struct http_result *r);

/* The answer's bytes (len of them, not NUL-terminated) into r: as unixreq_call returns. Apart for
 * the unit test. */
int unixreq_parse(const char *buf, size_t len, struct http_result *r);

#endif
