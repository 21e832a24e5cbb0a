/* Profiles: desired-state files (docs/reference/profiles.md). This room holds the pure part: the
 * parser of one file's text and the merger of an include chain, which reads files only through
 * a loader the caller gives (profiles/dir.c confines it to the profiles directory). It includes
 * common/ and nothing else of the daemon; what a key means on this host (the knob catalogue, the
 * pools, the cgroups) is decided one layer up, in ops/profiles.c.
 *
 * The merged document is what apply, verify and drift (planned) consume: every key with its
 * comparator, values, resolved on-drift policy, required flag and the file:line:column it came
 * from. */
#ifndef MPD_PROFILES_PROFILE_H
#define MPD_PROFILES_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Limits a hostile file meets (each refused with MPE_PROFILE_LIMIT, never a crash). */
#define PROF_FILE_MAX    (64 * 1024)  /* bytes in one file */
#define PROF_LINE_MAX    1023         /* bytes in one line, its newline aside */
#define PROF_KEYS_MAX    256          /* keys in one file, and in a merged document */
#define PROF_DEPTH_MAX   8            /* files in one include chain */
#define PROF_NAME_MAX    64           /* a profile's name: [A-Za-z0-9_-], then [A-Za-z0-9._-] */
#define PROF_ALTS_MAX    8            /* alternatives a|b|... of one key */
#define PROF_VALUE_MAX   64           /* bytes of one value, NUL included */
#define PROF_KEY_MAX     80           /* bytes of a key name, NUL included */
#define PROF_CGPATH_MAX  256          /* bytes of a [cgroup PATH], NUL included */
#define PROF_FILE_NAME_MAX (PROF_NAME_MAX + 8)

enum prof_cmp { PROF_EQ, PROF_GE, PROF_LE };
enum prof_drift { PROF_DRIFT_UNSET, PROF_DRIFT_REPORT, PROF_DRIFT_RESTORE, PROF_DRIFT_YIELD };
enum prof_kind { PROF_KNOB, PROF_POOL, PROF_CGROUP };

/* Where a line came from. file is the name in the profiles directory ("db.conf"). */
struct prof_loc {
	char file[PROF_FILE_NAME_MAX];
	unsigned line, col;          /* 1-based; col counts bytes */
};

struct prof_key {
	enum prof_kind kind;
	char id[PROF_KEY_MAX + PROF_CGPATH_MAX + 24]; /* unique in a document: "thp.enabled",
	                                                * "hugepages.2M.node0", "cgroup[a.slice].mems" */
	char key[PROF_KEY_MAX];      /* as written in its section: knob name, "total", "node1", "mems" */
	uint64_t size_kb;            /* PROF_POOL */
	int node;                    /* PROF_POOL: -1 for total */
	char cgpath[PROF_CGPATH_MAX];/* PROF_CGROUP: as written in the section header */
	enum prof_cmp cmp;
	int nvals;                   /* 1..PROF_ALTS_MAX; alternatives only for knobs with '=' */
	char vals[PROF_ALTS_MAX][PROF_VALUE_MAX];
	enum prof_drift on_drift;    /* after merging: never UNSET (the profile's default applies) */
	bool drift_set;              /* the key's own '; on-drift = ...' */
	bool required;
	bool removal;                /* a "-key" line (only inside one file, before merging) */
	struct prof_loc loc;         /* of the key's first byte */
};

/* One file, parsed. */
struct prof_file {
	char name[PROF_NAME_MAX];
	bool has_include;
	char include[PROF_NAME_MAX];
	struct prof_loc include_loc; /* of the include's value */
	enum prof_drift on_drift;    /* PROF_DRIFT_UNSET when the file does not say */
	size_t n;
	struct prof_key *keys;       /* owned, n of them (NULL when none) */
};

/* A merged document: the chain's files (the named profile first, then what it includes) and the
 * keys in the order they first appear (the deepest include's first). */
struct prof_doc {
	char name[PROF_NAME_MAX];
	enum prof_drift on_drift;    /* the nearest file that says, else report */
	int nfiles;
	char files[PROF_DEPTH_MAX][PROF_FILE_NAME_MAX];
	size_t n;
	struct prof_key *keys;       /* owned, n of them (NULL when none) */
};

/* Room in *keys (malloc'd, *cap of them) for one more after n: grown by doubling, up to
 * PROF_KEYS_MAX (a key is ~1.3 KiB: the limit's 256 up front were 338 KiB zeroed a file and
 * another for the merge, for the few keys a profile has). 0, or -1 when out of memory or at the
 * limit (the caller checks the limit first, to say so). */
int prof_keys_room(struct prof_key **keys, size_t n, size_t *cap);

/* An error with its place: e->detail reads "file:line:column: what was expected". loc.line is 0
 * for an error that belongs to no line (a file that cannot be read). */
struct prof_err {
	mp_err e;
	struct prof_loc loc;
};

/* A profile's name is [A-Za-z0-9_-][A-Za-z0-9._-]* below PROF_NAME_MAX: no '/', no leading dot,
 * so it can name no file outside the directory and none of a ConfigMap's dot entries. */
bool prof_name_ok(const char *name);

/* Parses text (len bytes, NULs refused) of the file "file" (for locations) into *out, which the
 * caller frees with prof_file_free even on failure. 0, or -1 with *err filled. */
int prof_parse(const char *file, const char *text, size_t len, struct prof_file *out, struct prof_err *err);
void prof_file_free(struct prof_file *f);

/* Reads the profile `name` for the merger: 0 with *text (malloc'd, the caller frees) and *len, or
 * -1 with *err filled at `from` (the include's value; NULL for the named profile itself). */
typedef int (*prof_load_fn)(void *ctx, const char *name, const struct prof_loc *from, char **text, size_t *len,
			    struct prof_err *err);

/* Parses `name` and its include chain through load, and merges them: the included file first, the
 * including one's keys replace its keys one by one, "-key" removes one. Loops, chains deeper than
 * PROF_DEPTH_MAX and removals of a key nothing set are refused. *out is freed with prof_doc_free
 * even on failure. 0 or -1. */
int prof_merge(const char *name, prof_load_fn load, void *ctx, struct prof_doc *out, struct prof_err *err);
void prof_doc_free(struct prof_doc *d);

const char *prof_cmp_text(enum prof_cmp c);       /* "=", ">=", "<=" */
const char *prof_drift_name(enum prof_drift d);   /* "report", "restore", "yield" ("" for UNSET) */
const char *prof_kind_name(enum prof_kind k);     /* "knob", "hugepages", "cgroup" */

/* Fills *err at loc with code and a sentence; returns -1. */
int prof_fail(struct prof_err *err, const struct prof_loc *loc, enum mp_code code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
