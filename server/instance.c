/* One daemon per database (see instance.h). flock rather than fcntl locks: it belongs to the open
 * file, not the process, so SQLite's own fcntl locks on the database cannot release it, and the
 * kernel drops it when the daemon dies however it dies (no stale lock after kill -9). */
#include "server/instance.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int instance_lock(const char *db_path, mp_err *e)
{
	char path[PATH_MAX], pid[32] = "";
	int fd, n;
	ssize_t got;

	if ((size_t)snprintf(path, sizeof path, "%s.lock", db_path) >= sizeof path)
		return mp_fail(e, MPE_STORE_OPEN, ENAMETOOLONG, "database path too long: %s", db_path);
	/* O_NOFOLLOW: the lock file sits next to the database, never somewhere a link points. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return mp_fail(e, MPE_STORE_OPEN, errno, "cannot open the lock file %s: %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;
		got = pread(fd, pid, sizeof pid - 1, 0);
		pid[got > 0 ? strcspn(pid, "\n") : 0] = '\0';
		close(fd);
		if (err == EWOULDBLOCK)
			return mp_fail(e, MPE_CONFIG_DB_IN_USE, 0, "another daemon%s%s%s already serves %s (it holds %s)",
				       pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "", db_path, path);
		return mp_fail(e, MPE_STORE_OPEN, err, "cannot lock %s: %s", path, strerror(err));
	}
	n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		int err = errno;
		close(fd);
		return mp_fail(e, MPE_STORE_OPEN, err, "cannot write %s: %s", path, strerror(err));
	}
	return fd;
}
