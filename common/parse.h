/* Strict parsers for kernel and user text: numbers, node/CPU lists, size units, and the kernel's
 * "[selected]" lists. None of them trusts its input; every one rejects rather than guesses. */
#ifndef MPD_PARSE_H
#define MPD_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decimal unsigned integer, whole string, optional single trailing '\n'. 0 or -1 (EINVAL/ERANGE
 * in errno). Unlike strtoul, "-1", " 5", "5x", "" and "0x10" are all rejected. */
int parse_u64(const char *s, uint64_t *out);
/* Same for a signed decimal integer. */
int parse_i64(const char *s, int64_t *out);
/* A number a client wrote, in its one canonical spelling: decimal digits, no leading zero ("0"
 * itself excepted), no sign, space or newline. So "01", "+1", "1\n" and "00012" are EINVAL: a
 * path id or a knob value has one spelling, and a URL that names a resource names it once.
 * Too large is ERANGE, as for parse_u64. 0 or -1. */
int parse_u64_canonical(const char *s, uint64_t *out);

/* A set of small non-negative ids (NUMA nodes, CPUs). */
#define IDSET_MAX 4096
typedef struct idset {
	uint64_t bits[IDSET_MAX / 64];
} idset;

void idset_clear(idset *s);
void idset_add(idset *s, unsigned id);
bool idset_has(const idset *s, unsigned id);
unsigned idset_count(const idset *s);
/* The smallest member at or above from, or -1: a walk over the members that does not test each
 * of the IDSET_MAX ids (`for (int i = idset_next(s, 0); i >= 0; i = idset_next(s, i + 1))`). */
int idset_next(const idset *s, unsigned from);
/* Kernel list format "0-3,8,10-11" (also the empty string / "\n" for an empty set). Ids must be
 * < IDSET_MAX, ranges ascending. 0 or -1. */
int idset_parse(const char *s, idset *out);
/* A node or CPU list from a client: idset_parse's list form and nothing else. Unlike kernel
 * text, the empty string and a trailing '\n' are refused too; so are "0-", "3-1", "1,,2", signs,
 * spaces and ids >= IDSET_MAX (refused as soon as the digits exceed it, however many follow).
 * 0 or -1 (EINVAL). */
int idset_parse_client(const char *s, idset *out);
/* Formats back to the canonical kernel form; returns the length or -1 if buf is too small. */
int idset_format(const idset *s, char *buf, size_t len);

/* Page size in kB from "2M", "2MB", "2m", "2048kB", "2048k", "1G", "1GB", or plain bytes
 * ("2097152"). Result must be a whole number of kB. 0 or -1. */
int parse_size_kb(const char *s, uint64_t *kb);
/* "2048kB" -> "2M"; "1048576kB" -> "1G"; others stay in kB. */
void format_size_kb(uint64_t kb, char *buf, size_t len);

/* The kernel's selector files: "always [madvise] never\n". Fills up to max option pointers into
 * buf (which is modified in place) and the index of the first bracketed option. Returns the number
 * of options, or -1 if no option is bracketed or the text is malformed. */
int parse_bracket_list(char *buf, const char **opts, int max, int *selected);

#endif
