/* systemd glue (see sd.h): the only file that includes libsystemd. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "server/log.h"
#include "server/sd.h"

int sd_inherited_unix(const char *path, mp_err *e)
{
	int n = sd_listen_fds(1), found = -1;

	if (n < 0)
		return mp_fail(e, MPE_CONFIG_SOCKET, -n, "cannot read the sockets systemd passed: %s", strerror(-n));
	for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
		/* Whatever we do not use is still ours to close: a launched process must not inherit it. */
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		if (found < 0 && sd_is_socket_unix(fd, SOCK_STREAM, 1, path, 0) > 0)
			found = fd;
	}
	if (n > 0 && found < 0)
		return mp_fail(e, MPE_CONFIG_SOCKET, 0, "systemd passed %d socket(s), none a listening Unix stream "
			       "socket at %s (does the socket unit's ListenStream= match --socket?)", n, path);
	if (found >= 0)
		log_info("using the socket systemd passed for %s (fd %d)", path, found);
	return found;
}

void sd_say(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* unset_environment 0: STATUS= and WATCHDOG=1 are sent all along the daemon's life. */
	if ((rc = sd_notify(0, msg)) < 0)
		log_warn("sd_notify(%s): %s", msg, strerror(-rc));
}

uint64_t sd_watchdog_usec(void)
{
	uint64_t usec = 0;

	return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}
