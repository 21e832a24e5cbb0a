#include "client/out.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/cli.h"
#include "client/http.h"
#include "common/parse.h"

struct table {
	int ncols;
	bool header;
	size_t nrows, cap;
	char **cells;           /* owned: nrows * ncols strings, row 0 the header when there is one */
};

/* The escaped form of s (owned by the caller), for a terminal: C0 controls and DEL become \t, \n,
 * \r, \e or \xNN, the C1 controls U+0080..U+009F (which some terminals obey like ESC) \u00NN,
 * and a byte that is not part of valid UTF-8 \xNN. Text that others chose (knob values, error
 * details, actor names, process argv, cgroup paths) then cannot move the cursor, retitle the
 * window or write to the administrator's terminal. NULL on out of memory. */
char *out_escape(const char *s)
{
	size_t n = strlen(s), o = 0, cap = n * 6 + 1;   /* the worst case: every byte as \u00NN */
	char *d = malloc(cap);

	if (!d)
		return NULL;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		bool valid = len > 0 && i + len <= n && (len == 1 || c >= 0xc2) && !(c > 0xf4);
		for (size_t k = 1; valid && k < len; k++)
			valid = ((unsigned char)s[i + k] & 0xc0) == 0x80;
		if (!valid) {
			o += (size_t)snprintf(d + o, cap - o, "\\x%02x", c);
			i++;
		} else if (len == 1 && (c < 0x20 || c == 0x7f)) {
			const char *named = c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == 0x1b ? "\\e" : NULL;
			o += named ? (size_t)snprintf(d + o, cap - o, "%s", named) : (size_t)snprintf(d + o, cap - o, "\\x%02x", c);
			i++;
		} else if (len == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0) {
			o += (size_t)snprintf(d + o, cap - o, "\\u%04x", (unsigned char)s[i + 1]);
			i += 2;
		} else {
			memcpy(d + o, s + i, len);
			o += len;
			i += len;
		}
	}
	d[o] = '\0';
	return d;
}

static char *dup_cell(const char *s)
{
	char *d = out_escape(s ? s : "-");
	if (!d) {
		fputs("mempolicyctl: out of memory\n", stderr);
		exit(EXIT_REFUSED);
	}
	return d;
}

static void add_row(struct table *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **c = realloc(t->cells, cap * (size_t)t->ncols * sizeof *c);
		if (!c) {
			fputs("mempolicyctl: out of memory\n", stderr);
			exit(EXIT_REFUSED);
		}
		t->cells = c;
		t->cap = cap;
	}
	for (int i = 0; i < t->ncols; i++)
		t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = dup_cell(cells[i]);
	t->nrows++;
}

struct table *table_new(int ncols, const char *const *headers)
{
	struct table *t = calloc(1, sizeof *t);
	if (!t) {
		fputs("mempolicyctl: out of memory\n", stderr);
		exit(EXIT_REFUSED);
	}
	t->ncols = ncols;
	if (headers) {
		t->header = true;
		add_row(t, headers);
	}
	return t;
}

void table_rowv(struct table *t, const char *const *cells)
{
	add_row(t, cells);
}

void table_row(struct table *t, ...)
{
	/* owned: one pointer per column, however many the table has (a fixed array would be read past
	 * its end by add_row for a wider table) */
	const char **cells = calloc((size_t)t->ncols, sizeof *cells);
	va_list ap;

	if (!cells) {
		fputs("mempolicyctl: out of memory\n", stderr);
		exit(EXIT_REFUSED);
	}
	va_start(ap, t);
	for (int i = 0; i < t->ncols; i++)
		cells[i] = va_arg(ap, const char *);
	va_end(ap);
	add_row(t, cells);
	free(cells);
}

/* Display width: UTF-8 continuation bytes take no column. */
static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static bool fancy(FILE *f)
{
	const char *term = getenv("TERM");
	/* stdout is a cookie stream over fd 1 (client/main.c), which has no fileno of its own */
	int fd = f == stdout ? STDOUT_FILENO : fileno(f);
	return isatty(fd) && !getenv("NO_COLOR") && term && strcmp(term, "dumb") != 0;
}

