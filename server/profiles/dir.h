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
	/* In a ConfigMap volume (a "..data" entry): the timestamped directory "..2026_12_01_..." the
	 * set is read from, pinned so that every file of one read comes from one swap (borrowed; see
	 * prof_dir_snapshot). NULL: through "..data" as it is at each open. A plain directory: unused. */
	const char *snap;
};

/* The longest timestamped directory name a snapshot may have (the kubelet's are ~33 bytes). */
#define PROF_SNAP_MAX 128

/* Whether path is a Kubernetes ConfigMap volume, and which swap it shows now: 1 with snap (the
 * name "..data" points to, one component inside the directory), 0 for a plain directory (no
 * "..data"), -EXDEV when "..data" is not a symlink to one dot-dot-named entry of the directory
 * (it would lead out of it, or is not the kubelet's), another -errno when it cannot be read.
 * In a ConfigMap volume the profiles are the files of that directory: the user-visible links
 * (NAME.conf -> ..data/NAME.conf) are never read, so a link made before its target (kubernetes
 * #93686) or after the swap is of no matter. */
int prof_dir_snapshot(const char *path, char *snap, size_t n);

/* The prof_load_fn over a struct prof_dir: reads DIR/NAME.conf (DIR/SNAP/NAME.conf, or
 * DIR/..data/NAME.conf, in a ConfigMap volume) whole (regular files only, at most
 * PROF_FILE_MAX bytes). */
int prof_dir_load(void *dir, const char *name, const struct prof_loc *from, char **text, size_t *len,
		  struct prof_err *err);

/* The profile names in the directory (NAME.conf entries whose NAME is prof_name_ok; dot entries,
 * other files and at most 1000 names), sorted, into *names (owned: free each and the array); in
 * a ConfigMap volume those of its snapshot (dir->snap, or "..data" now). 0, -ENOENT when the
 * directory does not exist, another -errno when it cannot be read. */
int prof_dir_list_in(const struct prof_dir *dir, char ***names, size_t *n);
/* prof_dir_list_in of the directory path as it is now. */
int prof_dir_list(const char *path, char ***names, size_t *n);
void prof_dir_names_free(char **names, size_t n);

#endif
