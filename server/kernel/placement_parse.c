/* The placement parsers: pure functions of the text of numa_maps, smaps/maps, smaps_rollup and
 * status (summing and reading a live process are in placement.c). */
#include "server/kernel/placement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


static const char *const mode_names[] = {
	[PL_DEFAULT] = "default",
	[PL_PREFER] = "preferred",
	[PL_BIND] = "bind",
	[PL_INTERLEAVE] = "interleave",
	[PL_LOCAL] = "local",
	[PL_PREFER_MANY] = "preferred-many",
	[PL_WEIGHTED_INTERLEAVE] = "weighted-interleave",
	[PL_UNKNOWN] = "unknown",
};

/* mpol_to_str()'s policy_modes[], longest first so "prefer" does not match "prefer (many)". */
static const struct {
	const char *text;
	enum pl_mode mode;
} kernel_modes[] = {
	{ "prefer (many)", PL_PREFER_MANY },
	{ "weighted interleave", PL_WEIGHTED_INTERLEAVE },
	{ "interleave", PL_INTERLEAVE },
	{ "default", PL_DEFAULT },
	{ "prefer", PL_PREFER },
	{ "local", PL_LOCAL },
	{ "bind", PL_BIND },
	{ "unknown", PL_UNKNOWN },
};

static const char *const kind_names[] = {
	[PL_KIND_ANON] = "anon", [PL_KIND_FILE] = "file", [PL_KIND_HEAP] = "heap", [PL_KIND_STACK] = "stack",
};

const char *pl_mode_name(enum pl_mode m)
{
	return (unsigned)m <= PL_UNKNOWN ? mode_names[m] : "unknown";
}

const char *pl_kind_name(enum pl_kind k)
{
	return (unsigned)k <= PL_KIND_STACK ? kind_names[k] : "anon";
}

void pl_init(struct placement *p)
{
	memset(p, 0, sizeof *p);
	p->uid = p->euid = p->suid = -1;
}

void pl_free(struct placement *p)
{
	free(p->mappings);
	free(p->policies);
	free(p->counts);
	free(p->strings);
	pl_init(p);
}

/* Grows an owned array so that one more element fits. 0 or -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t n, size_t need, size_t elem)
{
	size_t ncap;
	void *na;

	if (n + need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < n + need)
		ncap *= 2;
	if (!(na = realloc(*arr, ncap * elem)))
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

static bool span_is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Decimal digits only, no sign or space, no overflow. */
static int span_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 20)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Lower-case hex, as the kernel prints addresses (%08lx). */
static int span_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 16)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return -EINVAL;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* A node list from the kernel, len bytes. A cut list (maybe_cut) is read up to its last complete
 * element: "0,2,4-" and "0,2,1" (of "0,2,12") can both be the cut tail of a longer list. */
static int parse_nodes(const char *s, size_t n, bool maybe_cut, idset *out)
{
	char buf[PL_POLICY_TEXT];

	if (n == 0 || n >= sizeof buf)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (maybe_cut) {
		char *comma = strrchr(buf, ',');
		if (comma)
			*comma = '\0';
		else
			return idset_parse(buf, out) < 0 ? -EINVAL : 0;
	}
	if (strchr(buf, '\n') || idset_parse(buf, out) < 0)
		return -EINVAL;
	return 0;
}