void table_print(struct table *t, FILE *f)
{
	size_t *w = calloc((size_t)t->ncols, sizeof *w);
	bool bold = t->header && fancy(f);

	if (!w) {
		fputs("mempolicyctl: out of memory\n", stderr);
		exit(EXIT_REFUSED);
	}
	for (size_t r = 0; r < t->nrows; r++)
		for (int c = 0; c < t->ncols; c++) {
			size_t cw = width(t->cells[r * (size_t)t->ncols + (size_t)c]);
			if (cw > w[c])
				w[c] = cw;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		if (r == 0 && bold)
			fputs("\033[1m", f);
		for (int c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
			bool last = c == t->ncols - 1;
			fputs(s, f);
			/* two spaces between columns; no trailing blanks after the last one */
			if (!last)
				fprintf(f, "%*s", (int)(w[c] - width(s) + 2), "");
		}
		if (r == 0 && bold)
			fputs("\033[0m", f);
		fputc('\n', f);
	}
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(w);
	free(t);
}

static void json_to(FILE *f, const json_t *v)
{
	/* ENSURE_ASCII: the same JSON value, but a C1 control (U+009B is a CSI to some terminals)
	 * leaves as \u009b rather than raw; jansson escapes C0 controls itself. */
	json_dumpf(v, f, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
	fputc('\n', f);
}

void out_json(json_t *v)
{
	json_to(stdout, v);
}

/* Under --json an error is a problem object on stderr: the daemon's own when it sent one, else
 * one the client makes of its message ({"title": ..., "detail": ...}, no code: the registry's
 * codes are the daemon's). */
static void json_error(const char *title, const char *fmt, va_list ap)
{
	char *msg = NULL;
	json_t *p;   /* owned */

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	p = json_pack("{s:s, s:s?}", "title", title, "detail", msg);
	if (p)
		json_to(stderr, p);
	else
		fputs("{\"title\": \"out of memory\"}\n", stderr);
	json_decref(p);
	free(msg);
}

static void json_error_f(const char *title, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_error_f(const char *title, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_error(title, fmt, ap);
	va_end(ap);
}

/* Formats, escapes as a whole and prints one line: prefix + message + newline. */
static void escaped_line(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	char *msg = NULL, *safe = NULL;

	if (vasprintf(&msg, fmt, ap) >= 0)
		safe = out_escape(msg);
	fprintf(f, "%s%s\n", prefix, safe ? safe : "(out of memory)");
	free(safe);
	free(msg);
}

void out_error(const char *fmt, ...)
{
	va_list ap;

	/* Messages quote what the daemon said: escaped as table cells are. */
	va_start(ap, fmt);
	escaped_line(stderr, "mempolicyctl: ", fmt, ap);
	va_end(ap);
}

void out_fail(const struct cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (c->json)
		json_error("mempolicyctl failed", fmt, ap);
	else
		escaped_line(stderr, "mempolicyctl: ", fmt, ap);
	va_end(ap);
}

void out_line(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	escaped_line(f, "", fmt, ap);
	va_end(ap);
}

void out_problem(const struct cli *c, const struct http_result *r)
{
	const json_t *b = r->body, *changes;
	const char *detail = json_string_value(json_object_get(b, "detail"));
	const char *code = json_string_value(json_object_get(b, "code"));

	if (c->json) {
		if (json_is_object(b))
			json_to(stderr, b);
		else
			json_error_f("the daemon answered HTTP error", "HTTP %d%s%s", r->status, r->error[0] ? ": " : "",
				     r->error);
		return;
	}
	if (!detail)
		detail = json_string_value(json_object_get(b, "title"));
	if (detail && code)
		out_error("%s (%s)", detail, code);
	else if (detail)
		out_error("%s (HTTP %d)", detail, r->status);
	else
		out_error("the daemon answered HTTP %d%s%s", r->status, r->error[0] ? ": " : "", r->error);

	changes = json_object_get(b, "changes");
	if (json_is_array(changes) && json_array_size(changes) > 0) {
		static const char *const h[] = { "KNOB", "OLD", "NEW", "STATUS" };
		struct table *t = table_new(4, h);
		size_t i;
		json_t *ch;
		json_array_foreach(changes, i, ch) {
			char o[128], n[128], st[64];
			out_scalar(json_object_get(ch, "old"), o, sizeof o);
			out_scalar(json_object_get(ch, "new"), n, sizeof n);
			out_scalar(json_object_get(ch, "status"), st, sizeof st);
			table_row(t, json_string_value(json_object_get(ch, "knob")), o, n, st);
		}
		table_print(t, stderr);
	}
}

void out_unreachable(const struct cli *c, const char *why)
{
	if (c->json && c->url)
		json_error_f("mempolicyd unreachable", "cannot reach mempolicyd at %s: %s", c->url, why);
	else if (c->json)
		json_error_f("mempolicyd unreachable", "cannot reach mempolicyd at %s: %s", c->socket, why);
	else if (c->url)
		out_error("cannot reach mempolicyd at %s: %s (is it running? is --cacert the CA that signed its "
			  "certificate?)", c->url, why);
	else
		out_error("cannot reach mempolicyd at %s: %s (is it running? set --socket or $MEMPOLICYD_SOCKET)",
			  c->socket, why);
}

void out_progress(const char *label, double frac, bool done)
{
	enum { BAR = 30 };
	char bar[BAR + 1];
	int fill;

	if (!isatty(STDERR_FILENO))
		return;
	if (frac < 0)
		frac = 0;
	if (frac > 1)
		frac = 1;
	fill = (int)(frac * BAR + 0.5);
	for (int i = 0; i < BAR; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR] = '\0';
	fprintf(stderr, "\r%s [%s] %3d%%%s", label, bar, (int)(frac * 100 + 0.5), done ? "\n" : "");
	fflush(stderr);
}

void out_scalar(const json_t *v, char *buf, size_t len)
{
	size_t i, o = 0;
	json_t *e;

	if (!v || json_is_null(v))
		snprintf(buf, len, "-");
	else if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	else if (json_is_array(v)) {
		buf[0] = '\0';
		json_array_foreach(v, i, e) {
			char one[256];
			int n;
			out_scalar(e, one, sizeof one);
			n = snprintf(buf + o, len - o, "%s%s", i ? "," : "", one);
			if (n < 0 || (size_t)n >= len - o)
				break;
			o += (size_t)n;
		}
	} else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		snprintf(buf, len, "%s", s ? s : "?");
		free(s);
	}
}

void out_bytes(unsigned long long bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", bytes);
	else
		snprintf(buf, len, v < 10 ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

void out_time_ns(long long ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000LL);
	struct tm tm;
	char base[32];

	if (ns <= 0 || !gmtime_r(&s, &tm) || !strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf, len, "%s.%03lldZ", base, (ns % 1000000000LL) / 1000000LL);
}

void out_time_member(const json_t *o, const char *key, char *buf, size_t len)
{
	const json_t *v = json_object_get(o, key);
	if (json_is_integer(v))
		out_time_ns((long long)json_integer_value(v), buf, len);
	else
		snprintf(buf, len, "-");
}

void out_idlist(const json_t *arr, char *buf, size_t len)
{
	idset s;
	size_t i;
	json_t *e;

	idset_clear(&s);
	json_array_foreach(arr, i, e) {
		json_int_t id = json_integer_value(e);
		if (json_is_integer(e) && id >= 0 && id < IDSET_MAX)
			idset_add(&s, (unsigned)id);
	}
	if (idset_count(&s) == 0 || idset_format(&s, buf, len) < 0)
		snprintf(buf, len, "-");
}

/* " --opt value" for the "more:" line (stderr: a hint, not a result, so `| wc -l` counts rows), the value in single quotes unless it is plainly safe. */
void out_more_opt(const char *opt, const char *val)
{
	if (!val)
		return;
	if (val[0] && strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:+-") == strlen(val)) {
		fprintf(stderr, " %s %s", opt, val);
		return;
	}
	fprintf(stderr, " %s '", opt);
	for (const char *p = val; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\'')
			fputs("'\\''", stderr);
		else if (c < 0x20 || c == 0x7f)   /* never raw to the terminal: bash's $'\xNN' instead */
			fprintf(stderr, "'$'\\x%02x''", c);
		else if (c == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] < 0xa0)   /* C1 */
			fprintf(stderr, "'$'\\xc2\\x%02x''", (unsigned char)*++p);
		else
			fputc(c, stderr);
	}
	fputc('\'', stderr);
}
