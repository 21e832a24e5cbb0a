/* Processes as procfs shows them: a pid's identity (pid + start time) and whole-file reads of the
 * per-process files, which can be megabytes (numa_maps of a process with 100 000 mappings).
 *
 * A pid alone is not an identity: pids are reused. The start time (field 22 of /proc/PID/stat,
 * clock ticks after boot) is fixed for a process's life, so (pid, start time) names one process
 * for as long as the machine is up. Anything that acts on a pid a client saw earlier checks it
 * with proc_check_identity() first. Every path is built here from a number, never client text. */
#ifndef MPD_KERNEL_PROC_H
#define MPD_KERNEL_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The kernel's pid_max limit (PID_MAX_LIMIT on 64-bit): a larger number names no process. */
#define PROC_PID_MAX 4194304

/* The start time from the text of /proc/PID/stat. comm (field 2) may hold spaces and ')', so
 * fields are counted after the last ')'. 0, or -EINVAL for text that is not a stat line. */
int proc_parse_stat_start(const char *text, uint64_t *start_time);

/* The start time of pid under procfs_root. 0; -ESRCH when there is no such process (also a
 * reaped one); another -errno when stat cannot be read. */
int proc_start_time(const char *procfs_root, pid_t pid, uint64_t *start_time);

/* 0 when pid still names the process that started at expected; -ESRCH when pid names nothing;
 * -ESTALE when it names another process (the pid was reused). Callers that act on a pid a client
 * gave with the start time it saw call this just before acting. */
int proc_check_identity(const char *procfs_root, pid_t pid, uint64_t expected);

/* Reads /proc/PID/<name> whole into *buf (owned by the caller, NUL-terminated), length in *len,
 * opened by this process: for the world-readable files (stat, status). name comes from the
 * caller's own constants. 0; -ESRCH when the process is gone (ENOENT from open, ESRCH from read);
 * -ENOMEM; -EFBIG beyond max bytes; another -errno. */
int proc_read_file(const char *procfs_root, pid_t pid, const char *name, size_t max, char **buf,
		   size_t *len);

/* The files the kernel guards with a ptrace-access check made at open, against the opener: under
 * privilege separation only the helper may open them for a process of another user. PROC_EXE is
 * the program's link, opened O_PATH: the fd names the executable (readlink of /proc/self/fd/N),
 * it reads nothing (a drift's writer is named by it). */
enum proc_file { PROC_MAPS, PROC_SMAPS, PROC_SMAPS_ROLLUP, PROC_NUMA_MAPS, PROC_EXE, PROC_FILE_END };
/* "maps", "smaps", ...; NULL for a value out of the enum. */
const char *proc_file_name(enum proc_file f);
/* Opens f of pid in this process, read-only: an fd (owned by the caller), -ESRCH when there is no
 * such process, or another -errno. */
int proc_open_guarded(const char *procfs_root, pid_t pid, enum proc_file f);
/* Who opens a guarded file for the readers below: proc_open_guarded, or the one that decides
 * between this process and the helper (server/priv/act.h, act_proc_open). Same returns. */
typedef int (*proc_open_fn)(const char *procfs_root, pid_t pid, enum proc_file f);

/* proc_read_file of a guarded file, opened by open. */
int proc_read_guarded(const char *procfs_root, proc_open_fn open, pid_t pid, enum proc_file f, size_t max,
		      char **buf, size_t *len);

/* Streams a guarded file line by line (without the '\n'; a line is at most 64 KiB) into fn,
 * which returns 0 to go on or a -errno to stop with. For files too large to hold (smaps of a
 * process with 100 000 mappings is over 100 MB). 0, fn's -errno, or the errors of
 * proc_read_file. */
typedef int (*proc_line_fn)(void *arg, const char *line, size_t len);
int proc_read_lines(const char *procfs_root, proc_open_fn open, pid_t pid, enum proc_file f, proc_line_fn fn,
		    void *arg);

/* A pidfd of pid (pidfd_open(2), close-on-exec; owned by the caller): it pins the process, so a
 * pid reused after its start time was checked cannot be hit. An fd, or -errno (-ESRCH: no such
 * process; -ENOSYS before Linux 5.3). */
int proc_pidfd(pid_t pid);
/* After acting by pid: 0 while the process pidfd (borrowed) names has not exited, -ESRCH once it
 * has, -EBADF for an fd that is not a pidfd. A pidfd does not keep the pid from being reused once
 * the process is reaped; what it gives is the bracket: open it, check the identity by pid, act by
 * pid, then this: while the process it names lives, the pid cannot have named another one. */
int proc_pidfd_alive(int pidfd);

#endif
