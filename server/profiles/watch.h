/* The profiles directory's watch: inotify on the directory itself (never on a file: the kubelet's
 * swap replaces what a file watch would hold, kubernetes #112677), no polling. It decides one
 * thing: "the set changed, read it now" — and where from.
 *
 * A Kubernetes ConfigMap volume (a "..data" entry) changes only when "..data" is renamed over
 * (the kubelet's atomic_writer: a new "..TIMESTAMP" directory, its files, a "..data_tmp" symlink
 * renamed over "..data", user-visible links, the old directory removed): that one rename is the
 * one change of a swap, and the set is read from the directory it names, pinned. Nothing before
 * it (a half-made swap, links made before their targets, kubernetes #93686) and nothing after it
 * (links, removals) is a change. A plain directory changes when a NAME.conf is written (closed
 * after writing), renamed in or out, removed, or made as a symlink. */
#ifndef MPD_PROFILES_WATCH_H
#define MPD_PROFILES_WATCH_H

#include <stdbool.h>

#include "server/profiles/dir.h"

struct prof_watch;

/* Watches path (borrowed, must outlive the watch). NULL with -errno in *err when the directory
 * cannot be watched (it does not exist, inotify is exhausted). */
struct prof_watch *prof_watch_open(const char *path, int *err);
void prof_watch_close(struct prof_watch *w);
/* The inotify descriptor, readable when events wait (for poll()). */
int prof_watch_fd(const struct prof_watch *w);

/* What the events that wait say (it reads all of them, never blocks). */
struct prof_change {
	bool changed;                /* the set changed: read it */
	bool configmap;              /* a ConfigMap volume: read it from snap */
	char snap[PROF_SNAP_MAX];    /* the swap "..data" names now */
	bool lost;                   /* the directory itself was removed or moved: the watch ended */
	unsigned events;             /* how many events were read (for the log and the tests) */
};

/* 0 with *c filled (changed false when nothing that waits is a change), -errno on a read error. */
int prof_watch_read(struct prof_watch *w, struct prof_change *c);

/* Whether the directory still shows the swap snap (a newer swap's rename may be waiting: then the
 * set read from snap is already old, and that rename's event reads the new one). */
bool prof_watch_still(const struct prof_watch *w, const char *snap);

#endif