int pl_parse_policy(const char *text, struct pl_policy *p)
{
	size_t n = strlen(text), i, ml = 0;
	const char *rest;

	memset(p, 0, sizeof *p);
	if (n == 0 || n >= sizeof p->text)
		return -EINVAL;
	memcpy(p->text, text, n + 1);
	p->maybe_truncated = n == sizeof p->text - 1;
	p->mode = PL_UNKNOWN;
	for (i = 0; i < sizeof kernel_modes / sizeof kernel_modes[0]; i++) {
		ml = strlen(kernel_modes[i].text);
		if (strncmp(text, kernel_modes[i].text, ml) == 0 &&
		    (text[ml] == '\0' || text[ml] == '=' || text[ml] == ':')) {
			p->mode = kernel_modes[i].mode;
			break;
		}
	}
	if (i == sizeof kernel_modes / sizeof kernel_modes[0]) {
		/* A mode word a newer kernel added: lower-case letters, spaces and parentheses, as
		 * the kernel's own names are. Its flags and nodes are read like any other's. */
		ml = strspn(text, "abcdefghijklmnopqrstuvwxyz ()");
		if (ml == 0 || (text[ml] && text[ml] != '=' && text[ml] != ':'))
			return -EINVAL;
	}
	rest = text + ml;
	if (*rest == '=') {
		size_t fl = strcspn(++rest, ":");
		if (span_is(rest, fl, "static"))
			p->flags = PL_F_STATIC;
		else if (span_is(rest, fl, "relative"))
			p->flags = PL_F_RELATIVE;
		else if (span_is(rest, fl, "balancing"))
			p->flags = PL_F_BALANCING;
		else if (span_is(rest, fl, "static|balancing"))
			p->flags = PL_F_STATIC | PL_F_BALANCING;
		else if (span_is(rest, fl, "relative|balancing"))
			p->flags = PL_F_RELATIVE | PL_F_BALANCING;
		else
			return -EINVAL;
		rest += fl;
	}
	if (*rest == ':') {
		rest++;
		/* default and local never name nodes (mpol_to_str leaves their mask empty). */
		if (p->mode == PL_DEFAULT || p->mode == PL_LOCAL)
			return -EINVAL;
		if (parse_nodes(rest, strlen(rest), p->maybe_truncated, &p->nodes) < 0)
			return -EINVAL;
	} else if (*rest) {
		return -EINVAL;
	}
	p->names_nodes = idset_count(&p->nodes) > 0;
	return 0;
}

/* Index of the policy whose text is t (interned: a process has few distinct policies). */
static int intern_policy(struct placement *p, const char *t, uint32_t *idx)
{
	int rc;

	for (size_t i = p->n_policies; i-- > 0;) {
		if (strcmp(p->policies[i].text, t) == 0) {
			*idx = (uint32_t)i;
			return 0;
		}
	}
	if ((rc = grow((void **)&p->policies, &p->cap_policies, p->n_policies, 1, sizeof *p->policies)) < 0)
		return rc;
	if (pl_parse_policy(t, &p->policies[p->n_policies]) < 0)
		return -EINVAL;
	*idx = (uint32_t)p->n_policies++;
	return 0;
}

/* Appends a path, undoing the kernel's octal escapes (seq_path: "\040" for a space, and '\n',
 * '\t', '=', '\\'). Offset 0 of the arena is the empty string. */
static int add_path(struct placement *p, const char *s, size_t n, uint32_t *off)
{
	int rc;
	char *d;

	if ((rc = grow((void **)&p->strings, &p->cap_strings, p->n_strings, n + 2, 1)) < 0)
		return rc;
	if (p->n_strings == 0)
		p->strings[p->n_strings++] = '\0';
	if (p->n_strings + n + 1 > UINT32_MAX)
		return -E2BIG;
	*off = (uint32_t)p->n_strings;
	d = p->strings + p->n_strings;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			*d++ = (char)((s[i + 1] - '0') << 6 | (s[i + 2] - '0') << 3 | (s[i + 3] - '0'));
			i += 3;
		} else {
			*d++ = s[i];
		}
	}
	*d++ = '\0';
	p->n_strings = (size_t)(d - p->strings);
	return 0;
}

/* Next space-separated token of [*pos, end): its start and length; false at the end. */
static bool next_tok(const char **pos, const char *end, const char **tok, size_t *n)
{
	const char *s = *pos;

	if (s >= end)
		return false;
	if (*s == ' ')
		s++;
	*tok = s;
	while (s < end && *s != ' ')
		s++;
	*n = (size_t)(s - *tok);
	*pos = s;
	return true;
}

