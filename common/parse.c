#include "common/parse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static size_t trimmed_len(const char *s)
{
	size_t n = strlen(s);
	if (n > 0 && s[n - 1] == '\n')
		n--;
	return n;
}

int parse_u64(const char *s, uint64_t *out)
{
	size_t n = trimmed_len(s);
	uint64_t v = 0;

	/* No length limit: the overflow check below is exact, and "000...01" is 1 however long.
	 * Every character is checked before the value, so that text which is no number at all is
	 * EINVAL however many digits it starts with, and ERANGE means "a number, too large". */
	if (n == 0 || strspn(s, "0123456789") < n) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10) {
			errno = ERANGE;
			return -1;
		}
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int parse_u64_canonical(const char *s, uint64_t *out)
{
	if ((s[0] == '0' && s[1]) || strchr(s, '\n')) {
		errno = EINVAL;
		return -1;
	}
	return parse_u64(s, out);
}

int parse_i64(const char *s, int64_t *out)
{
	uint64_t mag;
	bool neg = s[0] == '-';

	if (parse_u64(neg ? s + 1 : s, &mag) < 0)
		return -1;
	if (mag > (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
		errno = ERANGE;
		return -1;
	}
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

void idset_clear(idset *s)
{
	memset(s, 0, sizeof *s);
}

void idset_add(idset *s, unsigned id)
{
	if (id < IDSET_MAX)
		s->bits[id / 64] |= 1ULL << (id % 64);
}

bool idset_has(const idset *s, unsigned id)
{
	return id < IDSET_MAX && (s->bits[id / 64] >> (id % 64)) & 1;
}

unsigned idset_count(const idset *s)
{
	unsigned n = 0;
	for (size_t i = 0; i < IDSET_MAX / 64; i++)
		n += (unsigned)__builtin_popcountll(s->bits[i]);
	return n;
}

int idset_next(const idset *s, unsigned from)
{
	for (unsigned w = from / 64; w < IDSET_MAX / 64; w++) {
		uint64_t bits = s->bits[w];
		if (w == from / 64)
			bits &= ~0ULL << (from % 64);
		if (bits)
			return (int)(w * 64 + (unsigned)__builtin_ctzll(bits));
	}
	return -1;
}

/* Reads a decimal id at *p, advancing it. */
static int read_id(const char **p, unsigned *id)
{
	unsigned v = 0;
	int digits = 0;

	while (**p >= '0' && **p <= '9') {
		v = v * 10 + (unsigned)(**p - '0');
		if (v >= IDSET_MAX)
			return -1;
		(*p)++;
		digits++;
	}
	*id = v;
	return digits ? 0 : -1;
}

int idset_parse(const char *s, idset *out)
{
	const char *p = s;
	size_t n = trimmed_len(s);
	const char *end = s + n;

	idset_clear(out);
	if (n == 0)
		return 0;
	for (;;) {
		unsigned lo, hi;
		if (read_id(&p, &lo) < 0)
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (read_id(&p, &hi) < 0 || hi < lo)
				goto bad;
		}
		for (unsigned i = lo; i <= hi; i++)
			idset_add(out, i);
		if (p == end)
			return 0;
		if (*p != ',')
			goto bad;
		p++;
	}
bad:
	idset_clear(out);
	errno = EINVAL;
	return -1;
}

int idset_parse_client(const char *s, idset *out)
{
	if (!*s || strchr(s, '\n')) {
		idset_clear(out);
		errno = EINVAL;
		return -1;
	}
	return idset_parse(s, out);
}

int idset_format(const idset *s, char *buf, size_t len)
{
	size_t off = 0;
	unsigned i = 0;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	while (i < IDSET_MAX) {
		int next = idset_next(s, i);   /* a launch formats its sets twice: 4096 tests each were ~10 us */
		if (next < 0)
			break;
		i = (unsigned)next;
		unsigned j = i;
		while (j + 1 < IDSET_MAX && idset_has(s, j + 1))
			j++;
		int w = j == i ? snprintf(buf + off, len - off, "%s%u", off ? "," : "", i)
			       : snprintf(buf + off, len - off, "%s%u-%u", off ? "," : "", i, j);
		if (w < 0 || (size_t)w >= len - off)
			return -1;
		off += (size_t)w;
		i = j + 1;
	}
	return (int)off;
}

int parse_size_kb(const char *s, uint64_t *kb)
{
	char num[32];
	size_t i = 0;
	uint64_t v, mult_kb = 0;
	const char *unit;

	/* Leading zeros do not count against num's size; more significant digits than fit there
	 * leave a digit in unit, which is refused (no such number fits in 64 bits anyway). */
	while (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
		s++;
	while (s[i] >= '0' && s[i] <= '9' && i < sizeof num - 1) {
		num[i] = s[i];
		i++;
	}
	num[i] = '\0';
	unit = s + i;
	if (i == 0 || parse_u64(num, &v) < 0)
		goto bad;
	if (!*unit) {
		/* Plain bytes. */
		if (v % 1024)
			goto bad;
		*kb = v / 1024;
		return *kb ? 0 : (errno = EINVAL, -1);
	}
	if (!strcasecmp(unit, "k") || !strcasecmp(unit, "kb"))
		mult_kb = 1;
	else if (!strcasecmp(unit, "m") || !strcasecmp(unit, "mb"))
		mult_kb = 1024;
	else if (!strcasecmp(unit, "g") || !strcasecmp(unit, "gb"))
		mult_kb = 1024 * 1024;
	else
		goto bad;
	if (v == 0 || v > UINT64_MAX / mult_kb)
		goto bad;
	*kb = v * mult_kb;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

void format_size_kb(uint64_t kb, char *buf, size_t len)
{
	if (kb >= 1024 * 1024 && kb % (1024 * 1024) == 0)
		snprintf(buf, len, "%lluG", (unsigned long long)(kb / (1024 * 1024)));
	else if (kb >= 1024 && kb % 1024 == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(kb / 1024));
	else
		snprintf(buf, len, "%llukB", (unsigned long long)kb);
}

int parse_bracket_list(char *buf, const char **opts, int max, int *selected)
{
	int n = 0;
	char *save = NULL;

	*selected = -1;
	for (char *tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		size_t tl = strlen(tok);
		if (tok[0] == '[') {
			if (tl < 3 || tok[tl - 1] != ']')
				return -1;
			tok[tl - 1] = '\0';
			tok++;
			/* Some kernels bracket two entries; the first one is the active one. */
			if (*selected < 0)
				*selected = n;
		}
		/* Also inside a bracketed entry: "[[]" is no option named "[". */
		if (strchr(tok, '[') || strchr(tok, ']'))
			return -1;
		if (n == max)
			return -1;
		opts[n++] = tok;
	}
	return *selected < 0 ? -1 : n;
}
