/* Bearer tokens and failed authentications (schema/008_tokens.sql). Every function here takes the
 * store's lock itself. The store sees only the SHA-256 of a secret, never the secret. */
#ifndef MPD_STORE_TOKENS_H
#define MPD_STORE_TOKENS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct store;

#define TOKEN_MAX 1000          /* tokens held at most, revoked ones included */
#define TOKEN_HASH_LEN 32       /* SHA-256 */

struct token_new {
	const char *name;            /* validated by the caller */
	const char *lookup;          /* the non-secret id, 16 hex digits */
	const unsigned char *hash;   /* TOKEN_HASH_LEN bytes */
	const char *scope;           /* "read" or "admin" */
	int64_t created_ns;
	const char *created_by;      /* NULL when the uid has no name */
	int64_t expires_ns;          /* 0: never */
};
/* Inserts; 409 token.exists when the name is taken (revoked included), 409 token.limit when
 * TOKEN_MAX rows exist. */
int token_store_insert(struct store *st, const struct token_new *n, mp_err *e);

/* What a lookup by the non-secret id finds. */
struct token_row {
	int64_t id;
	char name[64];
	unsigned char hash[TOKEN_HASH_LEN];
	bool admin;                  /* scope "admin"; else "read" */
	int64_t expires_ns;          /* 0: never */
	int64_t revoked_ns;          /* 0: live */
	int64_t last_used_ns;        /* 0: never used */
};
/* 1 found (row filled), 0 no such lookup id, -1 the store failed (e set). Reader connection. */
int token_store_lookup(struct store *st, const char *lookup, struct token_row *row, mp_err *e);
/* Sets last_used_ns (writer connection). */
int token_store_touch(struct store *st, int64_t id, int64_t now_ns, mp_err *e);
/* Every token, by creation, without hashes (owned JSON array). */
json_t *token_store_list(struct store *st, mp_err *e);
/* Marks a live token revoked; 404 token.not_found when no live token has the name. */
int token_store_revoke(struct store *st, const char *name, int64_t now_ns, mp_err *e);

/* One failed authentication (a trigger keeps the newest 10000). token_name may be NULL. */
int auth_failure_record(struct store *st, int64_t at_ns, const char *peer, const char *reason,
			const char *token_name, const char *detail, mp_err *e);

#endif
