/* The helper's side of the boundary: its loop (helper.c) and the table of request types it
 * dispatches by, with the handlers of the launches (helper_spawn.c). Only the helper runs this. */
#ifndef MPD_PRIV_HELPER_H
#define MPD_PRIV_HELPER_H

#include <stddef.h>
#include <stdint.h>

#include "server/kernel/knobs.h"
#include "server/kernel/sysfs.h"
#include "server/priv/proto.h"

/* One channel's state in the helper (one thread per channel). */
struct helper {
	int fd;                                   /* borrowed: the helper's end */
	const struct knob_catalogue *knobs;       /* borrowed */
	const char *sysfs_root, *procfs_root;     /* borrowed */
	/* The pool file of the last run, kept open: a resize is runs of steps on one file, and the
	 * measurement should cover the kernel's work, not a path lookup per step. */
	struct kfs_file nr;
	uint64_t nr_size_kb;
	int nr_node;
	int in_fd;                                /* borrowed: the fd that came with this request, or -1 */
	unsigned probe_mem_pct;                   /* the share of free memory a probe may take */
};

/* One request type of the closed set. The loop has checked the header, the exact size and the
 * number of descriptors before check runs; check looks at every field (and the descriptor) and
 * acts on nothing; act runs only after check said 0, and fills the reply's value, steps or the fd
 * to pass back (*fd_out, owned by the loop). Both return 0 or -errno (act: a count or pid). */
struct priv_request {
	const char *name;       /* as docs/DESIGN.md's table of the op set names it */
	size_t size;            /* the message's exact size, header included */
	unsigned fds;           /* descriptors the request carries (SCM_RIGHTS): 0 or 1 */
	int (*check)(const struct helper *h, const void *msg);
	int (*act)(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out);
};

/* The closed set, indexed by enum priv_type; entry 0 is unused. */
extern const struct priv_request priv_requests[PRIV_TYPE_END];

/* The NFD labels file the helper writes (PRIV_LABELS_WRITE): set before the fork by
 * priv_set_labels_file (borrowed from the config); NULL: none, and every such request is refused. */
extern const char *priv_labels_path;

/* The launches (helper_spawn.c). */
int priv_check_spawn(const struct helper *h, const void *msg);
int priv_do_spawn(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out);
int priv_check_child(const struct helper *h, const void *msg);   /* reap and kill */
int priv_do_reap(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out);
int priv_check_probe_start(const struct helper *h, const void *msg);
int priv_do_probe_start(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out);
int priv_do_kill(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out);

/* SIGKILL to every probe child started and not collected: the helper's last act, on EOF and on
 * its parent's death. Async-signal-safe. */
void priv_kill_probes(void);

/* The helper's main: one thread per channel, each until EOF on it; returns when the first channel
 * ends. The fds are the helper's ends (owned: each thread closes its own). */
void priv_helper_run(const int *fds, int n, const struct knob_catalogue *knobs, const char *sysfs_root,
		     const char *procfs_root, unsigned probe_mem_pct);

#endif
