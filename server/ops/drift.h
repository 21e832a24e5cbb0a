/* Verification without polling, and drift with its cause (docs/DESIGN.md, "The drift watcher").
 *
 * One thread watches the profile in force: a fanotify group made where CAP_SYS_ADMIN is (the
 * helper, act_watch) marks every managed knob's and pool's files; on a write event the key is
 * read again and compared with the profile; keys the kernel changes without a write (the pools,
 * vm.min_free_kbytes) and keys with no mark are read on a slow timer. A change that breaks the
 * profile is a drift: a profile.drift operation (key, expected, actual, comparator, first and last
 * seen, count, cause), then what the key's policy says — restore (written back through the
 * helper), report, or yield (the key leaves the managed set until the next apply). The daemon's own
 * writes (its pid, the helper's, the helper's probe children) are not drift. */
#ifndef MPD_OPS_DRIFT_H
#define MPD_OPS_DRIFT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "server/app.h"

/* The slow timer's default and bounds (drift-check-interval, seconds). */
#define DRIFT_CHECK_DEFAULT_S 60
#define DRIFT_CHECK_MIN_S     1
#define DRIFT_CHECK_MAX_S     86400

struct drift_watcher;

/* Starts the watcher over app (borrowed, complete: app->profile_state and the store are used from
 * the thread). check_s: the slow timer. NULL when it cannot start (logged): the daemon serves
 * without verification. */
struct drift_watcher *drift_start(const struct app *app, unsigned check_s);
/* Stops and frees it; NULL is fine. */
void drift_stop(struct drift_watcher *w);

/* Causes and actions, the labels of mempolicyd_profile_drift_total. */
enum drift_cause { DC_PROCESS, DC_KERNEL, DC_UNKNOWN, DC_END };
enum drift_action { DA_RESTORED, DA_REPORTED, DA_YIELDED, DA_END };
const char *drift_cause_name(enum drift_cause c);
const char *drift_action_name(enum drift_action a);

/* GET /metrics: mempolicyd_profile_key_drift{key} per managed key (from the profile state) and
 * mempolicyd_profile_drift_total{cause,action}. */
void drift_write_metrics(const struct app *app, FILE *f, bool om);

#endif
