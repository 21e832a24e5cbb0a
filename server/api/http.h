/* Private to server/api/'s request pipeline (http.c) and the listeners' lifecycle (serve.c): the
 * listener state both see, and the libmicrohttpd callbacks the pipeline gives the listeners. */
#ifndef MPD_API_HTTP_H
#define MPD_API_HTTP_H

#include <microhttpd.h>
#include <stdbool.h>

#include "server/api/api.h"
#include "server/api/conn.h"
#include "server/api/listen.h"
#include "server/api/tls.h"

struct http {
	const struct app *app;     /* borrowed; NULL until http_serve() */
	int fd_unix, fd_tcp;       /* owned until http_serve() hands them to libmicrohttpd; -1 then */
	struct MHD_Daemon *d_unix; /* owned */
	struct MHD_Daemon *d_tcp;  /* owned, NULL without --listen-tcp */
	char *unix_path;           /* owned; unlinked at stop if still our socket (and not systemd's) */
	struct unix_socket_id unix_id;
	bool unix_inherited;       /* systemd's socket: left open for the next start, never shut down */
	char *tcp_hosts[3];        /* owned: the Host values the plain TCP listener answers to */
	struct tls_files tls;      /* owned: cert and key set when the TCP listener speaks TLS */
	struct auth *auth;         /* owned: failed authentications per peer (TLS only) */
	struct conn_limits lim;
	struct conn_table *conns;  /* owned: admission, per-uid counts, request deadlines */
	struct slow *slow;         /* owned: the thread R_SLOW handlers run on (api/slow.c) */
	struct slow *reads;        /* owned: the threads R_READ handlers run on (api/slow.c) */
	struct waits *waits;       /* owned: held answers, ?wait= (api/waits.c) */
};

/* The pipeline (http.c): the access handler and the completion callback, each with the struct
 * http as its closure. */
enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				const char *version, const char *upload, size_t *upload_size, void **con_cls);
/* True when the connection came in on the Unix socket (not the TCP listener). */
bool http_on_unix_socket(struct MHD_Connection *conn);
void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe);

#endif
