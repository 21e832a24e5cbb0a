/* The serving side's seccomp filter (libseccomp): what the unprivileged daemon of privilege
 * separation (server/priv/priv.h) must never need, refused by the kernel.
 *
 * After priv_drop() every kernel write, launch, probe, migration and collapse goes through the
 * helper, so the serving process never execs, traces, changes memory policy, mounts, loads
 * modules or changes identity. The filter makes those calls fail with EPERM in every thread, so
 * that code execution gained through a parser bug gains nothing from them either. Default allow:
 * the deny list names what an attacker would use, where an allow list would have to follow every
 * library's (libmicrohttpd, GnuTLS, SQLite, glibc's NSS) syscalls release by release.
 *
 * Only the serving side of privilege separation gets it. With --user root the one process
 * launches programs and probes and sets policy itself, and its children would inherit any filter;
 * the helper forks the same children (docs/DESIGN.md, Security, says why neither is filtered). */
#ifndef MPD_KERNEL_SANDBOX_H
#define MPD_KERNEL_SANDBOX_H

#include <stdbool.h>

#include "common/err.h"

/* Sanitizer builds keep ptrace: LeakSanitizer stops the world at exit from a clone of the process
 * (which inherits the filter) by PTRACE_ATTACHing every thread. Nothing else the ASan, UBSan,
 * LSan or TSan runtimes do after start-up is on the deny list (GCC's runtimes symbolize in
 * process with libbacktrace, without exec). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANDBOX_KEEPS_PTRACE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(leak_sanitizer)
#define SANDBOX_KEEPS_PTRACE 1
#endif
#endif
#ifndef SANDBOX_KEEPS_PTRACE
#define SANDBOX_KEEPS_PTRACE 0
#endif

enum sandbox_result {
	SANDBOX_ON = 0,          /* the filter is loaded on every thread */
	SANDBOX_UNSUPPORTED = 1, /* the kernel has no seccomp filters (EINVAL): nothing changed */
};

/* Builds the serving side's filter and loads it on every thread of the calling process
 * (SCMP_FLTATR_CTL_TSYNC; also sets no_new_privs, which the kernel requires without
 * CAP_SYS_ADMIN). Where seccomp(2) itself is filtered (systemd's @system-service) there is no
 * TSYNC: it loads through prctl when the process has one thread, and refuses otherwise. Call it
 * before starting threads. SANDBOX_ON, SANDBOX_UNSUPPORTED, or -1 with MPE_PRIV_START (the filter
 * could not be built or loaded on every thread). */
int sandbox_serving(mp_err *e);

#endif
