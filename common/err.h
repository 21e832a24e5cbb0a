/* The one error type shared by every layer.
 *
 * Functions that can fail return 0 on success and -1 on failure, after filling the caller's
 * mp_err with a code from the registry (common/errcodes.h). The kernel layer is the exception: it
 * returns plain -errno, and the ops layer turns that into an mp_err with the errno kept, so the
 * API can report it and history can record it. No layer below server/api/ knows HTTP. */
#ifndef MPD_ERR_H
#define MPD_ERR_H

#include <stdarg.h>

#include "common/errcodes.h"

typedef struct mp_err {
	enum mp_code code;  /* MPE_NONE while no error */
	int sys_errno;      /* errno from the kernel or libc, 0 when none */
	int http_status;    /* 0: the code's kind decides; set only by server/api/ where the
	                     * resource makes a kind mean another status (a 404 in a body is a 422) */
	char detail[512];   /* human sentence, no trailing newline */
} mp_err;

/* Fill *e and return -1, so callers can write `return mp_fail(e, ...)`. e may be NULL. */
int mp_fail(mp_err *e, enum mp_code code, int sys_errno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The common out-of-memory failure. */
int mp_nomem(mp_err *e);
void mp_err_clear(mp_err *e);

/* From the registry: MPE_KNOB_UNKNOWN, its kind, its one-line meaning. Out-of-range codes give
 * MPE_INTERNAL_ERROR / MPK_INTERNAL. */
const char *mp_code_name(enum mp_code code);
enum mp_kind mp_code_kind(enum mp_code code);
const char *mp_code_meaning(enum mp_code code);
const char *mp_kind_name(enum mp_kind kind);
/* The code whose name is s, MPE_NONE when none (for tests and the registry listing). */
enum mp_code mp_code_by_name(const char *s);

#endif
