/* The helper's acceptor (accept.c): it owns the API's Unix listening socket, accepts, records
 * each client's credentials under the connection's identifier (server/priv/handoff.h) and hands
 * the connection to the serving side; the request handlers ask it who a connection's client is. */
#ifndef MPD_PRIV_ACCEPT_H
#define MPD_PRIV_ACCEPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/priv/proto.h"

/* What priv_start gives the helper. */
struct priv_accept {
	int listen_fd;           /* borrowed: the API's Unix listening socket (the helper's copy
	                          * stays in the helper; the caller closes its own) */
	unsigned max_conns;      /* the record's bound: more connections than this the serving side
	                          * has not reported closed, and the oldest record is dropped */
	uid_t serving_uid;       /* the serving side's own user: a connection it makes to the API
	                          * socket itself carries no identity */
};

/* What the helper recorded of a connection's client at accept. */
struct priv_ident {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t groups[PRIV_SPAWN_GROUPS];
};

/* In the helper: starts the acceptor thread on listen_fd and chan (both owned from here on; the
 * thread ends, closing them, when the serving side ends the channel). 0 or -errno. */
int priv_accept_start(int listen_fd, int chan, const struct priv_accept *cfg);

/* In the helper: the client of the connection fd (borrowed), which the request names by id. 0
 * with *who filled only when fd is the very socket the helper accepted under id (its cookie,
 * its inode and its peer's credentials all agree with the record), the serving side has not
 * reported it closed (as far as the acceptor has read its reports: accept.c, REPORTS_LAZY), and
 * its client has not hung up (then the record ends here too). The group list is the socket's
 * SO_PEERGROUPS, read now. -EBADF or
 * -ENOTSOCK for what is no socket; -EPERM when fd is not the connection id names, or the client is
 * the serving side's own user; -ENOTCONN when no open connection of a client has that id. */
int priv_accept_identity(uint64_t id, int fd, struct priv_ident *who);

#endif
