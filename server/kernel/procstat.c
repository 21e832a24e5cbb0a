#include "server/kernel/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"

int procstat_parse_start_time(const char *text, uint64_t *ticks)
{
	/* "pid (comm) state ppid ...": comm may hold ") (", so fields count from the last ')'. */
	const char *p = strrchr(text, ')');
	char field[32];
	int f = 2;

	if (!p)
		return -EINVAL;
	p++;
	while (*p) {
		size_t n;
		while (*p == ' ')
			p++;
		n = strcspn(p, " \n");
		if (!n)
			break;
		if (++f == 22) {
			if (n >= sizeof field)
				return -EINVAL;
			memcpy(field, p, n);
			field[n] = '\0';
			return parse_u64(field, ticks) < 0 ? -EINVAL : 0;
		}
		p += n;
	}
	return -EINVAL;
}

int procstat_start_time(const char *procfs_root, pid_t pid, uint64_t *ticks)
{
	char path[PATH_MAX], buf[4096];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof path, "%s/%d/stat", procfs_root, (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = read(fd, buf, sizeof buf - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return procstat_parse_start_time(buf, ticks);
}
