/* Where the database lives, and whose it is. Without privilege separation the daemon is root and
 * any directory will do. With it (--user), the unprivileged side opens, writes and creates the
 * database, its journal and its WAL files, so the rule is:
 *  - a directory the daemon creates for the database (and the default state directory) is given
 *    to the user, mode 0700 (the admin group, often the user's own group, gets the API, not the
 *    database file);
 *  - database files a root daemon left there (db, -wal, -shm, -journal; regular, one link, root's)
 *    are given to the user, so an upgrade keeps its history;
 *  - any other directory must already be writable by the user: the daemon checks this after
 *    dropping privileges and refuses to start (config.user) rather than fail at the first write.
 * Nothing else is chowned: a directory the admin chose stays as the admin made it. */
#ifndef MPD_STATEDIR_H
#define MPD_STATEDIR_H

#include <stdbool.h>

#include "common/err.h"
#include "server/priv/priv.h"

/* mkdir -p (0755) for the directory that will hold path (socket, database). */
void statedir_mkparents(const char *path);

/* As root: creates the database's directory if needed and applies the rule above for u.
 * default_dir: the built-in state directory, which is the daemon's even when it exists. 0, or -1. */
int statedir_prepare(const char *db, const char *default_dir, const struct priv_user *u, mp_err *e);

/* After the drop: 0 when the database's directory is writable and searchable, or -1 with
 * config.user saying what to change. */
int statedir_check(const char *db, const struct priv_user *u, mp_err *e);

#endif
