/* Who changed a managed key: the writer a fanotify event named, read from /proc/PID at the moment
 * the event is handled, and believed only when the writer's pidfd (the event's own, made by the
 * kernel from the process that wrote) still names a live process after the reads — a pid that was
 * reused by then names someone else, and is refused rather than blamed. */
#ifndef MPD_OPS_DRIFT_CAUSE_H
#define MPD_OPS_DRIFT_CAUSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct drift_writer {
	pid_t pid;                   /* the event's; 0 when the kernel gave none */
	bool named;                  /* comm, uid, cgroup (and exe when it could be read) are the writer's */
	bool verified;               /* named through the event's own pidfd, not a pidfd opened later */
	char comm[32];
	char exe[512];               /* "" when it could not be read (a zombie has none) */
	bool have_uid;
	uid_t uid;                   /* real uid */
	pid_t ppid;                  /* its parent's pid, 0 unknown */
	char cgroup[512];            /* the unified hierarchy's path, else systemd's v1 one; "" unknown */
	char unit[128];              /* the innermost systemd unit (.service, .scope) of cgroup; "" none */
	char why[128];               /* when !named: why not */
};

/* Reads the writer pid under procfs_root. pidfd (borrowed) is the event's: >= 0 a process that
 * had not been reaped when the event was read; < 0 with group_pidfds (the group reports them) the
 * writer was reaped before that. Without group_pidfds (a kernel before 5.15) a pidfd is opened
 * here, which cannot tell a reused pid: verified stays false. Fills *w; never fails. */
void drift_attribute(const char *procfs_root, pid_t pid, int pidfd, bool group_pidfds, struct drift_writer *w);

/* The innermost systemd unit (a segment ending in .service or .scope) of a cgroup path into unit
 * ("" when none): "/system.slice/tuned.service" -> "tuned.service". */
void drift_unit_of(const char *cgpath, char *unit, size_t len);

/* {"pid", "comm", "exe", "uid", "unit", "cgroup", "verified"} (null for what is unknown), with
 * "unnamed": why when the process could not be named. New reference, NULL when out of memory. */
json_t *drift_writer_json(const struct drift_writer *w);

#endif
