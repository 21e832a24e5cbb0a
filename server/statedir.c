#include "server/statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void statedir_mkparents(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
}

static int dir_of(const char *db, char *out, size_t len, mp_err *e)
{
	char copy[PATH_MAX];

	if ((size_t)snprintf(copy, sizeof copy, "%s", db) >= sizeof copy ||
	    (size_t)snprintf(out, len, "%s", dirname(copy)) >= len)
		return mp_fail(e, MPE_CONFIG_USER, ENAMETOOLONG, "the database path is too long");
	return 0;
}

/* A database file a root daemon left: given to u if it is a plain file of root's with one link.
 * Opened without following links and changed through the fd, so a name planted by the user
 * cannot send the chown elsewhere. */
static void give_file(const char *path, const struct priv_user *u)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_nlink == 1 && sb.st_uid == 0)
		if (fchown(fd, u->uid, u->gid) < 0) {
			/* statedir_check and the store report what then cannot be written */
		}
	close(fd);
}

int statedir_prepare(const char *db, const char *default_dir, const struct priv_user *u, mp_err *e)
{
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
	char dir[PATH_MAX], path[PATH_MAX + 16], def[PATH_MAX];
	struct stat sb;
	bool ours;
	int fd;

	if (dir_of(db, dir, sizeof dir, e) < 0 || dir_of(default_dir, def, sizeof def, e) < 0)
		return -1;
	ours = stat(dir, &sb) < 0 && errno == ENOENT;
	statedir_mkparents(db);
	ours = ours || !strcmp(dir, def);
	if (ours) {
		if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return mp_fail(e, MPE_CONFIG_USER, errno, "cannot open the database's directory %s: %s", dir,
				       strerror(errno));
		if (fstat(fd, &sb) == 0 && sb.st_uid == 0 && (fchown(fd, u->uid, u->gid) < 0 || fchmod(fd, 0700) < 0)) {
			int err = errno;
			close(fd);
			return mp_fail(e, MPE_CONFIG_USER, err, "cannot give the database's directory %s to user %s: %s",
				       dir, u->name, strerror(err));
		}
		close(fd);
	}
	if (stat(dir, &sb) == 0 && sb.st_uid == u->uid)
		for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
			snprintf(path, sizeof path, "%s%s", db, suffixes[i]);
			give_file(path, u);
		}
	return 0;
}

int statedir_check(const char *db, const struct priv_user *u, mp_err *e)
{
	char dir[PATH_MAX];

	if (dir_of(db, dir, sizeof dir, e) < 0)
		return -1;
	if (access(dir, W_OK | X_OK) < 0)
		return mp_fail(e, MPE_CONFIG_USER, errno, "the database's directory %s is not writable by user %s (%s): "
			       "give it to %s or choose --db elsewhere", dir, u->name, strerror(errno), u->name);
	return 0;
}
