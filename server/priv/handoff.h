/* The hand-off channel: how a client's connection reaches the serving side under privilege
 * separation, and how a privileged act names the client it is for.
 *
 * The helper owns the API's Unix listening socket (it is the only process that accepts on it,
 * server/priv/accept.c). For each connection it reads what the kernel attests about the client —
 * SO_PEERCRED (pid, uid, gid) and SO_PEERGROUPS — records it under the connection's identifier,
 * and passes the connection to the serving side over a SOCK_SEQPACKET socketpair of its own (one
 * datagram, the socket attached with SCM_RIGHTS); the helper keeps no copy of the socket, so the
 * serving side's close is the connection's end as before. The serving side's loop that takes it
 * serves it in its own libmicrohttpd daemon (server/api/incoming.c) and tells the helper when it
 * closes it.
 *
 * The identifier is the socket's cookie (SO_COOKIE): the kernel's own number for the socket
 * object, which no process can set, and which is never given to another socket in the boot. A
 * privileged act that needs an identity (PRIV_SPAWN) names the identifier and passes the
 * connection itself; the helper acts only when the socket passed is the very one it accepted
 * under that identifier and its client has not hung up, and takes the identity from its own
 * record, never from the message. */
#ifndef MPD_PRIV_HANDOFF_H
#define MPD_PRIV_HANDOFF_H

#include <stdint.h>

#define PRIV_HANDOFF_MAGIC 0x6d706468u   /* "mpdh" */

enum priv_handoff_type {
	PRIV_HANDOFF_CONN = 1,   /* helper -> serving side: an accepted connection, attached */
	PRIV_HANDOFF_CLOSED,     /* serving side -> helper: the connection is closed, no fd */
};

/* Each datagram on the channel, either way: exactly this size. */
struct priv_handoff {
	uint32_t magic;
	uint32_t type;           /* enum priv_handoff_type */
	uint64_t id;             /* the connection's identifier (its socket cookie, never 0) */
};

/* The identifier of the connection on fd: its socket cookie; 0 when fd is not a socket. */
uint64_t priv_conn_id(int fd);

/* One datagram of the channel, either side's (flags: recvmsg's; EINTR retried). The descriptors
 * it carried: how many in *nfds, the first in *fd (owned by the caller, -1 when none came; with fd
 * NULL it is closed too), every other closed. 1 when it is exactly a struct priv_handoff (then in
 * *m), -EBADMSG for any other datagram, 0 at the channel's end, or -errno. */
int priv_handoff_read(int chan, int flags, struct priv_handoff *m, int *fd, int *nfds);

/* ---- the serving side's end (handoff.c) ------------------------------------------------------ */

/* The serving side's end of the channel (owned by this module from priv_start on; priv_stop
 * closes it), or -1: no helper, or a helper that was given no listener. */
int priv_handoff_chan(void);
void priv_handoff_adopt(int chan);
void priv_handoff_release(void);

/* The next connection the helper handed over: 0 with *fd (owned by the caller) and *id; -EPIPE
 * when the channel has ended (the helper is gone, or priv_handoff_shutdown); -EPROTO for a
 * datagram that is not a connection (dropped, with any fd it carried); else -errno. */
int priv_handoff_recv(int chan, int *fd, uint64_t *id);
/* The same without waiting: -EAGAIN when no datagram is there (several loops poll the channel,
 * and the first to read takes the connection). */
int priv_handoff_take(int chan, int *fd, uint64_t *id);
/* Tells the helper that the connection id is closed: its identity ends there. Blocks only while
 * the helper's queue is full; nothing to report when the helper is gone. */
void priv_handoff_closed(int chan, uint64_t id);
/* The same for up to PRIV_HANDOFF_BATCH connections at once (ids of 0 skipped): one system call
 * for all, one datagram each. */
#define PRIV_HANDOFF_BATCH 8
void priv_handoff_closed_many(int chan, const uint64_t *ids, unsigned n);
/* Ends the channel both ways: a receiver blocked in priv_handoff_recv returns -EPIPE, and the
 * helper stops accepting and closes its listening socket. */
void priv_handoff_shutdown(int chan);

#endif
