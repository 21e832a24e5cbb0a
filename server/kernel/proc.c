#include "server/kernel/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/parse.h"
#include "server/kernel/sysfs.h"

int proc_parse_stat_start(const char *text, uint64_t *start_time)
{
	const char *p = strrchr(text, ')');
	char field[32];

	/* After ")" come fields 3 (state) onwards, one space before each; the start time is 22. */
	if (!p || p == text)
		return -EINVAL;
	p++;
	for (int f = 3; f <= 22; f++) {
		size_t n;
		if (*p != ' ')
			return -EINVAL;
		p++;
		n = strcspn(p, " \n");
		if (n == 0)
			return -EINVAL;
		if (f == 22) {
			if (n >= sizeof field)
				return -EINVAL;
			memcpy(field, p, n);
			field[n] = '\0';
			return parse_u64(field, start_time) < 0 ? -EINVAL : 0;
		}
		p += n;
	}
	return -EINVAL;
}

static int proc_path(char *out, size_t len, const char *root, pid_t pid, const char *name)
{
	int n;

	if (pid <= 0 || pid > PROC_PID_MAX)
		return -ESRCH;
	n = snprintf(out, len, "%s/%d/%s", root, (int)pid, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* An fd of the file opened with flags, or -errno (-ESRCH for ENOENT). */
static int proc_open_flags(const char *procfs_root, pid_t pid, const char *name, int flags)
{
	char path[PATH_MAX];
	int fd, rc;

	if ((rc = proc_path(path, sizeof path, procfs_root, pid, name)) < 0)
		return rc;
	fd = open(path, flags | O_CLOEXEC);
	return fd >= 0 ? fd : errno == ENOENT ? -ESRCH : -errno;
}

static int proc_open(const char *procfs_root, pid_t pid, const char *name)
{
	return proc_open_flags(procfs_root, pid, name, O_RDONLY);
}

const char *proc_file_name(enum proc_file f)
{
	static const char *const names[PROC_FILE_END] = {
		[PROC_MAPS] = "maps", [PROC_SMAPS] = "smaps", [PROC_SMAPS_ROLLUP] = "smaps_rollup",
		[PROC_NUMA_MAPS] = "numa_maps", [PROC_EXE] = "exe",
	};

	return (unsigned)f < PROC_FILE_END ? names[f] : NULL;
}

int proc_open_guarded(const char *procfs_root, pid_t pid, enum proc_file f)
{
	const char *name = proc_file_name(f);

	/* exe is a link to the program: O_PATH follows it (the ptrace check is made then) and gives a
	 * handle that names the file; no read or exec through it without the file's own permission. */
	return name ? proc_open_flags(procfs_root, pid, name, f == PROC_EXE ? O_PATH : O_RDONLY) : -EINVAL;
}

int proc_pidfd(pid_t pid)
{
	long fd = syscall(SYS_pidfd_open, pid, 0U);

	return fd < 0 ? -errno : (int)fd;
}

/* The fd's whole text (the fd is closed); as proc_read_file. */
static int read_whole(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 64 * 1024, off = 0;
	char *b = NULL; /* owned until handed to *buf */
	int rc;

	*buf = NULL;
	*len = 0;
	if (fd < 0) {
		rc = fd == -ENOENT ? -ESRCH : fd;
		goto out;
	}
	if (!(b = malloc(cap))) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;
		if (cap - off < 4096) {
			char *nb;
			if (cap >= max) {
				rc = -EFBIG;
				goto out;
			}
			cap = cap * 2 > max ? max : cap * 2;
			if (!(nb = realloc(b, cap))) {
				rc = -ENOMEM;
				goto out;
			}
			b = nb;
		}
		r = read(fd, b + off, cap - 1 - off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		off += (size_t)r;
	}
	b[off] = '\0';
	*buf = b;
	*len = off;
	b = NULL;
	rc = 0;
out:
	free(b);
	if (fd >= 0)
		close(fd);
	return rc;
}

int proc_read_file(const char *procfs_root, pid_t pid, const char *name, size_t max, char **buf,
		   size_t *len)
{
	return read_whole(proc_open(procfs_root, pid, name), max, buf, len);
}

int proc_read_guarded(const char *procfs_root, proc_open_fn open_fn, pid_t pid, enum proc_file f, size_t max,
		      char **buf, size_t *len)
{
	return read_whole(open_fn(procfs_root, pid, f), max, buf, len);
}

int proc_start_time(const char *procfs_root, pid_t pid, uint64_t *start_time)
{
	/* A stat line is about 52 numbers and a comm of at most 64 bytes: one pread of a buffer on the
	 * stack, not read_whole's 64 KiB from the heap and a second read for EOF (a launch reads this
	 * once, on its way to the answer: bench/README.md section 8). */
	char text[4096];
	int fd = proc_open(procfs_root, pid, "stat"), rc;

	if (fd < 0)
		return fd;
	rc = kfs_pread_text(fd, text, sizeof text);
	close(fd);
	return rc < 0 ? rc : proc_parse_stat_start(text, start_time);
}

int proc_check_identity(const char *procfs_root, pid_t pid, uint64_t expected)
{
	uint64_t now;
	int rc = proc_start_time(procfs_root, pid, &now);

	if (rc < 0)
		return rc;
	return now == expected ? 0 : -ESTALE;
}

int proc_pidfd_alive(int pidfd)
{
	/* Signal 0 sends nothing: ESRCH once the process exited; EPERM (another user's process, no
	 * CAP_KILL) still says it lives. */
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 || errno == EPERM)
		return 0;
	return errno == ESRCH ? -ESRCH : -EBADF;
}

int proc_read_lines(const char *procfs_root, proc_open_fn open_fn, pid_t pid, enum proc_file f, proc_line_fn fn,
		    void *arg)
{
	enum { CHUNK = 256 * 1024, MAX_LINE = 64 * 1024 };
	char *b = NULL; /* owned: CHUNK + MAX_LINE, so a carried partial line always fits */
	size_t have = 0;
	int fd = open_fn(procfs_root, pid, f), rc;

	if (fd < 0) {
		rc = fd == -ENOENT ? -ESRCH : fd;
		goto out;
	}
	if (!(b = malloc(CHUNK + MAX_LINE))) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, b + have, CHUNK);
		char *p, *nl;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		have += (size_t)r;
		p = b;
		while ((nl = memchr(p, '\n', have - (size_t)(p - b)))) {
			if ((rc = fn(arg, p, (size_t)(nl - p))) < 0)
				goto out;
			p = nl + 1;
		}
		have -= (size_t)(p - b);
		if (r == 0) {
			/* A last line without '\n'. */
			rc = have ? fn(arg, p, have) : 0;
			goto out;
		}
		if (have > MAX_LINE) {
			rc = -EFBIG;
			goto out;
		}
		memmove(b, p, have);
	}
out:
	free(b);
	if (fd >= 0)
		close(fd);
	return rc;
}
