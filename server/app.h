/* The daemon's shared state, built once in main() and passed to every handler and operation.
 * Everything here is set before the listeners start and read-only afterwards, except what the
 * pointed-to modules protect themselves (the store has its lock, the job runner its own). */
#ifndef MPD_APP_H
#define MPD_APP_H

#include <stdbool.h>
#include <sys/types.h>

#include "server/kernel/caps.h"

struct store;
struct knob_catalogue;
struct jobs;
struct scheduler;
struct children;

struct app {
	const char *sysfs_root;          /* borrowed from the config; "/sys" in production */
	const char *procfs_root;         /* borrowed from the config; "/proc" in production */
	bool have_admin_gid;
	gid_t admin_gid;                 /* callers in this group may change things */
	struct store *store;             /* owned by main() */
	struct knob_catalogue *knobs;    /* owned by main(); built at start from the live kernel */
	struct jobs *jobs;               /* owned by main(); NULL until the job runner exists */
	struct scheduler *scheduler;     /* owned by main(); NULL until the scheduler runs */
	struct children *children;       /* owned by main(): launched processes, reaped and watched */
	struct caps caps;                /* detected at start */
};

#endif
