/* common/parse.c against independent reference implementations of what parse.h documents, plus
 * round trips: format(parse(x)) parses back to the same set / size. Every parser sees the same
 * input text; the first 8 bytes also serve as a raw size for format_size_kb. */
#include <errno.h>
#include <stdbool.h>
#include <strings.h>

#include "common/parse.h"
#include "tests/fuzz/fuzz.h"

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/* Value of n decimal digits; false when it does not fit in 64 bits. */
static bool digits_value(const char *s, size_t n, uint64_t *out)
{
	unsigned __int128 v = 0;
	for (size_t i = 0; i < n; i++) {
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > UINT64_MAX)
			return false;
	}
	*out = (uint64_t)v;
	return true;
}

static size_t trimmed(const char *s)
{
	size_t n = strlen(s);
	return n && s[n - 1] == '\n' ? n - 1 : n;
}

static void check_u64(const char *s)
{
	uint64_t got = 12345, want = 0;
	size_t n = trimmed(s);
	bool ok = all_digits(s, n) && digits_value(s, n, &want);
	int rc = parse_u64(s, &got);

	FZ_ASSERT((rc == 0) == ok, "parse_u64(\"%s\") = %d, reference says %s", s, rc, ok ? "valid" : "invalid");
	if (ok)
		FZ_ASSERT(got == want, "parse_u64(\"%s\") = %llu, want %llu", s, (unsigned long long)got,
			  (unsigned long long)want);
	else
		FZ_ASSERT(got == 12345, "parse_u64 wrote its output on failure");
}

static void check_i64(const char *s)
{
	int64_t got = 12345;
	bool neg = s[0] == '-';
	const char *m = neg ? s + 1 : s;
	size_t n = trimmed(m);
	uint64_t mag = 0;
	bool ok = all_digits(m, n) && digits_value(m, n, &mag) && mag <= (uint64_t)INT64_MAX + neg;
	int rc = parse_i64(s, &got);

	FZ_ASSERT((rc == 0) == ok, "parse_i64(\"%s\") = %d, reference says %s", s, rc, ok ? "valid" : "invalid");
	if (ok)
		FZ_ASSERT(got == (neg ? (int64_t)(0 - mag) : (int64_t)mag), "parse_i64(\"%s\") = %lld", s,
			  (long long)got);
	else
		FZ_ASSERT(got == 12345, "parse_i64 wrote its output on failure");
}

/* The kernel list format by the book: comma-separated "a" or "a-b", a <= b < IDSET_MAX. */
static bool ref_idset(const char *s, idset *out)
{
	size_t n = trimmed(s), i = 0;

	idset_clear(out);
	if (n == 0)
		return true;
	while (i <= n) {
		size_t e = i;
		while (e < n && s[e] != ',')
			e++;
		/* element s[i..e) */
		size_t dash = i;
		while (dash < e && s[dash] != '-')
			dash++;
		uint64_t lo, hi;
		if (!all_digits(s + i, dash - i) || !digits_value(s + i, dash - i, &lo) || lo >= IDSET_MAX)
			return false;
		hi = lo;
		if (dash < e && (!all_digits(s + dash + 1, e - dash - 1) ||
				 !digits_value(s + dash + 1, e - dash - 1, &hi) || hi >= IDSET_MAX || hi < lo))
			return false;
		for (uint64_t v = lo; v <= hi; v++)
			idset_add(out, (unsigned)v);
		if (e == n)
			return true;
		i = e + 1;
		if (i == n)
			return false;   /* trailing comma */
	}
	return false;
}

static void check_idset(const char *s)
{
	static char buf[IDSET_MAX * 8], buf2[IDSET_MAX * 8];
	idset got, want, back;
	bool ok = ref_idset(s, &want);
	int rc = idset_parse(s, &got), len;

	FZ_ASSERT((rc == 0) == ok, "idset_parse(\"%s\") = %d, reference says %s", s, rc, ok ? "valid" : "invalid");
	if (!ok) {
		FZ_ASSERT(idset_count(&got) == 0, "a rejected list left ids in the set");
		return;
	}
	FZ_ASSERT(!memcmp(&got, &want, sizeof got), "idset_parse(\"%s\") differs from the reference", s);
	len = idset_format(&got, buf, sizeof buf);
	FZ_ASSERT(len >= 0 && (size_t)len == strlen(buf), "idset_format length %d", len);
	FZ_ASSERT(idset_parse(buf, &back) == 0, "formatted \"%s\" does not parse back", buf);
	FZ_ASSERT(!memcmp(&got, &back, sizeof got), "\"%s\" -> \"%s\" parses back to another set", s, buf);
	/* Canonical: formatting is a fixed point. */
	FZ_ASSERT(idset_format(&back, buf2, sizeof buf2) == len && !strcmp(buf, buf2), "format not canonical");
	/* A buffer one byte short is refused, never overrun (ASan watches the heap copy). */
	if (len > 0) {
		char *tight = malloc((size_t)len);
		FZ_ASSERT(idset_format(&got, tight, (size_t)len) == -1, "format into %d bytes did not refuse", len);
		free(tight);
	}
}

