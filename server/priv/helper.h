/* The helper's handlers of PRIV_SPAWN and PRIV_REAP (priv_spawn.c), for priv_helper.c's table. */
#ifndef MPD_KERNEL_PRIV_SPAWN_H
#define MPD_KERNEL_PRIV_SPAWN_H

#include <stdint.h>

#include "server/kernel/priv_proto.h"

/* Starts m's program as the client on peer_fd (borrowed). The pid, or -errno with *step (an enum
 * spawn_step) when the child's set-up failed. */
int priv_do_spawn(int peer_fd, const struct priv_spawn *m, uint64_t *step);
/* 0 with *status the wait status, -EAGAIN while it runs, or -errno. */
int priv_do_reap(const struct priv_reap *m, uint64_t *status);

/* Starts a probe child writing to pipe_fd (borrowed). The pid, or -errno with *step. */
int priv_do_probe_start(int pipe_fd, const struct priv_probe_start *m, uint64_t *step);
int priv_do_kill(const struct priv_kill *m);

#endif
