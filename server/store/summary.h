/* One line saying what an operation did, for lists (`mempolicyctl history`'s SUMMARY column):
 * "thp.enabled madvise→never", "2M node0 +512 ok", "cgroup /a mems→0-1". Built from the row's
 * facts when the operation is read (nothing is stored, so an old row has one too). */
#ifndef MPD_STORE_SUMMARY_H
#define MPD_STORE_SUMMARY_H

#include <jansson.h>
#include <stdbool.h>

/* The text as a new JSON string (owned by the caller), or NULL when out of memory. request and
 * targets (a resize's result.targets) are borrowed and may be NULL or json null; changes is the
 * knob changes already as text ("thp.enabled madvise→never, ...", written by the statement:
 * store/stmts.h) or NULL. Client-supplied text (a cgroup path, a program's name) is copied as it
 * is: whoever prints it escapes it. */
json_t *op_summary_text(const char *kind, const char *status, const json_t *request, const json_t *targets,
			const char *changes);
/* Whether kind has a line of its own in the builders' table (else the text is its status only):
 * mempolicyd --list-kinds says so per kind, and tests/e2e/test_kinds.py fails on one without. */
bool op_summary_has(const char *kind);
/* The same line written into buf (OP_SUMMARY_BUF bytes), for a writer that builds no JSON value
 * (a history page, api/history.c); returns buf. The text may not be UTF-8 (a hand-edited row). */
#define OP_SUMMARY_BUF 256
const char *op_summary_line(const char *kind, const char *status, const json_t *request, const json_t *targets,
			    const char *changes, char buf[OP_SUMMARY_BUF]);

#endif
