#include "server/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/parse.h"

static int64_t kernel_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * CLK_NS + ts.tv_nsec;
}

int64_t clk_mono_ns(void)
{
	return kernel_ns(CLOCK_MONOTONIC);
}

#ifndef MPD_TEST_HOOKS

int64_t clk_wall_ns(void)
{
	return kernel_ns(CLOCK_REALTIME);
}

bool clk_is_test(void)
{
	return false;
}

#else

/* Set once by clk_test_open() before any thread starts, read-only afterwards. */
static bool test_on;
static char *test_path;            /* owned */
/* The test clock's next reading: set from the file by the thread that handles SIGUSR2, and one
 * nanosecond later after every reading, so that readings stay distinct and in the order they were
 * made (history ids, a job started after another's last batch), as on a real clock. */
static _Atomic int64_t test_now;

int64_t clk_wall_ns(void)
{
	return test_on ? atomic_fetch_add(&test_now, 1) : kernel_ns(CLOCK_REALTIME);
}

bool clk_is_test(void)
{
	return test_on;
}

static int read_time(const char *path, int64_t *out, mp_err *e)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return mp_fail(e, MPE_CONFIG_TEST_CLOCK, errno, "test clock %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof buf - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return mp_fail(e, MPE_CONFIG_TEST_CLOCK, err, "test clock %s: %s", path, strerror(err));
	buf[n] = '\0';
	if (parse_i64(buf, out) < 0 || *out <= 0)
		return mp_fail(e, MPE_CONFIG_TEST_CLOCK, 0, "test clock %s: '%.*s' is not a time in ns since the epoch",
			       path, (int)strcspn(buf, "\n"), buf);
	return 0;
}

int clk_test_open(const char *path, mp_err *e)
{
	int64_t t;

	if (read_time(path, &t, e) < 0)
		return -1;
	if (!(test_path = strdup(path)))
		return mp_nomem(e);
	atomic_store(&test_now, t);
	test_on = true;
	return 0;
}

int clk_test_reload(mp_err *e)
{
	int64_t t;

	if (!test_on)
		return mp_fail(e, MPE_CONFIG_TEST_CLOCK, 0, "no --test-clock was given");
	if (read_time(test_path, &t, e) < 0)
		return -1;
	atomic_store(&test_now, t);
	return 0;
}

void clk_test_close(void)
{
	free(test_path);
	test_path = NULL;
}

#endif

int clk_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = deadline_ns / CLK_NS, .tv_nsec = deadline_ns % CLK_NS };

	if (clk_is_test())
		return pthread_cond_wait(cond, mu);
	return pthread_cond_timedwait(cond, mu, &ts);
}
