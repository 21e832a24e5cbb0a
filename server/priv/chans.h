/* Between start.c, which makes the channels, and client.c, which hands them to requests. */
#ifndef MPD_PRIV_CHANS_H
#define MPD_PRIV_CHANS_H

#include <sys/types.h>

/* The serving side's ends of the socketpairs (owned from now on: priv_stop closes them) and the
 * helper's pid (reaped by priv_stop). */
void priv_chans_adopt(const int *fds, int n, pid_t helper);

#endif
