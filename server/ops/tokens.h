/* Bearer tokens: made, hashed and revoked here; stored by server/store/tokens.c (hashes only) and
 * checked by server/api/auth.c on the TLS listener. */
#ifndef MPD_OPS_TOKENS_H
#define MPD_OPS_TOKENS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "server/app.h"

/* A token is "mpt_" + 16 hex digits (the non-secret lookup id, what the store finds it by) + "_"
 * + 64 hex digits (the secret: 256 bits from getrandom). Only SHA-256(secret) is stored. */
#define TOKEN_PREFIX      "mpt_"
#define TOKEN_LOOKUP_HEX  16
#define TOKEN_SECRET_HEX  64
#define TOKEN_TEXT_LEN    (4 + TOKEN_LOOKUP_HEX + 1 + TOKEN_SECRET_HEX)
#define TOKEN_NAME_MAX    48
#define TOKEN_MAX_EXPIRY_S (10LL * 366 * 86400)
#define TOKEN_TOUCH_NS     (60LL * 1000000000)   /* last_used_ns is kept to within a minute */

/* SHA-256 (GnuTLS, which libmicrohttpd links already) of the secret part. 0 or -1. */
int token_hash(const char *secret, size_t len, unsigned char out[32]);

/* Creates a token from a request body {"name", "scope": "read"|"admin", "expires_in_s"?}
 * (borrowed; unknown members, types and ranges refused). created_by: the Unix user (borrowed,
 * may be ""). *out (owned by the caller): the token as listed, plus "token": the secret text,
 * which is never shown again. 0, or -1 with e set. */
int token_create(const struct app *app, const json_t *body, const char *created_by, json_t **out, mp_err *e);
/* Revokes the live token named name; 404 token.not_found. */
int token_revoke(const struct app *app, const char *name, mp_err *e);

/* What a bearer token proves once token_check has accepted it. */
struct token_grant {
	bool admin;                  /* scope "admin"; else "read" */
	char name[64];               /* the token's name once its lookup id matched (also when the
				      * check then failed: the failure record names it), else "" */
};

/* Checks the text after "Bearer " (borrowed): well formed, a stored token of that lookup id whose
 * secret hashes to the stored hash (constant time), not revoked, not expired at now_ns; its use
 * is recorded when the last record is older than TOKEN_TOUCH_NS. 0 with *g filled, or -1 with 401
 * auth.unauthenticated (the client's fault) or the store's error in e, g->name as above. */
int token_check(const struct app *app, const char *text, int64_t now_ns, struct token_grant *g, mp_err *e);
/* Records one failed authentication (auth_failures); a store failure is logged, not returned:
 * the refusal stands either way. name may be NULL. */
void token_failure_record(const struct app *app, int64_t now_ns, const char *peer, enum mp_code code,
			  const char *name, const char *detail);

#endif
