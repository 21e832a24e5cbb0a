#include "server/priv/caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/kernel/sysfs.h"

int priv_cap_last(void)
{
	uint64_t v;

	return kfs_read_u64("/proc", "sys/kernel/cap_last_cap", &v) == 0 && v < 64 ? (int)v : 40;
}

uint64_t priv_helper_capset(void)
{
	/* SETUID/SETGID: a launched program becomes the client (PRIV_SPAWN). */
	return 1ULL << CAP_DAC_OVERRIDE | 1ULL << CAP_SYS_ADMIN | 1ULL << CAP_SYS_NICE | 1ULL << CAP_SYS_PTRACE |
	       1ULL << CAP_SETUID | 1ULL << CAP_SETGID;
}

int priv_helper_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	uint64_t keep = priv_helper_capset();
	int last = priv_cap_last();

	for (int c = 0; c <= last; c++)
		if (!(keep & 1ULL << c) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	memset(data, 0, sizeof data);
	data[0].effective = data[0].permitted = (uint32_t)keep;
	data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}
