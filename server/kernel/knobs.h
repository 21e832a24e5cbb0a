/* The knob catalogue: every kernel setting mempolicyd may read or change, typed, with its file.
 * Built once at start (static entries plus per-size THP and weighted-interleave entries found in
 * the live tree) and read-only afterwards. A client's knob name is only ever compared with the
 * names in this table; paths come from the table, never from client text. */
#ifndef MPD_KERNEL_KNOBS_H
#define MPD_KERNEL_KNOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum knob_type { KNOB_CHOICE, KNOB_INTEGER, KNOB_BOOLEAN };
enum knob_root { KNOB_SYSFS, KNOB_PROCFS };

struct knob {
	char name[80];
	char rel[128];               /* path relative to the root below */
	enum knob_root root;
	enum knob_type type;
	uint64_t min, max;           /* integer and boolean knobs; max <= INT64_MAX (JSON integers) */
	char desc[128];
};

struct knob_catalogue;

/* The knob files on sysfs and procfs the catalogue keeps open once read (each read of one is then
 * a pread, not an open: bench/README.md §1b): at most this many, the first ones read; the
 * daemon's open-file budget counts them (CONN_FDS_SELF, api/conn.h). */
#define KNOBS_HELD_MAX 32

/* Builds the catalogue for these roots (borrowed; must outlive it). NULL only when out of memory. */
struct knob_catalogue *knobs_build(const char *sysfs_root, const char *procfs_root);
void knobs_free(struct knob_catalogue *c);   /* NULL is fine */

/* The knobs are written by another process that keeps CAP_DAC_OVERRIDE (the privileged helper):
 * from now on a knob_state's writable reads only the mode bits, not this process's access(). */
void knobs_set_writer_privileged(struct knob_catalogue *c);

size_t knobs_count(const struct knob_catalogue *c);
const struct knob *knobs_at(const struct knob_catalogue *c, size_t i);
/* Exact-name lookup; NULL for anything not in the table. */
const struct knob *knobs_find(const struct knob_catalogue *c, const char *name);
const char *knob_type_name(enum knob_type t);
/* True when name has the shape of an entry the catalogue adds only where the kernel has the file
 * (thp.size.<N>kB.enabled|shmem_enabled, mempolicy.weighted_interleave.node<N>): a profile naming
 * one on a kernel without it names a knob this kernel lacks, not an unknown one. */
bool knob_name_per_kernel(const char *name);
/* True when name is made of what knob names are made of ([A-Za-z0-9._+-], < 80 bytes), so that
 * it is safe to quote back in an error message; says nothing about whether the knob exists. */
bool knob_name_quotable(const char *name);
/* The file as the daemon sees it ("/sys/kernel/mm/..."), into buf. */
void knob_path(const struct knob_catalogue *c, const struct knob *k, char *buf, size_t len);

#define KNOB_MAX_OPTS 16

/* What a knob looks like right now. */
struct knob_state {
	bool available;              /* the file exists and its text parses for this type */
	bool writable;               /* advisory: a write bit is set and access(W_OK) (or the writer
	                              * is privileged: knobs_set_writer_privileged) */
	int read_err;                /* -errno of the failed read (or -EINVAL: unparseable), 0 when available */
	char value[64];              /* choice: the selected token; integer/boolean: decimal text */
	uint64_t num;                /* integer/boolean: the value */
	int nopts;                   /* choice: the kernel's list */
	const char *opts[KNOB_MAX_OPTS];   /* point into optbuf */
	char optbuf[256];
};

/* Reads the knob's file. Returns 0 (state filled, maybe !available); never fails otherwise. */
int knob_read(const struct knob_catalogue *c, const struct knob *k, struct knob_state *st);
/* knob_read without the writability checks (a stat, an open for the inode flags): writable is
 * false. For the reads that only compare the value (a write's read-back, a verdict, a drift). */
int knob_read_value(const struct knob_catalogue *c, const struct knob *k, struct knob_state *st);

enum knob_check { KNOB_OK, KNOB_NOT_ALLOWED, KNOB_OUT_OF_RANGE };
/* Is value (canonical text: a token, or decimal digits) acceptable for k in state st? */
enum knob_check knob_check_value(const struct knob *k, const struct knob_state *st, const char *value);
/* One write(2) of value, by this process. 0 or -errno. */
int knob_write(const struct knob_catalogue *c, const struct knob *k, const char *value);
/* A transaction's writes, by this process: values[i] to ks[i] in order, each read back (its value
 * compared with values[i]), stopping at the first the kernel refuses or shows otherwise. rc[i] of
 * each attempted: 0 written and read back, 1 taken but reads otherwise, -errno refused (or the
 * read-back's error). Returns how many were attempted (n when none failed). */
size_t knob_write_each(const struct knob_catalogue *c, const struct knob *const *ks, const char *const *values,
		       size_t n, int *rc);

#endif
