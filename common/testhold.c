#include "common/testhold.h"

#ifdef MPD_TEST_HOOKS
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

void test_hold_fifo(const char *env_name)
{
	const char *fifo = getenv(env_name);
	char c;

	if (fifo && *fifo) {
		int fd = open(fifo, O_RDONLY | O_CLOEXEC);   /* blocks until the test opens it */
		if (fd >= 0) {
			while (read(fd, &c, 1) > 0)
				;                             /* until the test closes it */
			close(fd);
		}
	}
}
#else
void test_hold_fifo(const char *env_name)
{
	(void)env_name;
}
#endif
