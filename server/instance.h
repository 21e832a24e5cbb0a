/* One daemon per database: an exclusive lock held for the daemon's life. */
#ifndef MPD_INSTANCE_H
#define MPD_INSTANCE_H

#include "common/err.h"

/* Locks "<db_path>.lock" (flock, created 0600 if missing) and writes our pid into it. Taken
 * before the database is opened, so a second daemon changes nothing in a database another one
 * serves: no migration, no WAL switch, no recovery marking the first one's work interrupted.
 * Returns the fd (owned by the caller; closing it, or the process dying, releases the lock), or
 * -1: MPE_CONFIG_DB_IN_USE naming the holder's pid, MPE_STORE_OPEN when the file cannot be made. */
int instance_lock(const char *db_path, mp_err *e);

#endif
