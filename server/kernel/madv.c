#include "server/kernel/madv.h"

#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>


long madv_collapse(int pidfd, uint64_t start, uint64_t len)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)start, .iov_len = (size_t)len };
	long rc;

	rc = syscall(SYS_process_madvise, pidfd, &iov, 1UL, MADV_COLLAPSE, 0U);
	return rc < 0 ? -errno : rc;
}