/* One numa_maps line (no '\n'). */
int pl_parse_numa_maps_line(struct placement *p, const char *line, size_t len)
{
	const char *pos = line, *end = line + len, *t;
	size_t tn;
	char ptext[PL_POLICY_TEXT];
	size_t pl;
	struct pl_mapping m;
	bool counters = false, have_kps = false;
	int rc;

	memset(&m, 0, sizeof m);
	if (!next_tok(&pos, end, &t, &tn) || span_hex(t, tn, &m.start) < 0)
		return -EINVAL;
	if (p->n_mappings && m.start <= p->mappings[p->n_mappings - 1].start)
		return -EINVAL;
	if (!next_tok(&pos, end, &t, &tn) || tn == 0 || tn >= sizeof ptext)
		return -EINVAL;
	memcpy(ptext, t, tn);
	pl = tn;
	/* The two modes whose names hold a space: their second word is part of the policy. */
	if ((span_is(t, tn, "prefer") && end - pos >= 7 && memcmp(pos, " (many)", 7) == 0) ||
	    (span_is(t, tn, "weighted") && end - pos >= 11 && memcmp(pos, " interleave", 11) == 0)) {
		if (!next_tok(&pos, end, &t, &tn) || pl + 1 + tn >= sizeof ptext)
			return -EINVAL;
		ptext[pl++] = ' ';
		memcpy(ptext + pl, t, tn);
		pl += tn;
	}
	ptext[pl] = '\0';
	if ((rc = intern_policy(p, ptext, &m.policy)) < 0)
		return rc;

	while (next_tok(&pos, end, &t, &tn)) {
		const char *eq = memchr(t, '=', tn);
		const char *v = eq ? eq + 1 : NULL;
		size_t kn = eq ? (size_t)(eq - t) : tn, vn = eq ? tn - kn - 1 : 0;
		uint64_t val = 0;

		if (tn == 0)
			return -EINVAL;
		if (span_is(t, kn, "file") && eq && !counters && m.kind == PL_KIND_ANON && !m.huge) {
			if (vn == 0 || (rc = add_path(p, v, vn, &m.path)) < 0)
				return rc < 0 ? rc : -EINVAL;
			m.kind = PL_KIND_FILE;
			continue;
		}
		if (!eq) {
			if (counters || m.huge)
				return -EINVAL;
			if (span_is(t, tn, "huge"))
				m.huge = true;
			else if (m.kind != PL_KIND_ANON)
				return -EINVAL;
			else if (span_is(t, tn, "heap"))
				m.kind = PL_KIND_HEAP;
			/* "stack:<tid>" until 4.5 marked a thread's stack. */
			else if (span_is(t, tn, "stack") || (tn > 6 && memcmp(t, "stack:", 6) == 0 &&
							    span_u64(t + 6, tn - 6, &val) == 0))
				m.kind = PL_KIND_STACK;
			else
				return -EINVAL;
			continue;
		}
		if (have_kps || span_u64(v, vn, &val) < 0)
			return -EINVAL;
		counters = true;
		if (t[0] == 'N' && kn > 1) {
			uint64_t node;
			if (span_u64(t + 1, kn - 1, &node) < 0)
				return -EINVAL;
			if (node >= IDSET_MAX)
				return -E2BIG;
			if (val == 0 || (m.n_counts && node <= p->counts[p->n_counts - 1].node))
				return -EINVAL;
			if ((rc = grow((void **)&p->counts, &p->cap_counts, p->n_counts, 1, sizeof *p->counts)) < 0)
				return rc;
			if (!m.n_counts)
				m.first_count = (uint32_t)p->n_counts;
			p->counts[p->n_counts].node = (uint32_t)node;
			p->counts[p->n_counts++].pages = val;
			m.n_counts++;
			if (m.pages > UINT64_MAX - val)
				return -E2BIG;
			m.pages += val;
		} else if (span_is(t, kn, "kernelpagesize_kB")) {
			if (val == 0 || (val & (val - 1)))
				return -EINVAL;
			m.page_kb = val;
			have_kps = true;
		} else if (span_is(t, kn, "anon")) {
			m.anon = val;
		} else if (span_is(t, kn, "dirty")) {
			m.dirty = val;
		} else if (span_is(t, kn, "mapmax")) {
			m.mapmax = val;
		} else if (span_is(t, kn, "swapcache")) {
			m.swapcache = val;
		} else if (span_is(t, kn, "writeback")) {
			m.writeback = val;
		} else if (!span_is(t, kn, "mapped") && !span_is(t, kn, "active")) {
			return -EINVAL;
		}
	}
	/* Counters come with pages on some node and the page size after them, or not at all.
	 * Without kernelpagesize_kB (kernels before 4.0) the size would be a guess: refused. */
	if (counters && (!have_kps || m.pages == 0))
		return -EINVAL;
	if (m.page_kb && m.pages > UINT64_MAX / 1024 / m.page_kb)
		return -E2BIG;
	if ((rc = grow((void **)&p->mappings, &p->cap_mappings, p->n_mappings, 1, sizeof *p->mappings)) < 0)
		return rc;
	p->mappings[p->n_mappings++] = m;
	return 0;
}

/* Runs fn over the lines of text; a parser's refusal records the line number. */
static int for_lines(struct placement *p, const char *text, size_t len,
		     int (*fn)(struct placement *, const char *, size_t))
{
	const char *s = text, *end = text + len;
	int line = 0, rc;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		line++;
		if ((rc = fn(p, s, n)) < 0) {
			p->bad_line = line;
			return rc;
		}
		s += n + 1;
	}
	return 0;
}

