/* A process's start time from /proc/PID/stat (field 22, clock ticks since boot): with the pid it
 * names one process, where a pid alone may be reused. Interim: proc-inspect's identity helper
 * replaces this when it lands. */
#ifndef MPD_KERNEL_PROCSTAT_H
#define MPD_KERNEL_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

/* 0, or -errno (-ENOENT / -ESRCH when there is no such process, -EINVAL for unparsable text). */
int procstat_start_time(const char *procfs_root, pid_t pid, uint64_t *ticks);
/* Parses the text of a stat file (the comm field may hold spaces and parentheses). */
int procstat_parse_start_time(const char *text, uint64_t *ticks);

#endif
