/* A test build's hold point: a thread that reaches it waits until a test has opened the FIFO an
 * environment variable names for writing and closed it again, so a test can keep work "running"
 * for as long as it needs to show what else goes on meanwhile, with no timing involved. Only in
 * test builds (MPD_TEST_HOOKS: make SAN=1 / TSAN=1); a production build never reads the variable.
 * Used by api/slow.c (MEMPOLICYD_TEST_HOLD_SLOW), store/ckpt.c (MEMPOLICYD_TEST_HOLD_CKPT) and
 * ops/drift.c (MEMPOLICYD_TEST_HOLD_DRIFT: only while the FIFO exists) and ops/profile_apply.c
 * (MEMPOLICYD_TEST_HOLD_UNRECORDED). */
#ifndef MPD_COMMON_TESTHOLD_H
#define MPD_COMMON_TESTHOLD_H

void test_hold_fifo(const char *env_name);

#endif
