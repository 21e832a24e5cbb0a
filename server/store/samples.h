/* Reading the process.sample operations of one process (they are written by store/procs.h). A
 * process is (pid, start time): each sample's request holds {"pid", "start_time"}, so the samples
 * of an earlier process with the same pid are never mixed in. Each function takes the store lock. */
#ifndef MPD_STORE_SAMPLES_H
#define MPD_STORE_SAMPLES_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/store/history.h"

struct store;

/* The newest limit (1..10000) process.sample operations of (pid, start_time), oldest first:
 * [{"operation_id", "time_ns", "result"}]. Owned by the caller; NULL with e on failure. */
json_t *samples_list(struct store *st, long pid, uint64_t start_time, int limit, mp_err *e);

/* The start time of the newest process.sample of pid (for a process that has exited): 0 and
 * *start_time, or 0 with *start_time 0 when there is none; -1 with e on failure. */
int samples_last_start_time(struct store *st, long pid, uint64_t *start_time, mp_err *e);

#endif
