/* Connections the privileged helper accepted (server/priv/handoff.h), fed to libmicrohttpd: under
 * privilege separation the serving side never accepts on the Unix socket itself. */
#ifndef MPD_API_INCOMING_H
#define MPD_API_INCOMING_H

#include <stdint.h>

#include "common/err.h"

struct MHD_Daemon;
struct incoming;

/* standby (borrowed, -1 for none): this process's copy of the Unix listener, accepted on only
 * once the channel has ended (the helper is lost), so that the degraded window answers new
 * clients (503 priv.lost, health degraded) until the daemon exits.
 * The receiver of chan (borrowed: the hand-off channel), which will keep at most max connections
 * open at once: at max it takes no more, so that the helper stops accepting and clients wait in
 * the backlog, as they do for a libmicrohttpd at its connection limit. Made before the daemon it
 * feeds starts, so that its workers, which report closes to it, see it whole. NULL when out of
 * memory (e set). */
struct incoming *incoming_new(int chan, int standby, unsigned max, mp_err *e);
/* Starts the thread that takes each connection and adds it to d (borrowed, started without a
 * listening socket). 0, or -1 with e set. */
int incoming_start(struct incoming *in, struct MHD_Daemon *d, mp_err *e);
/* The connection id that incoming added has closed (libmicrohttpd's NOTIFY_CLOSED): its slot is
 * free and the helper is told. Safe with NULL, and after incoming_stop. */
void incoming_closed(struct incoming *in, uint64_t id);
/* Ends the channel (the helper stops accepting) and joins the thread: nothing is added to the
 * daemon afterwards. Safe with NULL. */
void incoming_stop(struct incoming *in);
/* After the daemon has stopped (no more incoming_closed). Safe with NULL. */
void incoming_free(struct incoming *in);

#endif
