/* Capability sets of the two sides of privilege separation (server/priv/priv.h). */
#ifndef MPD_PRIV_CAPS_H
#define MPD_PRIV_CAPS_H

#include <stdint.h>

/* The highest capability this kernel knows (/proc/sys/kernel/cap_last_cap; 40 when unreadable). */
int priv_cap_last(void);

/* What the helper keeps, and why (each bit is one kind of request in proto.h):
 *  CAP_DAC_OVERRIDE  knob and pool files are root's: the helper stays uid 0, and this keeps the
 *                    answer for a read-only file (or a tree under a 0700 directory) what it was
 *                    when the whole daemon ran as root;
 *  CAP_SYS_ADMIN     kernel.numa_balancing refuses writers without it (kernel-interfaces.md);
 *  CAP_SYS_NICE      migrate_pages(2) of another user's process;
 *  CAP_SYS_PTRACE    /proc/PID/{maps,smaps,smaps_rollup,numa_maps} and migrate_pages of a process
 *                    of another uid (PTRACE_MODE_READ) or one that is not dumpable. */
uint64_t priv_helper_capset(void);

/* In the helper, as root: the bounding set, permitted and effective become priv_helper_capset(),
 * inheritable and ambient empty, no_new_privs. 0 or -errno. */
int priv_helper_caps(void);

#endif
