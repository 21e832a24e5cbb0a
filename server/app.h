/* The daemon's shared state, built once in main() and passed to every handler and operation.
 * main() sets every field before http_serve() starts the request threads; from then on the struct
 * is read-only, and what it points to protects itself (the store has its lock, the job runner,
 * the scheduler and the children their own). The compiler holds everyone but main() to this:
 * handlers, operations, the job runner and the scheduler get a const struct app *. Nothing may be
 * added that is set after serving starts; the tsan stage's test_startup_race.py is the test of it. */
#ifndef MPD_APP_H
#define MPD_APP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/kernel/caps.h"
#include "server/store/retain.h"

struct store;
struct knob_catalogue;
struct jobs;
struct scheduler;
struct children;
struct profile_state;
struct topo_held;
struct mmc_files;

struct app {
	const char *sysfs_root;          /* borrowed from the config; "/sys" in production */
	const char *procfs_root;         /* borrowed from the config; "/proc" in production */
	bool have_admin_gid;
	gid_t admin_gid;                 /* callers in this group may change things */
	struct store *store;             /* owned by main() */
	struct knob_catalogue *knobs;    /* owned by main(); built at start from the live kernel */
	struct topo_held *node_masks;    /* owned by main(): the node masks a launch reads, held open */
	struct mmc_files *mm_files;      /* owned by main(): the conditions' counter files, held open; NULL:
	                                  * read by path */
	struct jobs *jobs;               /* owned by main() */
	struct scheduler *scheduler;     /* owned by main() */
	struct children *children;       /* owned by main(): launched processes, reaped and watched */
	struct caps caps;                /* detected at start */
	int64_t max_schedules;           /* the schedules collection's cap (max-schedules) */
	struct retention retain;         /* what the maintenance pass keeps (retain-*) */
	unsigned probe_mem_pct;          /* a probe may take this share (%) of free memory */
	int64_t started_ns;              /* when main() started: /metrics' process_start_time_seconds */
	const char *profiles_dir;        /* borrowed from the config: the profiles directory */
	bool profiles_dir_default;       /* not given: a missing directory means no profiles */
	const char *profile;             /* borrowed from the config: the profile configured at start, NULL if
	                                  * none; which one is active now is profile_state's */
	struct profile_state *profile_state; /* owned by main(): the profile in force (ops/profile_state.h) */
};

#endif
