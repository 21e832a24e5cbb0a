/* Connections the privileged helper accepted (server/priv/handoff.h), served by libmicrohttpd:
 * under privilege separation the serving side never accepts on the Unix socket itself.
 *
 * The thread that takes a connection from the hand-off channel is the thread that serves it: n
 * loops, each running its own libmicrohttpd daemon in external-polling mode (epoll), all polling
 * the channel. Whichever loop runs first takes the next connection (the others find the channel
 * empty), adds it to its daemon and serves it in the same pass, as libmicrohttpd's own workers
 * all poll a listening socket and the first to run accepts. No thread wakes another to get a
 * connection served (bench/README.md, row 14, says what the hops cost). */
#ifndef MPD_API_INCOMING_H
#define MPD_API_INCOMING_H

#include <stdint.h>

#include "common/err.h"

struct MHD_Connection;
struct MHD_Daemon;
struct incoming;

/* The receiver of chan (borrowed: the hand-off channel), which keeps at most max connections
 * open at once: at max no loop takes one, so that the helper stops accepting and clients wait in
 * the backlog, as they do for a libmicrohttpd at its connection limit. standby (borrowed, -1 for
 * none): this process's copy of the Unix listener, accepted on only once the channel has ended
 * (the helper is lost), so that the degraded window answers new clients (503 priv.lost, health
 * degraded) until the daemon exits. NULL when out of memory (e set). */
struct incoming *incoming_new(int chan, int standby, unsigned max, mp_err *e);
/* Makes n daemons with make(cls) (each started with MHD_USE_EPOLL, without an internal thread
 * and without a listening socket; owned by the receiver from here) and starts a loop on each.
 * 0, or -1 with e set (then incoming_stop and incoming_free still apply). */
int incoming_start(struct incoming *in, unsigned n, struct MHD_Daemon *(*make)(void *cls), void *cls, mp_err *e);
/* libmicrohttpd's NOTIFY_STARTED and NOTIFY_CLOSED for a connection of the receiver's daemons
 * (called on the loop that serves it). Closed: its slot is free and the helper is told that the
 * connection id has ended. Safe with NULL. */
void incoming_opened(struct incoming *in);
void incoming_closed(struct incoming *in, uint64_t id);
/* MHD_resume_connection, and a wake of the loop that serves conn when it is one of the
 * receiver's (external polling has no wake of its own): every resume of the process goes
 * through here. */
void incoming_resume(struct MHD_Connection *conn);
/* Connections open on the receiver's daemons. */
unsigned incoming_connections(struct incoming *in);
/* Takes no more connections: ends the channel (the helper stops accepting) and leaves the
 * standby listener alone; the loops go on serving what they hold. Safe with NULL. */
void incoming_quiesce(struct incoming *in);
/* Stops and joins the loops, then stops their daemons (which closes what they still hold).
 * Safe with NULL and after a failed incoming_start. */
void incoming_stop(struct incoming *in);
void incoming_free(struct incoming *in);

#endif
