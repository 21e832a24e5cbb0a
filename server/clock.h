/* The daemon's one clock: wall-clock and monotonic nanoseconds for every module (the store's *_ns
 * columns, the job runner, the scheduler, the resize measurements, the connection deadlines).
 * Nothing else in server/ calls clock_gettime() but the log's stamps (log.c) and the connection
 * reaper's quarter-second tick (api/conn.c), which are real time on purpose: so tests can drive
 * time through one seam.
 *
 * Wall clock (CLOCK_REALTIME): when things happened and when schedules are due. Monotonic clock
 * (CLOCK_MONOTONIC): durations — the per-page latency of a resize, deadlines, flush intervals.
 *
 * The test clock. Builds with test hooks (MPD_TEST_HOOKS: `make SAN=1` and `make TSAN=1`, the
 * builds the tests drive; never the plain build `make install` installs) take `--test-clock FILE`
 * on the command line (not in a config file). The wall clock then reads the time in FILE, decimal
 * nanoseconds since the epoch (a trailing newline allowed), read at start and again whenever the
 * daemon gets SIGUSR2. In between it stands still but for one nanosecond per reading, so readings
 * stay distinct and ordered: nothing falls due by itself, and a test sees exactly the times it
 * set. The scheduler sleeps until SIGUSR2 instead of until a due time, runs a pass at the new
 * time, and then logs "test clock: scheduler pass at N done" (N: the pass's time in ns), which is
 * what a test waits for (tests/e2e/lib.py: Daemon.set_clock). Moving the clock by a month costs
 * the same as moving it by a second: one read, one pass. The monotonic clock stays the kernel's: it
 * measures the kernel's work, which a test clock must not invent. */
#ifndef MPD_CLOCK_H
#define MPD_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define CLK_NS 1000000000LL

/* Wall-clock ns since the epoch: the kernel's, or the test clock's. */
int64_t clk_wall_ns(void);
/* Monotonic ns (the kernel's, always): only differences mean anything. */
int64_t clk_mono_ns(void);

/* pthread_cond_timedwait() until the wall clock reads deadline_ns, mu held; returns 0 when
 * signalled (or spuriously), ETIMEDOUT at the deadline. The cond must use CLOCK_REALTIME (the
 * default). With the test clock no timer can see the deadline: this waits until signalled, and
 * whoever moves the test clock wakes the waiters (main() on SIGUSR2). */
int clk_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ns);

/* Is the test clock in use? Always false without test hooks. */
bool clk_is_test(void);

#ifdef MPD_TEST_HOOKS
/* Start-up, before any thread: reads path and puts the wall clock on it from now on. Fails with
 * config.test_clock when the file cannot be read or does not hold a time. */
int clk_test_open(const char *path, mp_err *e);
/* Re-reads the file (on SIGUSR2). On failure the clock keeps its time. Any thread. (A restarted
 * daemon tells a previous one's unfinished operations by their instance id, not by their time, so
 * a test need not move the clock on across a restart.) */
int clk_test_reload(mp_err *e);
/* Start-up's end: frees what clk_test_open() kept. */
void clk_test_close(void);
#endif

#endif
