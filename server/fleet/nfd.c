/* The NFD local feature file: building, checking and writing it (see nfd.h). */
#include "server/fleet/nfd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIRECTIVE "# +expiry-time="
/* "2026-12-01T16:30:00Z": RFC 3339 in UTC, whole seconds, the form Go's time.RFC3339 parses. */
#define STAMP_LEN 20

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* [A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])? of n bytes, 1 <= n <= NFD_PART_MAX. */
static bool part_ok(const char *s, size_t n)
{
	if (n < 1 || n > NFD_PART_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

bool nfd_name_ok(const char *name)
{
	return part_ok(name, strnlen(name, NFD_PART_MAX + 1));
}

bool nfd_value_ok(const char *value)
{
	size_t n = strnlen(value, NFD_PART_MAX + 1);
	return n == 0 || part_ok(value, n);
}

void nfd_begin(struct nfd_text *t, int64_t expiry_s)
{
	time_t when = (time_t)expiry_s;
	struct tm tm;
	char stamp[STAMP_LEN + 1];

	gmtime_r(&when, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	t->len = (size_t)snprintf(t->text, sizeof t->text, "%s%s\n", DIRECTIVE, stamp);
	t->refused = t->dropped = 0;
}

int nfd_add(struct nfd_text *t, const char *name, const char *value)
{
	size_t room = sizeof t->text - t->len;
	int n;

	if (!nfd_name_ok(name) || !nfd_value_ok(value)) {
		t->refused++;
		return -EINVAL;
	}
	n = snprintf(t->text + t->len, room, "%s%s=%s\n", NFD_PREFIX, name, value);
	if (n < 0 || (size_t)n >= room) {
		t->text[t->len] = '\0';
		t->dropped++;
		return -ENOSPC;
	}
	t->len += (size_t)n;
	return 0;
}

/* The seconds of a stamp in nfd_begin's form, or -1. */
static int64_t stamp_parse(const char *s, size_t n)
{
	static const char form[] = "dddd-dd-ddTdd:dd:ddZ";
	struct tm tm = { 0 };

	if (n != STAMP_LEN)
		return -1;
	for (size_t i = 0; i < STAMP_LEN; i++)
		if (form[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != form[i])
			return -1;
	tm.tm_year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0') - 1900;
	tm.tm_mon = (s[5] - '0') * 10 + (s[6] - '0') - 1;
	tm.tm_mday = (s[8] - '0') * 10 + (s[9] - '0');
	tm.tm_hour = (s[11] - '0') * 10 + (s[12] - '0');
	tm.tm_min = (s[14] - '0') * 10 + (s[15] - '0');
	tm.tm_sec = (s[17] - '0') * 10 + (s[18] - '0');
	if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
		return -1;
	return (int64_t)timegm(&tm);
}

/* The first line's length (without its newline) when it is the directive with a valid stamp. */
static size_t directive_len(const char *text, size_t len)
{
	const size_t n = sizeof DIRECTIVE - 1 + STAMP_LEN;

	if (len <= n || text[n] != '\n' || memcmp(text, DIRECTIVE, sizeof DIRECTIVE - 1) ||
	    stamp_parse(text + sizeof DIRECTIVE - 1, STAMP_LEN) < 0)
		return 0;
	return n;
}

int64_t nfd_expiry(const char *text, size_t len)
{
	return directive_len(text, len) ? stamp_parse(text + sizeof DIRECTIVE - 1, STAMP_LEN) : -1;
}

bool nfd_same_labels(const struct nfd_text *a, const char *b, size_t blen)
{
	size_t da = directive_len(a->text, a->len), db = directive_len(b, blen);

	return da && db && a->len - da == blen - db && !memcmp(a->text + da, b + db, blen - db);
}

/* One label line without its newline: NFD_PREFIX name=value, both valid. */
static bool line_ok(const char *s, size_t n)
{
	const size_t p = sizeof NFD_PREFIX - 1;
	const char *eq;

	if (n <= p || memcmp(s, NFD_PREFIX, p))
		return false;
	if (!(eq = memchr(s + p, '=', n - p)))
		return false;
	return part_ok(s + p, (size_t)(eq - (s + p))) &&
	       (eq + 1 == s + n || part_ok(eq + 1, (size_t)(s + n - (eq + 1))));
}

int nfd_text_check(const char *text, size_t len)
{
	size_t at;

	if (len > NFD_TEXT_MAX || memchr(text, '\0', len) || !(at = directive_len(text, len)))
		return -EINVAL;
	for (at++; at < len;) {
		const char *nl = memchr(text + at, '\n', len - at);
		if (!nl || !line_ok(text + at, (size_t)(nl - (text + at))))
			return -EINVAL;
		at = (size_t)(nl - text) + 1;
	}
	return 0;
}

bool nfd_path_ok(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return *base && *base != '.' && strlen(path) < PATH_MAX - 2;
}

/* Splits path into its directory (into dir) and its last component. */
static const char *split(const char *path, char *dir, size_t dlen)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		snprintf(dir, dlen, ".");
		return path;
	}
	snprintf(dir, dlen, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return slash + 1;
}

int nfd_write_file(const char *path, const char *text, size_t len)
{
	char dir[PATH_MAX], dot[NAME_MAX + 2];
	const char *base;
	int dfd = -1, fd = -1, rc = 0;
	size_t done = 0;

	if (!nfd_path_ok(path))
		return -EINVAL;
	base = split(path, dir, sizeof dir);
	if (snprintf(dot, sizeof dot, ".%s", base) >= (int)sizeof dot)
		return -ENAMETOOLONG;
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	/* O_NOFOLLOW: a link planted at the dot file's name is not followed to a file elsewhere. */
	if ((fd = openat(dfd, dot, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) {
		rc = -errno;
		goto out;
	}
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			goto out;
		}
		done += (size_t)w;
	}
	/* On disk before the rename: a crash then leaves the old file or the new one, not an empty one. */
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0 || renameat(dfd, dot, dfd, base) < 0)
		rc = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0 && fd >= 0)
		unlinkat(dfd, dot, 0);
	close(dfd);
	return rc;
}
