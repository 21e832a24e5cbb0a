/* Bearer tokens: made, hashed and revoked here; stored by server/store/tokens.c (hashes only) and
 * checked by server/api/auth.c on the TLS listener. */
#ifndef MPD_OPS_TOKENS_H
#define MPD_OPS_TOKENS_H

#include <jansson.h>
#include <stddef.h>

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

/* SHA-256 (GnuTLS, which libmicrohttpd links already) of the secret part. 0 or -1. */
int token_hash(const char *secret, size_t len, unsigned char out[32]);

/* Creates a token from a request body {"name", "scope": "read"|"admin", "expires_in_s"?}
 * (borrowed; unknown members, types and ranges refused). created_by: the Unix user (borrowed,
 * may be ""). *out (owned by the caller): the token as listed, plus "token": the secret text,
 * which is never shown again. 0, or -1 with e set. */
int token_create(const struct app *app, const json_t *body, const char *created_by, json_t **out, mp_err *e);
/* Revokes the live token named name; 404 token.not_found. */
int token_revoke(const struct app *app, const char *name, mp_err *e);

#endif
