/* Who a privileged act is for (identity.c, in the helper): the client of a connection the serving
 * side accepted on the API's Unix socket, established from what the kernel says of the descriptor
 * the request carries, never from the message.
 *
 * The serving side owns the listening socket and accepts with libmicrohttpd as a single process
 * does; the helper is on no request's path. At start it keeps its own copy of the listener (never
 * accepting on it) and asks the kernel (NETLINK_SOCK_DIAG, unix_diag with UDIAG_SHOW_VFS) which
 * file the socket is bound to: the inode and device of the socket file. The kernel gives every
 * socket accepted on a listener the listener's path (unix_stream_connect copies it), so an act
 * that needs an identity carries the connection (SCM_RIGHTS) and the helper takes it as the
 * client's only when it is a connected AF_UNIX stream socket, not a listener, whose bound file is
 * the API socket's, and whose client has not hung up. The identity is then the socket's
 * SO_PEERCRED and SO_PEERGROUPS, read by the helper at that moment: what the kernel fixed at the
 * client's connect. (The helper's copy of the listener pins the file's inode, so no other socket
 * file gets its number while the helper lives.)
 *
 * Only libc and the kernel's headers: the bench times priv_identity on its own (bench/b_handoff.py). */
#ifndef MPD_PRIV_IDENTITY_H
#define MPD_PRIV_IDENTITY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/priv/proto.h"

/* A connection's client, as the kernel says now. */
struct priv_ident {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t groups[PRIV_SPAWN_GROUPS];
};

/* The file a Unix socket is bound to (or, for an accepted one, its listener's), as unix_diag
 * reports it: the kernel's own device number, not stat's encoding. */
struct priv_unix_vfs {
	uint32_t ino, dev;
};

/* The bound file of the Unix socket fd (borrowed), asked of the kernel by inode and cookie: 0
 * with *vfs; -ENODATA when it has none (unbound, a socketpair, a client's end); -ENOENT when the
 * kernel knows no Unix socket by that inode and cookie in this network namespace; -errno from
 * the netlink socket (-EPROTONOSUPPORT, -ENOENT: no unix_diag in the kernel). */
int priv_unix_vfs_of(int fd, struct priv_unix_vfs *vfs);

/* In the helper, once at start: the API's listening socket (owned from here; kept open, never
 * accepted on) and the serving side's user, whose own connections carry no identity. The
 * listener's file is asked of the kernel now; 0, or -errno when it cannot be (then it is asked
 * again at each identity check, and until it is known every check refuses). */
int priv_identity_init(int listen_fd, uid_t serving_uid);

/* In the helper: the client of the connection fd (borrowed, -1 for none). 0 with *who; else what
 * refused it:
 *   -EBADF         no descriptor
 *   -ENOTSOCK      not a socket
 *   -EAFNOSUPPORT  not AF_UNIX (TCP)
 *   -EPROTOTYPE    not SOCK_STREAM (the helper's SOCK_SEQPACKET channels)
 *   -EOPNOTSUPP    a listening socket (its "peer" is whoever called listen)
 *   -EPERM         not accepted on the API socket: bound to no file or to another one
 *   -EACCES        the client is the serving side's own user
 *   -ENOTCONN      the client has hung up (closed, or shut its sending side)
 * or -errno of the kernel's answer. */
int priv_identity(int fd, struct priv_ident *who);

#endif
