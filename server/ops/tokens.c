/* Bearer tokens (see tokens.h). */
#include "server/ops/tokens.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "common/jsonfields.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/store/tokens.h"

int token_hash(const char *secret, size_t len, unsigned char out[32])
{
	return gnutls_hash_fast(GNUTLS_DIG_SHA256, secret, len, out) < 0 ? -1 : 0;
}

static void hex(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Names appear in history as "token:NAME" and on terminals: letters, digits, '.', '_', '-'. */
static bool good_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > TOKEN_NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

int token_create(const struct app *app, const json_t *body, const char *created_by, json_t **out, mp_err *e)
{
	static const char *const allowed[] = { "name", "scope", "expires_in_s", NULL };
	const json_t *jn = json_object_get(body, "name"), *js = json_object_get(body, "scope"),
		     *jx = json_object_get(body, "expires_in_s");
	unsigned char rnd[TOKEN_LOOKUP_HEX / 2 + TOKEN_SECRET_HEX / 2], digest[TOKEN_HASH_LEN];
	char lookup[TOKEN_LOOKUP_HEX + 1], secret[TOKEN_SECRET_HEX + 1], text[TOKEN_TEXT_LEN + 1];
	int64_t now = clk_wall_ns(), expires = 0;
	const char *name, *scope;
	int rc = -1;

	*out = NULL;
	if (json_only_fields(body, "", allowed, e) < 0)
		return -1;
	if (!jn || !js)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "a token needs a name and a scope");
	if (!json_is_string(jn) || !json_is_string(js) || (jx && !json_is_null(jx) && !json_is_integer(jx)))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "name and scope are strings, expires_in_s an integer "
			       "or null");
	name = json_string_value(jn);
	scope = json_string_value(js);
	if (!good_name(name))
		return mp_fail(e, MPE_TOKEN_BAD_REQUEST, 0, "a token name is 1 to %d letters, digits, '.', '_' or "
			       "'-', not starting with '.' or '-'", TOKEN_NAME_MAX);
	if (strcmp(scope, "read") && strcmp(scope, "admin"))
		return mp_fail(e, MPE_TOKEN_BAD_REQUEST, 0, "the scope is read or admin");
	if (jx && json_is_integer(jx)) {
		json_int_t x = json_integer_value(jx);
		if (x < 1 || x > TOKEN_MAX_EXPIRY_S)
			return mp_fail(e, MPE_TOKEN_BAD_REQUEST, 0, "expires_in_s is 1 to %lld (10 years), or null "
				       "for a token that does not expire", TOKEN_MAX_EXPIRY_S);
		expires = now + (int64_t)x * 1000000000LL;
	}
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		return mp_fail(e, MPE_INTERNAL_ERROR, errno, "getrandom failed");
	hex(rnd, TOKEN_LOOKUP_HEX / 2, lookup);
	hex(rnd + TOKEN_LOOKUP_HEX / 2, TOKEN_SECRET_HEX / 2, secret);
	snprintf(text, sizeof text, TOKEN_PREFIX "%s_%s", lookup, secret);
	if (token_hash(secret, TOKEN_SECRET_HEX, digest) < 0) {
		mp_fail(e, MPE_INTERNAL_ERROR, 0, "SHA-256 failed");
		goto out;
	}
	if (token_store_insert(app->store, &(struct token_new){ .name = name, .lookup = lookup, .hash = digest,
				       .scope = scope, .created_ns = now, .created_by = created_by,
				       .expires_ns = expires }, e) < 0)
		goto out;
	*out = json_pack("{s:s, s:s, s:s, s:I, s:s?, s:o, s:n, s:n, s:s}", "name", name, "id", lookup, "scope", scope,
			 "created_ns", (json_int_t)now, "created_by", created_by && *created_by ? created_by : NULL,
			 "expires_ns", expires ? json_integer(expires) : json_null(), "last_used_ns", "revoked_ns",
			 "token", text);
	rc = *out ? 0 : mp_nomem(e);
out:
	explicit_bzero(rnd, sizeof rnd);
	explicit_bzero(secret, sizeof secret);
	explicit_bzero(text, sizeof text);
	return rc;
}

int token_revoke(const struct app *app, const char *name, mp_err *e)
{
	return token_store_revoke(app->store, name, clk_wall_ns(), e);
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int token_check(const struct app *app, const char *text, int64_t now_ns, struct token_grant *g, mp_err *e)
{
	char lookup[TOKEN_LOOKUP_HEX + 1];
	unsigned char hash[TOKEN_HASH_LEN];
	struct token_row row;
	int found;

	memset(g, 0, sizeof *g);
	if (strlen(text) != TOKEN_TEXT_LEN || strncmp(text, TOKEN_PREFIX, 4) != 0 || text[4 + TOKEN_LOOKUP_HEX] != '_' ||
	    !is_hex(text + 4, TOKEN_LOOKUP_HEX) || !is_hex(text + 5 + TOKEN_LOOKUP_HEX, TOKEN_SECRET_HEX))
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "the bearer token is malformed (mempolicyctl token "
			       "create prints one: mpt_ + 16 + _ + 64 lower-case hex digits)");
	memcpy(lookup, text + 4, TOKEN_LOOKUP_HEX);
	lookup[TOKEN_LOOKUP_HEX] = '\0';
	if ((found = token_store_lookup(app->store, lookup, &row, e)) < 0)
		return -1;
	if (!found)
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "no such token");
	snprintf(g->name, sizeof g->name, "%s", row.name);
	if (token_hash(text + 5 + TOKEN_LOOKUP_HEX, TOKEN_SECRET_HEX, hash) < 0)
		return mp_fail(e, MPE_INTERNAL_ERROR, 0, "SHA-256 failed");
	if (gnutls_memcmp(hash, row.hash, TOKEN_HASH_LEN) != 0)
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "the token's secret is wrong");
	if (row.revoked_ns)
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "the token '%s' has been revoked", row.name);
	if (row.expires_ns && now_ns >= row.expires_ns)
		return mp_fail(e, MPE_AUTH_UNAUTHENTICATED, 0, "the token '%s' has expired", row.name);
	if (now_ns - row.last_used_ns >= TOKEN_TOUCH_NS) {
		mp_err te = { 0 };
		if (token_store_touch(app->store, row.id, now_ns, &te) < 0)
			log_warn("cannot record the use of token '%s': %s", row.name, te.detail);
	}
	g->admin = row.admin;
	return 0;
}

void token_failure_record(const struct app *app, int64_t now_ns, const char *peer, enum mp_code code,
			  const char *name, const char *detail)
{
	mp_err e = { 0 };

	if (auth_failure_record(app->store, now_ns, peer, mp_code_name(code), name, detail, &e) < 0)
		log_warn("cannot record a failed authentication: %s", e.detail);
}
