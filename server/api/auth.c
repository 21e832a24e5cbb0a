/* Authentication on the TLS listener (see auth.h). */
#include "server/api/auth.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "server/api/api.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/ops/tokens.h"

struct peer_slot {
	char addr[INET6_ADDRSTRLEN];  /* "" when free */
	int64_t window_ns;            /* monotonic start of the current window */
	unsigned fails;               /* in the current window */
};

struct auth {
	unsigned max_fails;
	pthread_mutex_t mu;           /* guards slot[] */
	struct peer_slot slot[AUTH_PEERS];
};

struct auth *auth_new(unsigned max_fails)
{
	struct auth *a = calloc(1, sizeof *a);

	if (!a)
		return NULL;
	a->max_fails = max_fails;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

void auth_free(struct auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	free(a);
}

/* The peer's slot (a->mu held), claiming the one whose window began longest ago when the table is
 * full: a flood from many addresses forgets old peers rather than growing. */
static struct peer_slot *slot_of(struct auth *a, const char *addr)
{
	struct peer_slot *oldest = &a->slot[0];

	for (size_t i = 0; i < AUTH_PEERS; i++) {
		struct peer_slot *p = &a->slot[i];
		if (!strcmp(p->addr, addr))
			return p;
		if (!p->addr[0] || (oldest->addr[0] && p->window_ns < oldest->window_ns))
			oldest = p;
	}
	memset(oldest, 0, sizeof *oldest);
	snprintf(oldest->addr, sizeof oldest->addr, "%s", addr);
	return oldest;
}

/* Seconds until the peer may try again, 0 when it may now. */
static unsigned limited(struct auth *a, const char *addr, int64_t now)
{
	unsigned left = 0;

	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < AUTH_PEERS; i++) {
		struct peer_slot *p = &a->slot[i];
		int64_t end = p->window_ns + AUTH_WINDOW_S * 1000000000LL;
		if (strcmp(p->addr, addr) != 0)
			continue;
		if (p->fails >= a->max_fails && now < end)
			left = (unsigned)((end - now + 999999999) / 1000000000);
		break;
	}
	pthread_mutex_unlock(&a->mu);
	return left;
}

/* Counts one failure; true when it is the one that reaches the limit. */
static bool count_failure(struct auth *a, const char *addr, int64_t now)
{
	struct peer_slot *p;
	bool reached;

	pthread_mutex_lock(&a->mu);
	p = slot_of(a, addr);
	if (!p->fails || now >= p->window_ns + AUTH_WINDOW_S * 1000000000LL) {
		p->window_ns = now;
		p->fails = 0;
	}
	reached = ++p->fails == a->max_fails;
	pthread_mutex_unlock(&a->mu);
	return reached;
}

static void peer_text(struct MHD_Connection *conn, char *out, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(out, len, "?");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)len);
}

/* The client certificate: present, chaining to --tls-client-ca, valid now. libmicrohttpd asks
 * for one when given a trust list but lets the handshake through without it, so this is where
 * mutual TLS is enforced. */
static int check_client_cert(struct MHD_Connection *conn, mp_err *e)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
	unsigned n = 0, status = 0;
	gnutls_datum_t txt = { 0 };
	int rc;

	if (!s || !gnutls_certificate_get_peers(s, &n) || !n)
		return mp_fail(e, MPE_AUTH_CLIENT_CERTIFICATE, 0, "this listener needs a client certificate "
			       "signed by its client CA, and the client sent none");
	rc = gnutls_certificate_verify_peers2(s, &status);
	if (rc < 0)
		return mp_fail(e, MPE_AUTH_CLIENT_CERTIFICATE, 0, "the client certificate cannot be verified: %s",
			       gnutls_strerror(rc));
	if (status) {
		gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &txt, 0);
		mp_fail(e, MPE_AUTH_CLIENT_CERTIFICATE, 0, "the client certificate is not accepted: %s",
			txt.data ? (const char *)txt.data : "untrusted");
		gnutls_free(txt.data);
		return -1;
	}
	return 0;
}

static enum MHD_Result count_auth(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	(void)value;
	if (!strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION))
		++*(unsigned *)cls;
	return MHD_YES;
}

/* The bearer token: one Authorization header "Bearer mpt_<lookup>_<secret>", checked by
 * token_check (server/ops/tokens.c). *name is the token's name once the id matched (for the
 * failure record), "" before. */
static int check_bearer(const struct app *app, struct MHD_Connection *conn, int64_t now, struct caller *who,
			char *name, size_t name_len, mp_err *e)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	struct token_grant g;
	unsigned nh = 0;
	int rc;

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_auth, &nh);
	if (!h)
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "this listener needs 'Authorization: Bearer TOKEN'");
	if (nh != 1)
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "more than one Authorization header");
	if (strncasecmp(h, "Bearer ", 7) != 0)
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "the Authorization scheme must be Bearer");
	rc = token_check(app, h + 7, now, &g, e);
	snprintf(name, name_len, "%s", g.name);
	if (rc < 0)
		return -1;
	memset(who, 0, sizeof *who);
	who->token = true;
	who->admin = g.admin;
	snprintf(who->name, sizeof who->name, "token:%.*s", TOKEN_NAME_MAX, g.name);
	return 0;
}

int auth_tls_request(struct auth *a, const struct app *app, struct MHD_Connection *conn, bool client_ca,
		     struct caller *who, unsigned *retry_after_s, mp_err *e)
{
	char peer[INET6_ADDRSTRLEN], name[64] = "";
	int64_t mono = clk_mono_ns(), now = clk_wall_ns();
	unsigned left;

	peer_text(conn, peer, sizeof peer);
	*retry_after_s = 0;
	if ((left = limited(a, peer, mono))) {
		*retry_after_s = left;
		return mp_fail(e, MPE_AUTH_RATE_LIMITED, 0, "%u failed authentications from %s in %d s; try again "
			       "in %u s", a->max_fails, peer, AUTH_WINDOW_S, left);
	}
	if ((client_ca && check_client_cert(conn, e) < 0) ||
	    check_bearer(app, conn, now, who, name, sizeof name, e) < 0) {
		if (e->code != MPE_AUTH_UNAUTHENTICATED && e->code != MPE_AUTH_CLIENT_CERTIFICATE)
			return -1;   /* the store failed: not the client's fault, not counted */
		log_warn("authentication failed from %s: %s", peer, e->detail);
		token_failure_record(app, now, peer, e->code, name[0] ? name : NULL, e->detail);
		if (count_failure(a, peer, mono)) {
			log_warn("%s reached %u failed authentications in %d s: refused until the window ends", peer,
				 a->max_fails, AUTH_WINDOW_S);
			token_failure_record(app, now, peer, MPE_AUTH_RATE_LIMITED, NULL,
					     "the peer is refused until its window ends");
		}
		return -1;
	}
	return 0;
}
