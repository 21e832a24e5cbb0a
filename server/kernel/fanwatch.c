#include "server/kernel/fanwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/kernel/hugetlb.h"
#include "server/kernel/sysfs.h"

#define FW_MASK (FAN_MODIFY | FAN_CLOSE_WRITE)

int fw_target_check(const struct knob_catalogue *c, const char *sysfs_root, const struct fw_target *t)
{
	if (t->pad)
		return -EINVAL;
	switch (t->kind) {
	case FW_KNOB:
		return t->size_kb || t->node || !knobs_at(c, t->index) ? -EINVAL : 0;
	case FW_POOL:
		if (t->index || t->node < -1 || t->node >= TOPO_MAX_NODES || htlb_size_exists(sysfs_root, t->size_kb) != 1)
			return -EINVAL;
		return t->node >= 0 && htlb_node_exists(sysfs_root, t->size_kb, (unsigned)t->node) != 1 ? -EINVAL : 0;
	}
	return -EINVAL;
}

/* The default hugetlb size (Hugepagesize: in meminfo), 0 when it cannot be read: the procfs pool
 * files then go unmarked. */
static uint64_t default_size_kb(const char *procfs_root)
{
	char text[8192];
	const char *p;
	unsigned long long kb;

	if (kfs_read(procfs_root, "meminfo", text, sizeof text) < 0 || !(p = strstr(text, "Hugepagesize:")) ||
	    sscanf(p, "Hugepagesize: %llu kB", &kb) != 1)
		return 0;
	return kb;
}

int fw_target_files(const struct knob_catalogue *c, const char *sysfs_root, const char *procfs_root,
		    const struct fw_target *t, char (*paths)[4096])
{
	int n = 0;

	if (t->kind == FW_KNOB) {
		knob_path(c, knobs_at(c, t->index), paths[n++], 4096);
		return n;
	}
	if (t->node >= 0)
		snprintf(paths[n++], 4096, "%s/devices/system/node/node%d/hugepages/hugepages-%llukB/nr_hugepages",
			 sysfs_root, t->node, (unsigned long long)t->size_kb);
	snprintf(paths[n++], 4096, "%s/kernel/mm/hugepages/hugepages-%llukB/nr_hugepages", sysfs_root,
		 (unsigned long long)t->size_kb);
	if (t->size_kb == default_size_kb(procfs_root)) {
		snprintf(paths[n++], 4096, "%s/sys/vm/nr_hugepages", procfs_root);
		snprintf(paths[n++], 4096, "%s/sys/vm/nr_hugepages_mempolicy", procfs_root);
	}
	return n;
}

int fw_open(const struct knob_catalogue *c, const char *sysfs_root, const char *procfs_root,
	    const struct fw_target *t, unsigned n, uint64_t *marked)
{
	char paths[FW_FILES_MAX][4096];
	unsigned flags = FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK;
	int fd;

	*marked = 0;
	if (n > FW_MAX)
		return -EINVAL;
	/* The writer's pidfd where the kernel has it (5.15); its pid alone before. */
	if ((fd = fanotify_init(flags | FAN_REPORT_PIDFD, O_RDONLY | O_CLOEXEC | O_LARGEFILE)) < 0 && errno == EINVAL)
		fd = fanotify_init(flags, O_RDONLY | O_CLOEXEC | O_LARGEFILE);
	if (fd < 0)
		return -errno;
	for (unsigned i = 0; i < n; i++) {
		int nf = fw_target_files(c, sysfs_root, procfs_root, &t[i], paths);
		for (int f = 0; f < nf; f++)
			/* A file this kernel lacks stays unmarked; the caller checks that key on its timer. */
			if (fanotify_mark(fd, FAN_MARK_ADD, FW_MASK, AT_FDCWD, paths[f]) == 0 && f == 0)
				*marked |= 1ULL << i;
	}
	return fd;
}

int fw_read(int fd, fw_event_fn fn, void *arg)
{
	_Alignas(struct fanotify_event_metadata) char buf[8192];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		const struct fanotify_event_metadata *m = (const void *)buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (n == 0)
			return 0;
		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			struct fw_event ev = { .pidfd = -1 };
			struct stat st;
			size_t off = m->metadata_len;

			if (m->vers != FANOTIFY_METADATA_VERSION)
				return -EPROTO;
			/* The info records after the metadata: the pidfd's is the one this group asks for. */
			while (off + sizeof(struct fanotify_event_info_header) <= m->event_len) {
				const struct fanotify_event_info_header *h = (const void *)((const char *)m + off);
				if (h->len < sizeof *h || off + h->len > m->event_len)
					break;
				if (h->info_type == FAN_EVENT_INFO_TYPE_PIDFD &&
				    h->len >= sizeof(struct fanotify_event_info_pidfd)) {
					ev.pidfd = ((const struct fanotify_event_info_pidfd *)h)->pidfd;
					ev.pidfd_info = true;
				}
				off += h->len;
			}
			ev.mask = m->mask;
			ev.modify = (m->mask & FAN_MODIFY) != 0;
			ev.pid = m->pid > 0 ? m->pid : 0;
			ev.overflow = (m->mask & FAN_Q_OVERFLOW) != 0;
			if (m->fd >= 0 && fstat(m->fd, &st) == 0) {
				ev.dev = st.st_dev;
				ev.ino = st.st_ino;
			}
			fn(arg, &ev);
			if (m->fd >= 0)
				close(m->fd);
			if (ev.pidfd >= 0)
				close(ev.pidfd);
		}
	}
}
