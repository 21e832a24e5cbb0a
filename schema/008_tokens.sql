-- Bearer tokens for the TLS listener (server/store/tokens.c). The secret is never stored: only the
-- SHA-256 of it, found by its non-secret lookup id (the token's first part). A revoked token keeps
-- its row, so that the history's "token:NAME" actors stay explained and the name is not reused.
CREATE TABLE tokens (
	id           INTEGER PRIMARY KEY,
	name         TEXT    NOT NULL UNIQUE,
	lookup       TEXT    NOT NULL UNIQUE,   -- 16 hex digits, printed as part of the token
	hash         BLOB    NOT NULL CHECK (length(hash) = 32),   -- SHA-256 of the secret part
	scope        TEXT    NOT NULL CHECK (scope IN ('read', 'admin')),
	created_ns   INTEGER NOT NULL,
	created_by   TEXT,                      -- the Unix user that created it
	expires_ns   INTEGER,                   -- NULL: never
	last_used_ns INTEGER,                   -- to within a minute; NULL: never used
	revoked_ns   INTEGER                    -- NULL: live
) STRICT;

-- Failed authentications on the TLS listener, newest kept: a peer over the rate limit is refused
-- without a row each (one row says it was limited), and the trigger keeps the newest 10000 so a
-- flood from many addresses cannot fill the disk.
CREATE TABLE auth_failures (
	id         INTEGER PRIMARY KEY,
	at_ns      INTEGER NOT NULL,
	peer       TEXT    NOT NULL,            -- address of the client
	reason     TEXT    NOT NULL,            -- the problem code it was answered with
	token_name TEXT,                        -- when the token named a known one (wrong, expired, revoked)
	detail     TEXT    NOT NULL
) STRICT;
CREATE TRIGGER auth_failures_cap AFTER INSERT ON auth_failures
BEGIN
	DELETE FROM auth_failures WHERE id <= NEW.id - 10000;
END;
