/* The node's labels as a Node Feature Discovery local feature file (docs/reference/fleet.md):
 *
 *   # +expiry-time=2026-12-01T16:30:00Z
 *   mempolicyd.io/thp-enabled=madvise
 *   mempolicyd.io/hugepages-2M-node0=512
 *
 * NFD's local source reads every file of its features.d directory whose name does not start with
 * a dot, at most 64 kB, line by line: `# +expiry-time=<RFC 3339>` applies to the lines after it
 * (a line read after the time has passed is dropped), every other line not starting with '#' is
 * `<name>[=<value>]`, and the names and values become node labels, which the Kubernetes API
 * refuses unless they follow its label syntax. So the text is built here from checked parts only
 * (nfd_add refuses a name or value that is not a label's), and the privileged helper, which
 * writes the file under privilege separation, checks the whole text again (nfd_text_check) before
 * it writes: a profile name or a kernel's value can neither make an invalid label nor add a line.
 * Pure code (no daemon state): the serving side and the helper both use it. */
#ifndef MPD_FLEET_NFD_H
#define MPD_FLEET_NFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every label's prefix: the daemon writes no name outside its own namespace. */
#define NFD_PREFIX "mempolicyd.io/"
/* The text's bound: half NFD's 64 kB file limit, which a file past it loses whole. */
#define NFD_TEXT_MAX (32 * 1024)
/* A Kubernetes label's name (after the prefix) and value: at most 63 bytes each. */
#define NFD_PART_MAX 63

/* A label name's part after the prefix: 1..63 of [A-Za-z0-9._-], beginning and ending with
 * [A-Za-z0-9]. A value: the same, or empty. */
bool nfd_name_ok(const char *name);
bool nfd_value_ok(const char *value);

struct nfd_text {
	char text[NFD_TEXT_MAX];
	size_t len;
	unsigned refused;      /* labels left out: a name or value that is no label's */
	unsigned dropped;      /* labels left out: the text was full */
};

/* Starts t with the expiry directive for expiry_s (seconds since the epoch, UTC). */
void nfd_begin(struct nfd_text *t, int64_t expiry_s);
/* Appends NFD_PREFIX name=value. 0; -EINVAL (counted in refused) when name or value is not a
 * label's; -ENOSPC (counted in dropped) when the line does not fit. Nothing is appended then. */
int nfd_add(struct nfd_text *t, const char *name, const char *value);
/* The expiry of a text nfd_begin started (its first line), or -1. */
int64_t nfd_expiry(const char *text, size_t len);
/* The labels of two texts are the same (every line after the first alike). */
bool nfd_same_labels(const struct nfd_text *a, const char *b, size_t blen);

/* The whole text as the helper checks it before writing: at most NFD_TEXT_MAX bytes, no NUL, the
 * first line the expiry directive with a time in nfd_begin's form, every other line
 * NFD_PREFIX name=value with a valid name and value, the last one ending in a newline. 0 or
 * -EINVAL. */
int nfd_text_check(const char *text, size_t len);

/* The file path (a name that does not start with a dot, in an existing directory) holding exactly
 * text: written as the dot file "." + its name in the same directory, flushed to disk, then
 * renamed over path, so a reader sees the old file or the new one whole, never a part. 0 or
 * -errno. */
int nfd_write_file(const char *path, const char *text, size_t len);
/* The path's last component is a name NFD reads (non-empty, not starting with a dot) and the
 * path is not longer than PATH_MAX - 2 (room for the dot). */
bool nfd_path_ok(const char *path);

#endif
