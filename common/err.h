/* The one error type shared by every layer.
 *
 * Functions that can fail return 0 on success and -1 on failure, after filling the caller's
 * mp_err. The kernel layer is the exception: it returns plain -errno, and the ops layer turns
 * that into an mp_err with the errno kept, so the API can report it and history can record it. */
#ifndef MPD_ERR_H
#define MPD_ERR_H

#include <stdarg.h>

typedef struct mp_err {
	int status;         /* HTTP status the API answers with (400, 404, 409, 500...) */
	const char *code;   /* stable machine code, e.g. "knob.unknown"; static string */
	int sys_errno;      /* errno from the kernel or libc, 0 when none */
	char detail[512];   /* human sentence, no trailing newline */
} mp_err;

/* Fill *e and return -1, so callers can write `return mp_fail(e, ...)`. */
int mp_fail(mp_err *e, int status, const char *code, int sys_errno, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void mp_err_clear(mp_err *e);

/* The title RFC 9457 wants for a status ("Bad Request", ...). */
const char *mp_status_title(int status);

#endif
