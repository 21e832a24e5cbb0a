/* fanotify watches of the files a profile manages, for verification without polling: a group
 * (FAN_CLASS_NOTIF: it is told, it blocks nothing) with FAN_MODIFY | FAN_CLOSE_WRITE marks on the
 * files of a closed kind of target, and the reader of its events.
 *
 * A target is never a path: a catalogue knob is its index in the knob catalogue, a hugetlb pool
 * its page size and node (-1 global). The files are built here from those numbers: the knob's own
 * file; the pool's nr_hugepages, and for a node's pool also the size's global nr_hugepages (a
 * global write redistributes the nodes' pools), and for the default size's pools also
 * /proc/sys/vm/nr_hugepages and nr_hugepages_mempolicy (writes there change the same pools). So
 * whoever makes the group — the privileged helper under privilege separation — marks only those
 * files, whatever it was asked.
 *
 * fanotify_init needs CAP_SYS_ADMIN. With FAN_REPORT_PIDFD (Linux 5.15) each event carries a pidfd
 * of the writer, made when the event is read: FAN_NOPIDFD once the writer was reaped, so a pid
 * that names another process by then is never taken for the writer. */
#ifndef MPD_KERNEL_FANWATCH_H
#define MPD_KERNEL_FANWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/kernel/knobs.h"

enum fw_kind { FW_KNOB = 1, FW_POOL = 2 };

/* One target; the wire format's own (server/priv/proto.h carries an array of these). */
struct fw_target {
	uint32_t kind;          /* enum fw_kind */
	uint32_t index;         /* FW_KNOB: in the knob catalogue; else 0 */
	uint64_t size_kb;       /* FW_POOL: a hugetlb size the kernel has; else 0 */
	int32_t node;           /* FW_POOL: -1 global, or a node with that pool; else 0 */
	uint32_t pad;           /* 0 */
};

/* Targets in one group at most: the answer says which were marked as bits of one word. */
#define FW_MAX 64
/* Files one target may mark (a node's pool of the default size: its own, the size's global, the
 * two procfs files). */
#define FW_FILES_MAX 4

/* 0 when t names a knob of c or a pool the kernel has (size and node), -EINVAL otherwise; reads
 * nothing but the pool's directory. What the helper checks. */
int fw_target_check(const struct knob_catalogue *c, const char *sysfs_root, const struct fw_target *t);

/* The files of target t (which fw_target_check accepted), absolute, into paths[FW_FILES_MAX]
 * (each PATH_MAX): how many. The first is the target's own file. */
int fw_target_files(const struct knob_catalogue *c, const char *sysfs_root, const char *procfs_root,
		    const struct fw_target *t, char (*paths)[4096]);

/* A new group (non-blocking, close-on-exec; FAN_REPORT_PIDFD when the kernel has it) with marks on
 * every file of each of the n (<= FW_MAX) targets, which must have passed fw_target_check: the fd
 * (owned by the caller), with bit i of *marked set when target i's own file was marked (a knob
 * this kernel lacks is not), or -errno (-EPERM without CAP_SYS_ADMIN, -ENOSYS without fanotify). */
int fw_open(const struct knob_catalogue *c, const char *sysfs_root, const char *procfs_root,
	    const struct fw_target *t, unsigned n, uint64_t *marked);

/* One event as the reader sees it. */
struct fw_event {
	bool overflow;          /* the queue overflowed: events were lost, nothing else is set */
	uint64_t mask;          /* FAN_MODIFY, FAN_CLOSE_WRITE */
	bool modify;            /* FAN_MODIFY in mask: bytes were written (a close alone may follow a
	                         * write already seen, or a write the kernel refused) */
	pid_t pid;              /* the writer's (its thread group), 0 when the kernel gave none */
	bool pidfd_info;        /* the group reports pidfds (the event has the record): a pidfd < 0 is then
	                         * FAN_NOPIDFD, the writer reaped before the event was read */
	int pidfd;              /* borrowed for the callback's duration; < 0: FAN_NOPIDFD, or no record */
	dev_t dev;              /* the file written (fstat of the event's fd) */
	ino_t ino;
};
typedef void (*fw_event_fn)(void *arg, const struct fw_event *ev);

/* Reads what is queued on the group fd (borrowed, non-blocking) and calls fn for each event;
 * closes the event's fds and pidfds after fn. 0 when the queue is empty, or -errno. */
int fw_read(int fd, fw_event_fn fn, void *arg);

#endif
