#ifndef MPD_API_PEER_H
#define MPD_API_PEER_H

#include <stdbool.h>
#include <sys/types.h>

#include "server/api/api.h"

/* Fills c for the connection on fd, accepted on the Unix listener when on_unix (the caller has
 * asked getsockname already). A TCP peer, or a socket whose credentials cannot be read, stays
 * unknown (c zeroed): it may read, never change. Looks the user up in the passwd database, and in
 * the group database when the admin group decides (not for root), once per connection, not per
 * request. */
void peer_identify(int fd, bool on_unix, bool have_admin_gid, gid_t admin_gid, struct caller *c);

#endif
