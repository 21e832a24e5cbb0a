/* The profiles directory: NAME.conf files, read only from inside it. A name is prof_name_ok's, so
 * it cannot say "../"; a file is opened with openat2(RESOLVE_BENEATH), so a symlink may lead
 * anywhere inside the directory (a Kubernetes ConfigMap volume: NAME.conf -> ..data/NAME.conf,
 * ..data -> ..2026_12_01_10_00_00.123/) and nowhere outside it (nor by an absolute target). */
#ifndef MPD_PROFILES_DIR_H
#define MPD_PROFILES_DIR_H

#include <stddef.h>

#include "server/profiles/profile.h"

struct prof_dir {
	const char *path;            /* borrowed */
};

/* The prof_load_fn over a struct prof_dir: reads DIR/NAME.conf whole (regular files only, at most
 * PROF_FILE_MAX bytes). */
int prof_dir_load(void *dir, const char *name, const struct prof_loc *from, char **text, size_t *len,
		  struct prof_err *err);

/* The profile names in the directory (NAME.conf entries whose NAME is prof_name_ok; dot entries,
 * other files and at most 1000 names), sorted, into *names (owned: free each and the array).
 * 0, -ENOENT when the directory does not exist, another -errno when it cannot be read. */
int prof_dir_list(const char *path, char ***names, size_t *n);
void prof_dir_names_free(char **names, size_t n);

#endif
