/* Everything mempolicyctl prints. Results go to stdout (aligned tables, or the daemon's JSON with
 * --json); errors and progress go to stderr, so a script can pipe results and still see why a
 * command failed. */
#ifndef MPD_CLIENT_OUT_H
#define MPD_CLIENT_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

struct cli;
struct http_result;

/* A table of text cells, printed with every column padded to its widest cell. headers may be
 * NULL for a key/value listing without a header line. */
struct table;
struct table *table_new(int ncols, const char *const *headers);
/* Appends one row of ncols cells (copied; NULL prints as "-"). */
void table_row(struct table *t, ...);
/* Same, cells from an array. */
void table_rowv(struct table *t, const char *const *cells);
/* Prints to f and frees t. On a terminal the header is bold; piped, it is plain text. */
void table_print(struct table *t, FILE *f);

/* The daemon's JSON, as --json prints it: indented by 2, keys sorted, one trailing newline. */
void out_json(json_t *v);

/* s escaped for a terminal (control characters, C1 controls and invalid UTF-8 as \e, \xNN,
 * \u00NN); owned by the caller, NULL on out of memory. Tables, errors and out_line() use it;
 * --json output is the daemon's JSON, exact. */
char *out_escape(const char *s);
/* One line on f, formatted and then escaped as a whole (for lines that quote the daemon). */
void out_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "mempolicyctl: <message>" on stderr, escaped. */
void out_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A problem+json answer: "mempolicyctl: <detail> (<code>)" on stderr, and the per-knob changes
 * when the problem carries them (a rolled-back PATCH). Under --json: the daemon's problem object
 * itself on stderr (indented, keys sorted, as --json prints results). */
void out_problem(const struct cli *c, const struct http_result *r);
/* No daemon on the socket (or at the URL). Under --json a problem object {"title", "detail"} on
 * stderr, as every error of a command that talked to the daemon. */
void out_unreachable(const struct cli *c, const char *why);
/* out_error, or under --json the same message as a problem object {"title", "detail"}. */
void out_fail(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A one-line progress bar on stderr, redrawn in place; only when stderr is a terminal (a pipe or
 * a log gets nothing). frac in 0..1; done=true ends the line. For job commands. */
void out_progress(const char *label, double frac, bool done);

/* Formatting helpers for cells. */
/* The JSON scalar as text: strings bare, integers decimal, true/false, null -> "-". Arrays of
 * scalars are joined with ",". */
void out_scalar(const json_t *v, char *buf, size_t len);
/* Bytes as "4.7 GiB" / "512 MiB" / "12 KiB" / "100 B". */
void out_bytes(unsigned long long bytes, char *buf, size_t len);
/* Nanoseconds since the epoch as "2026-11-29T10:00:00.123Z" (UTC). */
void out_time_ns(long long ns, char *buf, size_t len);
/* out_time_ns of the integer member key of o; "-" when it is absent, null or not an integer. */
void out_time_member(const json_t *o, const char *key, char *buf, size_t len);
/* A JSON array of integers as a kernel list "0-3,8"; "-" when empty. */
void out_idlist(const json_t *arr, char *buf, size_t len);

/* " --opt value" on stderr for a "more:" line (the command that fetches the next page), the
 * value in single quotes unless it is plainly safe, control characters as bash's $'\xNN': the
 * line is ready to paste and never raw to the terminal. NULL val prints nothing. */
void out_more_opt(const char *opt, const char *val);

#endif
