/* Who is calling on the TLS listener: the client certificate (with --tls-client-ca) and a bearer
 * token (every request), with failures recorded in the store and rate-limited per peer address.
 * The Unix socket and the plain loopback listener never come here: SO_PEERCRED decides there, and
 * an Authorization header is ignored (a token is only ever accepted over TLS). */
#ifndef MPD_API_AUTH_H
#define MPD_API_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "server/app.h"

struct MHD_Connection;
struct caller;

#define AUTH_WINDOW_S          60    /* failures are counted per peer over this window */
#define AUTH_DEFAULT_FAILS     10    /* failures per window before the peer is refused (429) */
#define AUTH_PEERS             1024  /* peers remembered; the oldest window is forgotten first */

struct auth;   /* the per-peer failure table */

/* max_fails: failures per AUTH_WINDOW_S before a peer gets 429. NULL when out of memory. */
struct auth *auth_new(unsigned max_fails);
void auth_free(struct auth *a);   /* NULL is fine */

/* Authenticates a request on the TLS listener. On success fills who (known stays false: there is
 * no uid; admin from the token's scope; name "token:NAME"; token set) and returns 0. Otherwise -1
 * with e set: 401 auth.unauthenticated, 403 auth.client_certificate, 429 auth.rate_limited with
 * *retry_after_s. The failure is recorded (auth_failures) and counted against the peer. */
int auth_tls_request(struct auth *a, const struct app *app, struct MHD_Connection *conn, bool client_ca,
		     struct caller *who, unsigned *retry_after_s, mp_err *e);

#endif
