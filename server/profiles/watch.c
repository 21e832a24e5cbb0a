/* The profiles directory's watch (watch.h): inotify events -> "the set changed". */
#include "server/profiles/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

struct prof_watch {
	const char *path;            /* borrowed */
	int fd;                      /* owned: the inotify instance */
	int wd;
	char last[PROF_SNAP_MAX];    /* the swap last reported changed ("" none yet) */
};

/* What may change the set; IN_ONLYDIR: a path that is no directory is refused, not watched. */
#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF | \
		    IN_MOVE_SELF | IN_ONLYDIR)

struct prof_watch *prof_watch_open(const char *path, int *err)
{
	struct prof_watch *w = calloc(1, sizeof *w);

	if (!w) {
		*err = -ENOMEM;
		return NULL;
	}
	w->path = path;
	if ((w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0 || (w->wd = inotify_add_watch(w->fd, path, WATCH_MASK)) < 0) {
		*err = -errno;
		if (w->fd >= 0)
			close(w->fd);
		free(w);
		return NULL;
	}
	/* The swap in place at start is not a change: it is what the start-time read saw. */
	if (prof_dir_snapshot(path, w->last, sizeof w->last) != 1)
		w->last[0] = '\0';
	return w;
}

void prof_watch_close(struct prof_watch *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}

int prof_watch_fd(const struct prof_watch *w)
{
	return w->fd;
}

static bool is_conf_name(const char *name)
{
	size_t l = strlen(name);
	char base[PROF_NAME_MAX];

	if (l <= 5 || l - 5 >= sizeof base || strcmp(name + l - 5, ".conf"))
		return false;
	memcpy(base, name, l - 5);
	base[l - 5] = '\0';
	return prof_name_ok(base);
}

/* A NAME.conf made (IN_CREATE): a change only when it is a symlink, which is complete when made,
 * and not one of the kubelet's links into "..data/" (those follow or precede a swap, never make
 * one). A regular file is a change when it is closed after writing (IN_CLOSE_WRITE), not before. */
static bool created_link_is_change(const struct prof_watch *w, const char *name)
{
	char target[PATH_MAX];
	int dfd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ssize_t l;

	if (dfd < 0)
		return false;
	l = readlinkat(dfd, name, target, sizeof target - 1);
	close(dfd);
	if (l < 0)
		return false;   /* not a symlink (EINVAL) or gone already (its IN_DELETE follows) */
	target[l] = '\0';
	return strncmp(target, "..data/", 7) != 0;
}

int prof_watch_read(struct prof_watch *w, struct prof_change *c)
{
	/* Aligned as inotify(7) asks. */
	char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool data_moved = false, plain = false;
	ssize_t n;

	memset(c, 0, sizeof *c);
	for (;;) {
		if ((n = read(w->fd, buf, sizeof buf)) < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			p += sizeof *ev + ev->len;
			c->events++;
			if (ev->mask & IN_Q_OVERFLOW) {
				/* Events were lost: read the set again, whatever it is. */
				data_moved = plain = true;
				continue;
			}
			if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
				c->lost = true;
				continue;
			}
			if (!ev->len)
				continue;
			if (!strcmp(ev->name, "..data")) {
				/* The rename over it (a swap), or its first creation (the volume's first write). */
				if (ev->mask & (IN_MOVED_TO | IN_CREATE))
					data_moved = true;
				continue;
			}
			if (!is_conf_name(ev->name) || (ev->mask & IN_ISDIR))
				continue;
			if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE))
				plain = true;
			else if ((ev->mask & IN_CREATE) && created_link_is_change(w, ev->name))
				plain = true;
		}
	}
	switch (prof_dir_snapshot(w->path, c->snap, sizeof c->snap)) {
	case 1:
		/* A ConfigMap volume: only a swap is a change, and once (a lost-events read that finds
		 * the same swap is none); the kubelet's NAME.conf links and their removal are none. */
		c->configmap = true;
		if (data_moved && strcmp(c->snap, w->last)) {
			c->changed = true;
			memcpy(w->last, c->snap, sizeof w->last);
		}
		break;
	case 0:
		c->snap[0] = '\0';
		w->last[0] = '\0';
		c->changed = plain || data_moved;   /* data_moved: "..data" removed by hand, a plain dir again */
		break;
	default:
		/* "..data" is not the kubelet's (refused) or unreadable: the reload reports why. */
		c->snap[0] = '\0';
		c->changed = plain || data_moved;
		break;
	}
	return 0;
}

bool prof_watch_still(const struct prof_watch *w, const char *snap)
{
	char now[PROF_SNAP_MAX];

	return prof_dir_snapshot(w->path, now, sizeof now) == 1 && !strcmp(now, snap);
}
