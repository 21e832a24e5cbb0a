/* systemd integration (libsystemd): the listening socket systemd may pass (socket activation),
 * and the notifications of Type=notify (READY=1, STATUS=, WATCHDOG=1, STOPPING=1). Without
 * systemd (no LISTEN_FDS, no NOTIFY_SOCKET) every function here is a no-op and the daemon binds
 * its own socket. */
#ifndef MPD_SD_H
#define MPD_SD_H

#include <stdint.h>

#include "common/err.h"

/* The Unix stream socket systemd passed for path (LISTEN_FDS/LISTEN_PID, fd 3 on), made
 * close-on-exec; -1 with e clear when none was passed, -1 with e set when sockets were passed
 * but none is a listening Unix stream socket bound to path (a unit that disagrees with
 * --socket is a refusal, not a silent second socket). The environment variables are removed so
 * that no child inherits them. */
int sd_inherited_unix(const char *path, mp_err *e);

/* "READY=1", "STATUS=...", "STOPPING=1": sent when NOTIFY_SOCKET is set, ignored otherwise. */
void sd_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The watchdog interval systemd asked for (WatchdogSec=) in microseconds, 0 when none. */
uint64_t sd_watchdog_usec(void);

#endif
