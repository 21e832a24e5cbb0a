/* Logging in three formats (see log.h). A message is built whole in one buffer and written with
 * one call (a line to stderr, a datagram to the journal), so lines from worker threads never
 * interleave. The journal's native protocol is systemd's "Native Journal Protocol": a datagram of
 * fields, each "KEY=value\n", or, for a value holding a newline, "KEY\n", its length as 64-bit
 * little endian, the value and "\n". A datagram here stays under BUF_BYTES (each value is bounded
 * below), so the protocol's memfd path for large entries is never needed. */
#include "server/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
#define BUF_BYTES   8192
#define VALUE_BYTES 1024    /* a field's value is cut (at a character's start) past this */

enum fmt { FMT_TEXT, FMT_JSON, FMT_JOURNAL };

static enum log_level level = LOG_LVL_INFO;
static enum fmt format = FMT_TEXT;
static int journal_fd = -1;        /* connected datagram socket in journal mode, else -1 */
static char journal_path[108] = JOURNAL_SOCKET;   /* sun_path's size */
static pthread_mutex_t journal_mu = PTHREAD_MUTEX_INITIALIZER;   /* a reconnect replaces the fd */
static const char *const names[] = { "error", "warn", "info", "debug" };
static const char *const syslog_priority[] = { "3", "4", "6", "7" };   /* err, warning, info, debug */
static const char *const format_names[] = { "text", "json", "journal" };

int log_set_level(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, names[i])) {
			level = (enum log_level)i;
			return 0;
		}
	return -1;
}

/* systemd sets JOURNAL_STREAM to "dev:ino" of the stream it connected stdout/stderr to: stderr is
 * the journal only when it is still that file (a redirect in a wrapper script makes it not). */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat sb;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &sb) < 0)
		return false;
	return (unsigned long long)sb.st_dev == dev && (unsigned long long)sb.st_ino == ino;
}

/* CLOEXEC: a launched program must not inherit the daemon's journal connection. */
static int journal_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;

	snprintf(a.sun_path, sizeof a.sun_path, "%s", journal_path);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int log_set_format(const char *name)
{
	enum fmt f;

	if (!strcmp(name, "auto"))
		f = stderr_is_journal() ? FMT_JOURNAL : FMT_TEXT;
	else if (!strcmp(name, "text"))
		f = FMT_TEXT;
	else if (!strcmp(name, "json"))
		f = FMT_JSON;
	else if (!strcmp(name, "journal"))
		f = FMT_JOURNAL;
	else
		return -1;
	if (f == FMT_JOURNAL && journal_fd < 0 && (journal_fd = journal_connect()) < 0) {
		if (strcmp(name, "auto"))
			return -1;
		f = FMT_TEXT;   /* auto: the stream is the journal but its socket is not there */
	}
	format = f;
	return 0;
}