static void check_size(const char *s)
{
	size_t d = 0;
	uint64_t v = 0, kb = 777, mult = 0, want = 0;
	const char *unit;
	bool ok;
	char buf[64];

	while (s[d] >= '0' && s[d] <= '9')
		d++;
	unit = s + d;
	ok = d > 0 && digits_value(s, d, &v) && v > 0;
	if (ok) {
		if (!*unit)
			mult = 0;
		else if (!strcasecmp(unit, "k") || !strcasecmp(unit, "kb"))
			mult = 1;
		else if (!strcasecmp(unit, "m") || !strcasecmp(unit, "mb"))
			mult = 1024;
		else if (!strcasecmp(unit, "g") || !strcasecmp(unit, "gb"))
			mult = 1024 * 1024;
		else
			ok = false;
	}
	if (ok && mult == 0) {
		ok = v % 1024 == 0;
		want = v / 1024;
	} else if (ok) {
		ok = v <= UINT64_MAX / mult;
		want = v * mult;
	}
	int rc = parse_size_kb(s, &kb);
	FZ_ASSERT((rc == 0) == ok, "parse_size_kb(\"%s\") = %d, reference says %s", s, rc, ok ? "valid" : "invalid");
	if (!ok)
		return;
	FZ_ASSERT(kb == want, "parse_size_kb(\"%s\") = %llu kB, want %llu", s, (unsigned long long)kb,
		  (unsigned long long)want);
	format_size_kb(kb, buf, sizeof buf);
	FZ_ASSERT(parse_size_kb(buf, &v) == 0 && v == kb, "\"%s\" -> %s does not parse back", s, buf);
}

static void check_size_format(uint64_t kb)
{
	char buf[64];
	uint64_t back = 0;

	if (kb == 0)
		return;
	format_size_kb(kb, buf, sizeof buf);
	FZ_ASSERT(parse_size_kb(buf, &back) == 0 && back == kb, "%llu kB -> \"%s\" -> %llu",
		  (unsigned long long)kb, buf, (unsigned long long)back);
}

/* The selector format: whitespace-separated tokens, "[x]" marks the selected one (the first such),
 * no other brackets anywhere. */
static void check_brackets(const char *s, int max)
{
	char *buf = strdup(s), *ref = strdup(s), *save = NULL;
	const char *opts[20], *want[20];
	int sel = 99, wsel = -1, n = 0, rc;
	bool ok = true;

	for (char *t = strtok_r(ref, " \t\n", &save); t && ok; t = strtok_r(NULL, " \t\n", &save)) {
		size_t l = strlen(t);
		if (t[0] == '[' && l >= 3 && t[l - 1] == ']') {
			t[l - 1] = '\0';
			t++;
			if (wsel < 0)
				wsel = n;
		}
		if (strchr(t, '[') || strchr(t, ']') || n == max)
			ok = false;
		else
			want[n++] = t;
	}
	ok = ok && wsel >= 0;
	rc = parse_bracket_list(buf, opts, max, &sel);
	FZ_ASSERT((rc >= 0) == ok, "parse_bracket_list(\"%s\", max %d) = %d, reference says %s", s, max, rc,
		  ok ? "valid" : "invalid");
	if (ok) {
		FZ_ASSERT(rc == n && sel == wsel, "parse_bracket_list(\"%s\"): %d options, selected %d; want %d, %d",
			  s, rc, sel, n, wsel);
		for (int i = 0; i < n; i++)
			FZ_ASSERT(!strcmp(opts[i], want[i]), "option %d is \"%s\", want \"%s\"", i, opts[i], want[i]);
	}
	free(buf);
	free(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fz_cstr(data, size);
	uint64_t raw = 0;

	check_u64(s);
	check_i64(s);
	check_idset(s);
	check_size(s);
	memcpy(&raw, data, size < sizeof raw ? size : sizeof raw);
	check_size_format(raw);
	check_size_format(raw >> 20 << 10);
	check_brackets(s, 16);
	check_brackets(s, 2);
	free(s);
	return 0;
}
