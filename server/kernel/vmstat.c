#include "server/kernel/vmstat.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

int vmstat_read(const char *procfs_root, const char *const *names, int n, uint64_t *vals)
{
	char path[PATH_MAX], line[256];
	FILE *f;

	memset(vals, 0, (size_t)n * sizeof *vals);
	snprintf(path, sizeof path, "%s/vmstat", procfs_root);
	if (!(f = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof line, f)) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		for (int i = 0; i < n; i++)
			if (!strcmp(line, names[i])) {
				if (parse_u64(sp + 1, &vals[i]) < 0)
					vals[i] = 0;
				break;
			}
	}
	fclose(f);
	return 0;
}