int log_use_journal_socket(const char *path)
{
	int fd;

	if (strlen(path) >= sizeof journal_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(journal_path, sizeof journal_path, "%s", path);
	if ((fd = journal_connect()) < 0)
		return -1;
	if (journal_fd >= 0)
		close(journal_fd);
	journal_fd = fd;
	format = FMT_JOURNAL;
	return 0;
}

void log_reopen(void)
{
	pthread_mutex_lock(&journal_mu);
	journal_fd = format == FMT_JOURNAL ? journal_connect() : -1;
	pthread_mutex_unlock(&journal_mu);
}

const char *log_format(void)
{
	return format_names[format];
}

/* ---- one message, built in a bounded buffer ---------------------------------------------------- */

struct buf {
	char b[BUF_BYTES];
	size_t n;
	bool full;                      /* something did not fit: the rest is left out */
};

static void put(struct buf *b, const void *s, size_t len)
{
	if (b->full || len > sizeof b->b - b->n) {
		b->full = true;
		return;
	}
	memcpy(b->b + b->n, s, len);
	b->n += len;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* The length of the UTF-8 character at s (1..4), or 0 when s does not start a well-formed one
 * (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_char(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;   /* the second byte's range */

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* How much of v to keep: at most VALUE_BYTES, never half a character. */
static size_t bounded(const char *v)
{
	size_t n = strlen(v);   /* every value is a C string */

	if (n <= VALUE_BYTES)
		return n;
	n = VALUE_BYTES;
	while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* A JSON string: quotes, backslashes and control characters escaped, a byte that is not UTF-8
 * replaced by U+FFFD (jq, like any JSON reader, refuses such a line whole). */
static void json_str(struct buf *b, const char *v, size_t len)
{
	const unsigned char *s = (const unsigned char *)v, *end = s + len;
	char esc[8];

	put(b, "\"", 1);
	while (s < end) {
		size_t cl = utf8_char(s);
		if (*s == '"' || *s == '\\') {
			esc[0] = '\\', esc[1] = (char)*s;
			put(b, esc, 2);
		} else if (*s < 0x20 || *s == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", *s);
			put(b, esc, 6);
		} else if (cl == 0 || s + cl > end) {
			puts_(b, "\\ufffd");
			cl = 1;
		} else {
			put(b, s, cl);
		}
		s += cl ? cl : 1;
	}
	put(b, "\"", 1);
}

static void json_member(struct buf *b, const char *key, const char *value, size_t len, bool number)
{
	char name[64];
	size_t i = 0;

	if (!strncmp(key, "MPD_", 4))
		key += 4;
	for (; key[i] && i < sizeof name - 1; i++)
		name[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ? key[i] - 'A' + 'a' : key[i]);
	name[i] = 0;
	puts_(b, ",\"");
	puts_(b, name);
	puts_(b, "\":");
	if (number)
		put(b, value, len);
	else
		json_str(b, value, len);
}

/* A journal field: the binary form when the value holds a newline (the text form would end it). */
static void journal_field(struct buf *b, const char *key, const char *value, size_t len)
{
	puts_(b, key);
	if (memchr(value, '\n', len)) {
		unsigned char le[8];
		uint64_t l = len;
		for (int i = 0; i < 8; i++)
			le[i] = (unsigned char)(l >> (8 * i));
		put(b, "\n", 1);
		put(b, le, 8);
	} else {
		put(b, "=", 1);
	}
	put(b, value, len);
	put(b, "\n", 1);
}

/* 0 once the datagram is sent; after a failure (journald restarted: the connection is refused)
 * one reconnect and a second try. */
static int journal_send(const struct buf *b)
{
	int rc = -1, fd;

	pthread_mutex_lock(&journal_mu);
	for (int attempt = 0; attempt < 2 && rc < 0; attempt++) {
		if (journal_fd >= 0 && send(journal_fd, b->b, b->n, MSG_NOSIGNAL) == (ssize_t)b->n) {
			rc = 0;
			break;
		}
		if (attempt == 0 && (fd = journal_connect()) >= 0) {
			if (journal_fd >= 0)
				close(journal_fd);
			journal_fd = fd;
		}
	}
	pthread_mutex_unlock(&journal_mu);
	return rc;
}

/* RFC 3339 in UTC with milliseconds, the text lines' and the JSON "ts". */
static void stamp(const struct timespec *ts, char *out, size_t len)
{
	struct tm tm;

	gmtime_r(&ts->tv_sec, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, ts->tv_nsec / 1000000);
}

static void write_text(enum log_level lvl, const struct timespec *ts, const char *msg)
{
	char when[64];

	stamp(ts, when, sizeof when);
	/* One fprintf per line so lines from worker threads do not interleave. */
	fprintf(stderr, "%s %s %s\n", when, names[lvl], msg);
}

static void emit(enum log_level lvl, const char *message_id, const struct log_field *f, size_t n, const char *msg)
{
	struct buf *b;
	struct timespec ts;
	char when[64];

	/* The kernel's time even under the test clock (server/clock.h): a log is read beside other
	 * logs and the test's own timing, and the test clock's times are in the lines that matter. */
	clock_gettime(CLOCK_REALTIME, &ts);
	if (format == FMT_TEXT || !(b = calloc(1, sizeof *b))) {
		write_text(lvl, &ts, msg);
		return;
	}
	if (format == FMT_JSON) {
		stamp(&ts, when, sizeof when);
		puts_(b, "{\"ts\":\"");
		puts_(b, when);
		puts_(b, "\",\"level\":\"");
		puts_(b, names[lvl]);
		puts_(b, "\",\"message\":");
		json_str(b, msg, bounded(msg));
		if (message_id)
			json_member(b, "MESSAGE_ID", message_id, strlen(message_id), false);
		for (size_t i = 0; i < n; i++)
			if (f[i].value)
				json_member(b, f[i].key, f[i].value, bounded(f[i].value), f[i].number);
		/* Room for the closing brace was kept: a line cut short would not parse. */
		if (b->full || b->n > sizeof b->b - 2)
			write_text(lvl, &ts, msg);
		else {
			memcpy(b->b + b->n, "}\n", 2);
			fwrite(b->b, 1, b->n + 2, stderr);
		}
	} else {
		journal_field(b, "MESSAGE", msg, bounded(msg));
		journal_field(b, "PRIORITY", syslog_priority[lvl], 1);
		journal_field(b, "SYSLOG_IDENTIFIER", "mempolicyd", 10);
		if (message_id)
			journal_field(b, "MESSAGE_ID", message_id, strlen(message_id));
		for (size_t i = 0; i < n; i++)
			if (f[i].value)
				journal_field(b, f[i].key, f[i].value, bounded(f[i].value));
		/* stderr is the journal's stream under systemd: the message still reaches it. */
		if (b->full || journal_send(b) < 0)
			write_text(lvl, &ts, msg);
	}
	free(b);
}

static void vlog(enum log_level lvl, const char *message_id, const struct log_field *fields, size_t n,
		 const char *fmt, va_list ap)
{
	char line[1024];

	if (lvl > level)
		return;
	vsnprintf(line, sizeof line, fmt, ap);
	emit(lvl, message_id, fields, n, line);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lvl, NULL, NULL, 0, fmt, ap);
	va_end(ap);
}

void log_event(enum log_level lvl, const char *message_id, const struct log_field *fields, size_t n,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lvl, message_id, fields, n, fmt, ap);
	va_end(ap);
}
