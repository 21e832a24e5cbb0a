/* process_madvise(2) on another process, through a pidfd: the pidfd pins the process, so a pid
 * reused after the caller checked its start time cannot be hit. */
#ifndef MPD_KERNEL_MADV_H
#define MPD_KERNEL_MADV_H

#include <stdint.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* MADV_COLLAPSE of [start, start + len) in the process pidfd names (borrowed), by this process
 * (process_madvise needs CAP_SYS_NICE and ptrace access). Bytes advised, or -errno. */
long madv_collapse(int pidfd, uint64_t start, uint64_t len);

#endif