int pl_parse_numa_maps(struct placement *p, const char *text, size_t len)
{
	return for_lines(p, text, len, pl_parse_numa_maps_line);
}

void pl_smaps_begin(struct pl_smaps_reader *r, struct placement *p)
{
	memset(r, 0, sizeof *r);
	r->p = p;
	r->cur = -1;
}

static int smaps_line(struct pl_smaps_reader *st, const char *line, size_t len)
{
	struct placement *p = st->p;

	st->line++;
	if (len && ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f'))) {
		const char *dash = memchr(line, '-', len), *sp = memchr(line, ' ', len);
		uint64_t start, end;
		if (!dash || !sp || dash > sp || span_hex(line, (size_t)(dash - line), &start) < 0 ||
		    span_hex(dash + 1, (size_t)(sp - dash - 1), &end) < 0 || end <= start)
			return -EINVAL;
		while (st->next < p->n_mappings && p->mappings[st->next].start < start)
			st->next++;
		st->cur = -1;
		if (st->next < p->n_mappings && p->mappings[st->next].start == start) {
			st->cur = (long)st->next;
			p->mappings[st->next++].end = end;
		}
		return 0;
	}
	if (len > 14 && memcmp(line, "AnonHugePages:", 14) == 0) {
		const char *v = line + 14;
		size_t vn = len - 14;
		uint64_t kb;
		while (vn && *v == ' ')
			v++, vn--;
		if (vn < 4 || memcmp(v + vn - 3, " kB", 3) != 0 || span_u64(v, vn - 3, &kb) < 0)
			return -EINVAL;
		if (st->cur >= 0)
			p->mappings[st->cur].thp_kb = kb;
	}
	return 0;
}

int pl_parse_smaps_line(struct pl_smaps_reader *r, const char *line, size_t len)
{
	int rc = smaps_line(r, line, len);
	if (rc < 0)
		r->p->bad_line = r->line;
	return rc;
}

int pl_parse_smaps(struct placement *p, const char *text, size_t len)
{
	struct pl_smaps_reader st;
	const char *s = text, *end = text + len;

	pl_smaps_begin(&st, p);

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		int rc = pl_parse_smaps_line(&st, s, n);
		if (rc < 0)
			return rc;
		s += n + 1;
	}
	return 0;
}

/* The value of "Key:" in a status-like text (tab or spaces after the colon), or NULL. */
static const char *field(const char *text, const char *key, size_t *n)
{
	size_t kl = strlen(key);
	const char *s = text;

	while (s && *s) {
		if (strncmp(s, key, kl) == 0 && s[kl] == ':') {
			const char *v = s + kl + 1;
			v += strspn(v, " \t");
			*n = strcspn(v, "\n");
			return v;
		}
		s = strchr(s, '\n');
		if (s)
			s++;
	}
	return NULL;
}

int pl_parse_rollup_thp(const char *text, uint64_t *kb)
{
	size_t n;
	const char *v = field(text, "AnonHugePages", &n);

	if (!v || n < 4 || memcmp(v + n - 3, " kB", 3) != 0)
		return -EINVAL;
	n -= 3;
	while (n && v[n - 1] == ' ')
		n--;
	return span_u64(v, n, kb);
}

int pl_parse_status(struct placement *p, const char *text)
{
	size_t n;
	const char *v;
	char buf[1024];
	uint64_t uid;

	if (!(v = field(text, "Name", &n)) || n >= sizeof p->name)
		return -EINVAL;
	memcpy(p->name, v, n);
	p->name[n] = '\0';
	if (!(v = field(text, "Uid", &n)))
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		size_t un = strcspn(v, "\t\n");
		if (span_u64(v, un, &uid) < 0 || uid > UINT32_MAX || v[un] != '\t')
			return -EINVAL;
		*(i == 0 ? &p->uid : i == 1 ? &p->euid : &p->suid) = (long)uid;
		v += un + 1;
	}
	if ((v = field(text, "State", &n)))
		p->zombie = n > 0 && v[0] == 'Z';
	/* A kernel without cpusets has no Mems_allowed_list: nothing is confined then. */
	if ((v = field(text, "Mems_allowed_list", &n))) {
		if (n >= sizeof buf)
			return -EINVAL;
		memcpy(buf, v, n);
		buf[n] = '\0';
		if (idset_parse(buf, &p->mems_allowed) < 0)
			return -EINVAL;
		p->have_mems_allowed = true;
	}
	return 0;
}

