#ifndef MPD_TESTS_UNIT_TREE_H
#define MPD_TESTS_UNIT_TREE_H
/* A generated sysfs/procfs tree for unit tests: the includer defines `static char root[]` (the
 * mkdtemp'd top, whose subdirectories put() creates as needed) before including this. */

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Writes text and a newline to base/rel, making rel's directories below root. */
static void put(const char *base, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", base, rel);
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* The first line of base/rel, without its newline, into buf (unused by a test that only writes). */
static __attribute__((unused)) void get(const char *base, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", base, rel);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	ck_assert_ptr_nonnull(fgets(buf, (int)len, f));
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

#endif
