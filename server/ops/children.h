/* The daemon's launched children: each is reaped when it exits (it would stay a zombie otherwise)
 * and, when its launch asked for a watch, its placement is sampled every interval until then, each
 * sample a process.sample operation in history. One thread per child, sleeping in poll(2) on the
 * child's pidfd and on a shared stop eventfd: a child's exit, the next sample and the daemon's
 * shutdown each wake exactly the threads they concern. At shutdown the children keep running
 * (they are in their own sessions); init reaps them once the daemon is gone. */
#ifndef MPD_OPS_CHILDREN_H
#define MPD_OPS_CHILDREN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct app;
struct children;

#define CHILDREN_MAX 1024

struct child_info {
	pid_t pid;
	uint64_t start_time;         /* /proc/PID/stat field 22, clock ticks since boot */
	int64_t launch_op_id;        /* the process.launch operation */
	unsigned interval_ms;        /* 0: reaped only */
	bool has_uid;
	uid_t actor_uid;             /* who launched it: the actor of its samples */
	char actor_name[64];
};

struct children *children_open(const struct app *app, mp_err *e);
/* Wakes every watcher, waits for them to finish; the children themselves keep running. */
void children_close(struct children *c);
/* Takes a slot before a launch, so that a full table refuses (503 MPE_PROCESS_TOO_MANY) before
 * anything is started; children_release gives it back when the launch failed. */
int children_reserve(struct children *c, mp_err *e);
void children_release(struct children *c);
/* Hands a started child with its reserved slot over. When no thread can be started the child is
 * left to init to reap after the daemon exits (logged). */
void children_adopt(struct children *c, const struct child_info *ci);
/* How many children are tracked now (for health and tests). */
int children_count(struct children *c);

#endif
