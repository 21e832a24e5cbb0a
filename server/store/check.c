/* Trusting a database before touching it (see internal.h: store_check_header, store_check_schema).
 *
 * The expected shape of a database at schema version v is not a hand-kept list that could drift:
 * it is what the first v compiled-in migrations make, built in a private in-memory database at
 * start and compared table by table, column by column, with the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/store/internal.h"

extern const char *const mpd_schema_migrations[];
extern const size_t mpd_schema_count;

#define HEADER_MAGIC "SQLite format 3"

int store_check_header(const char *path, int *version, mp_err *e)
{
	unsigned char h[100];
	ssize_t got;
	int fd;

	*version = -1;
	/* O_NOFOLLOW is not wanted here (a database may be a link an administrator made); O_RDONLY
	 * without O_CREAT is what matters: this look creates and changes nothing. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return 0;   /* a new database */
		return mp_fail(e, MPE_STORE_OPEN, errno, "cannot read database %s: %s", path, strerror(errno));
	}
	got = pread(fd, h, sizeof h, 0);
	close(fd);
	if (got == 0)
		return 0;   /* an empty file is a new database to SQLite too */
	if (got != (ssize_t)sizeof h || memcmp(h, HEADER_MAGIC, sizeof HEADER_MAGIC))
		return mp_fail(e, MPE_STORE_OPEN, 0, "%s is not a SQLite database; refusing to touch it", path);
	/* The header's user_version (offset 60, big-endian): what the last committed migration said,
	 * readable without SQLite, so that not even a hot journal is rolled back in a file refused. */
	*version = (int)((uint32_t)h[60] << 24 | (uint32_t)h[61] << 16 | (uint32_t)h[62] << 8 | h[63]);
	return 0;
}

/* The names of the tables of db (not SQLite's own), or of the columns of one table. */
static int names(sqlite3 *db, const char *sql, const char *arg, char out[][64], int max)
{
	sqlite3_stmt *s;
	int n = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (arg)
		sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW && n < max)
		snprintf(out[n++], 64, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return n;
}

#define TABLES_SQL "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
#define COLUMNS_SQL "SELECT name FROM pragma_table_info(?1) ORDER BY cid"
#define MAX_NAMES 64

static bool has(char list[][64], int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

int store_check_schema(sqlite3 *db, int version, mp_err *e)
{
	sqlite3 *ref = NULL;   /* owned: the shape the migrations make */
	char want[MAX_NAMES][64], have[MAX_NAMES][64], wcol[MAX_NAMES][64], hcol[MAX_NAMES][64];
	char missing[512] = "";
	size_t len = 0;
	int nw, nh, rc = -1;

	if (sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		mp_nomem(e);
		goto out;
	}
	for (int i = 0; i < version && (size_t)i < mpd_schema_count; i++)
		if (sqlite3_exec(ref, mpd_schema_migrations[i], NULL, NULL, NULL) != SQLITE_OK) {
			mp_fail(e, MPE_STORE_MIGRATE, 0, "migration %d does not apply to an empty database: %s", i + 1,
				sqlite3_errmsg(ref));
			goto out;
		}
	nw = names(ref, TABLES_SQL, NULL, want, MAX_NAMES);
	if ((nh = names(db, TABLES_SQL, NULL, have, MAX_NAMES)) < 0) {
		mp_fail(e, MPE_STORE_OPEN, 0, "cannot read the database's tables: %s", sqlite3_errmsg(db));
		goto out;
	}
	for (int t = 0; t < nw && len < sizeof missing; t++) {
		if (!has(have, nh, want[t])) {
			len += (size_t)snprintf(missing + len, sizeof missing - len, "%stable %s", len ? ", " : "", want[t]);
			continue;
		}
		int nwc = names(ref, COLUMNS_SQL, want[t], wcol, MAX_NAMES);
		int nhc = names(db, COLUMNS_SQL, want[t], hcol, MAX_NAMES);
		for (int c = 0; c < nwc && len < sizeof missing; c++)
			if (!has(hcol, nhc, wcol[c]))
				len += (size_t)snprintf(missing + len, sizeof missing - len, "%scolumn %s.%s",
							len ? ", " : "", want[t], wcol[c]);
	}
	if (len) {
		mp_fail(e, MPE_STORE_SCHEMA, 0, "the database says schema version %d but lacks %s; refusing to "
			"touch it (restore it from a backup, or move it aside to start afresh)", version, missing);
		goto out;
	}
	rc = 0;
out:
	sqlite3_close(ref);
	return rc;
}
