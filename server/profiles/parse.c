/* One profile file's text -> struct prof_file (the grammar is docs/reference/profiles.md's).
 * Line by line with a column cursor, so every error names file:line:column; nothing here knows
 * what a knob is beyond the shape of its name and value. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/profiles/profile.h"

enum section { SEC_NONE, SEC_PROFILE, SEC_KNOBS, SEC_POOL, SEC_CGROUP };

/* The parser's cursor: one line (not NUL-terminated) and where in it. */
struct cur {
	const char *line;
	size_t len, p;
	struct prof_loc loc;         /* loc.col is set from p by at() */
	struct prof_err *err;
};

struct ctx {
	struct prof_file *f;
	enum section sec;
	uint64_t size_kb;            /* SEC_POOL */
	char cgpath[PROF_CGPATH_MAX];/* SEC_CGROUP */
	unsigned sec_line;
	size_t cap;                  /* room in f->keys (prof_keys_room) */
};

int prof_keys_room(struct prof_key **keys, size_t n, size_t *cap)
{
	size_t want;
	struct prof_key *k;

	if (n < *cap)
		return 0;
	want = *cap ? *cap * 2 : 16;
	if (want > PROF_KEYS_MAX)
		want = PROF_KEYS_MAX;
	if (want <= n || !(k = realloc(*keys, want * sizeof *k)))
		return -1;
	*keys = k;
	*cap = want;
	return 0;
}

int prof_fail(struct prof_err *err, const struct prof_loc *loc, enum mp_code code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!err)
		return -1;
	err->loc = *loc;
	if (loc->line)
		return mp_fail(&err->e, code, 0, "%s:%u:%u: %s", loc->file, loc->line, loc->col, msg);
	return mp_fail(&err->e, code, 0, "%s: %s", loc->file, msg);
}

static const struct prof_loc *at(struct cur *c, size_t p)
{
	c->loc.col = (unsigned)p + 1;
	return &c->loc;
}

static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

static bool is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static bool is_name_ch(char ch)
{
	return is_alnum(ch) || ch == '.' || ch == '_' || ch == '-' || ch == '+';
}

/* What a value may hold: enough for choice tokens (defer+madvise), numbers and node lists. */
static bool is_value_ch(char ch)
{
	return is_alnum(ch) || ch == '.' || ch == '_' || ch == '-' || ch == '+' || ch == ',' || ch == ':';
}

static void skip_ws(struct cur *c)
{
	while (c->p < c->len && is_ws(c->line[c->p]))
		c->p++;
}

/* At the end of the line, a comment aside? */
static bool at_end(struct cur *c)
{
	skip_ws(c);
	return c->p == c->len || c->line[c->p] == '#';
}

static int expect_end(struct cur *c, const char *after)
{
	if (at_end(c))
		return 0;
	return prof_fail(c->err, at(c, c->p), MPE_PROFILE_SYNTAX, "expected the end of the line (or a # comment) after %s",
			 after);
}

/* A run of chars that pass ok() into buf (size n); the run's start in *start. Empty is refused. */
static int word(struct cur *c, bool (*ok)(char), char *buf, size_t n, const char *what, size_t *start)
{
	size_t s = c->p;

	while (c->p < c->len && ok(c->line[c->p]))
		c->p++;
	*start = s;
	if (c->p == s)
		return prof_fail(c->err, at(c, s), MPE_PROFILE_SYNTAX, "expected %s", what);
	if (c->p - s >= n)
		return prof_fail(c->err, at(c, s), MPE_PROFILE_LIMIT, "%s longer than %zu bytes", what, n - 1);
	memcpy(buf, c->line + s, c->p - s);
	buf[c->p - s] = '\0';
	return 0;
}

bool prof_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= PROF_NAME_MAX || name[0] == '.' || name[0] == '+')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(name[i]) && name[i] != '.' && name[i] != '_' && name[i] != '-')
			return false;
	return true;
}

static int drift_parse(const char *s, enum prof_drift *d)
{
	static const char *const names[] = { "report", "restore", "yield" };
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*d = (enum prof_drift)(PROF_DRIFT_REPORT + i);
			return 0;
		}
	return -1;
}

static int section(struct cur *c, struct ctx *x)
{
	char name[PROF_KEY_MAX], arg[PROF_CGPATH_MAX] = "";
	size_t s, as = 0;

	c->p++;  /* '[' */
	skip_ws(c);
	if (word(c, is_name_ch, name, sizeof name, "a section name (profile, knobs, hugepages.SIZE, cgroup PATH)", &s) < 0)
		return -1;
	skip_ws(c);
	if (c->p < c->len && c->line[c->p] != ']') {
		as = c->p;
		while (c->p < c->len && c->line[c->p] != ']' && !is_ws(c->line[c->p]) && c->line[c->p] != '#')
			c->p++;
		if (c->p - as >= sizeof arg)
			return prof_fail(c->err, at(c, as), MPE_PROFILE_LIMIT, "a cgroup path longer than %zu bytes",
					 sizeof arg - 1);
		memcpy(arg, c->line + as, c->p - as);
		arg[c->p - as] = '\0';
		skip_ws(c);
	}
	if (c->p == c->len || c->line[c->p] != ']')
		return prof_fail(c->err, at(c, c->p), MPE_PROFILE_SYNTAX, "expected ']' to close the section header");
	c->p++;
	if (expect_end(c, "the section header") < 0)
		return -1;
	x->sec_line = c->loc.line;
	if (!strcmp(name, "cgroup")) {
		if (!arg[0])
			return prof_fail(c->err, at(c, s + strlen(name)), MPE_PROFILE_SYNTAX,
					 "expected a cgroup path after 'cgroup' ([cgroup workload.slice])");
		x->sec = SEC_CGROUP;
		snprintf(x->cgpath, sizeof x->cgpath, "%s", arg);
		return 0;
	}
	if (arg[0])
		return prof_fail(c->err, at(c, as), MPE_PROFILE_SYNTAX, "expected ']': only [cgroup PATH] takes a second word");
	if (!strcmp(name, "profile")) {
		x->sec = SEC_PROFILE;
	} else if (!strcmp(name, "knobs")) {
		x->sec = SEC_KNOBS;
	} else if (!strncmp(name, "hugepages.", 10)) {
		if (parse_size_kb(name + 10, &x->size_kb) < 0 || x->size_kb == 0)
			return prof_fail(c->err, at(c, s + 10), MPE_PROFILE_UNKNOWN_SECTION,
					 "expected a page size after 'hugepages.' (2M, 1G, 2048kB)");
		x->sec = SEC_POOL;
	} else {
		return prof_fail(c->err, at(c, s), MPE_PROFILE_UNKNOWN_SECTION,
				 "unknown section [%s]: expected profile, knobs, hugepages.SIZE or cgroup PATH", name);
	}
	return 0;
}

/* '=', '>=' or '<='. */
static int comparator(struct cur *c, enum prof_cmp *cmp)
{
	const char *s = c->line + c->p;
	size_t left = c->len - c->p;

	if (left >= 1 && s[0] == '=') {
		*cmp = PROF_EQ;
		c->p += 1;
	} else if (left >= 2 && (s[0] == '>' || s[0] == '<') && s[1] == '=') {
		*cmp = s[0] == '>' ? PROF_GE : PROF_LE;
		c->p += 2;
	} else {
		return prof_fail(c->err, at(c, c->p), MPE_PROFILE_SYNTAX, "expected '=', '>=' or '<=' after the key");
	}
	return 0;
}

/* value ('|' value)* */
static int values(struct cur *c, struct prof_key *k)
{
	size_t s;

	for (;;) {
		skip_ws(c);
		if (k->nvals == PROF_ALTS_MAX)
			return prof_fail(c->err, at(c, c->p), MPE_PROFILE_LIMIT, "more than %d alternatives", PROF_ALTS_MAX);
		if (word(c, is_value_ch, k->vals[k->nvals], PROF_VALUE_MAX, "a value", &s) < 0)
			return -1;
		k->nvals++;
		skip_ws(c);
		if (c->p == c->len || c->line[c->p] != '|')
			return 0;
		c->p++;
	}
}

/* (';' ('required' | 'on-drift' '=' policy))* */
static int options(struct cur *c, struct prof_key *k)
{
	while (!at_end(c)) {
		char opt[32], val[32];
		size_t s, vs;
		if (c->line[c->p] != ';')
			return prof_fail(c->err, at(c, c->p), MPE_PROFILE_SYNTAX,
					 "expected ';' and an option (required, on-drift = ...), '|' and another value, "
					 "or the end of the line");
		c->p++;
		skip_ws(c);
		if (word(c, is_name_ch, opt, sizeof opt, "an option (required or on-drift)", &s) < 0)
			return -1;
		if (!strcmp(opt, "required")) {
			if (k->required)
				return prof_fail(c->err, at(c, s), MPE_PROFILE_SYNTAX, "'required' given twice");
			k->required = true;
			continue;
		}
		if (strcmp(opt, "on-drift"))
			return prof_fail(c->err, at(c, s), MPE_PROFILE_SYNTAX,
					 "unknown option '%s': expected required or on-drift", opt);
		if (k->drift_set)
			return prof_fail(c->err, at(c, s), MPE_PROFILE_SYNTAX, "'on-drift' given twice");
		skip_ws(c);
		if (c->p == c->len || c->line[c->p] != '=')
			return prof_fail(c->err, at(c, c->p), MPE_PROFILE_SYNTAX, "expected '=' after on-drift");
		c->p++;
		skip_ws(c);
		if (word(c, is_name_ch, val, sizeof val, "report, restore or yield", &vs) < 0)
			return -1;
		if (drift_parse(val, &k->on_drift) < 0)
			return prof_fail(c->err, at(c, vs), MPE_PROFILE_BAD_VALUE,
					 "on-drift is report, restore or yield, not '%s'", val);
		k->drift_set = true;
	}
	return 0;
}

/* The key's meaning in its section, and its id. The knob catalogue is ops/profiles.c's. */
static int place_key(struct cur *c, struct ctx *x, struct prof_key *k, size_t ks)
{
	char sz[32];
	uint64_t node;

	switch (x->sec) {
	case SEC_KNOBS:
		if (!is_alnum(k->key[0]))
			return prof_fail(c->err, at(c, ks), MPE_PROFILE_UNKNOWN_KEY, "a knob name starts with a letter or digit");
		k->kind = PROF_KNOB;
		snprintf(k->id, sizeof k->id, "%s", k->key);
		return 0;
	case SEC_POOL:
		k->kind = PROF_POOL;
		k->size_kb = x->size_kb;
		if (!strcmp(k->key, "total")) {
			k->node = -1;
		} else if (!strncmp(k->key, "node", 4) && parse_u64(k->key + 4, &node) == 0 && node < IDSET_MAX &&
			   (k->key[4] != '0' || !k->key[5]) && !strchr(k->key, '\n')) {
			k->node = (int)node;
		} else {
			return prof_fail(c->err, at(c, ks), MPE_PROFILE_UNKNOWN_KEY,
					 "unknown key '%s' in [hugepages.SIZE]: expected total or nodeN", k->key);
		}
		format_size_kb(k->size_kb, sz, sizeof sz);
		snprintf(k->id, sizeof k->id, "hugepages.%s.%s", sz, k->key);
		return 0;
	case SEC_CGROUP:
		if (strcmp(k->key, "mems"))
			return prof_fail(c->err, at(c, ks), MPE_PROFILE_UNKNOWN_KEY,
					 "unknown key '%s' in [cgroup PATH]: expected mems", k->key);
		k->kind = PROF_CGROUP;
		snprintf(k->cgpath, sizeof k->cgpath, "%s", x->cgpath);
		snprintf(k->id, sizeof k->id, "cgroup[%s].mems", x->cgpath);
		return 0;
	default:
		return prof_fail(c->err, at(c, ks), MPE_PROFILE_SYNTAX, "expected a [section] header before the first key");
	}
}

/* What the key's kind allows of its comparator and values (the kernel's say comes later). */
static int check_shape(struct cur *c, const struct prof_key *k, size_t vs, size_t cs)
{
	uint64_t v;
	idset set;

	if (k->nvals > 1 && (k->kind != PROF_KNOB || k->cmp != PROF_EQ))
		return prof_fail(c->err, at(c, vs), MPE_PROFILE_BAD_VALUE,
				 "alternatives (a|b) only with '=' in [knobs]");
	if (k->kind == PROF_CGROUP) {
		if (k->cmp != PROF_EQ)
			return prof_fail(c->err, at(c, cs), MPE_PROFILE_BAD_VALUE, "mems takes '=' only");
		if (idset_parse_client(k->vals[0], &set) < 0)
			return prof_fail(c->err, at(c, vs), MPE_PROFILE_BAD_VALUE,
					 "expected a node list (0-1, 0,2) for mems, not '%s'", k->vals[0]);
		return 0;
	}
	if ((k->kind == PROF_POOL || k->cmp != PROF_EQ) && parse_u64(k->vals[0], &v) < 0)
		return prof_fail(c->err, at(c, vs), MPE_PROFILE_BAD_VALUE, "expected a decimal number%s, not '%s'",
				 k->kind == PROF_POOL ? " of pages" : " after a '>=' or '<='", k->vals[0]);
	return 0;
}

static int profile_key(struct cur *c, struct ctx *x, const char *key, size_t ks)
{
	struct prof_file *f = x->f;
	char val[PROF_NAME_MAX];
	size_t vs;

	skip_ws(c);
	if (c->p == c->len || c->line[c->p] != '=')
		return prof_fail(c->err, at(c, c->p), MPE_PROFILE_SYNTAX, "expected '=' after %s", key);
	c->p++;
	skip_ws(c);
	if (!strcmp(key, "include")) {
		if (f->has_include)
			return prof_fail(c->err, at(c, ks), MPE_PROFILE_DUPLICATE_KEY, "a second include (one per file)");
		if (word(c, is_name_ch, val, sizeof val, "a profile name", &vs) < 0)
			return -1;
		if (!prof_name_ok(val))
			return prof_fail(c->err, at(c, vs), MPE_PROFILE_INCLUDE_ESCAPE,
					 "expected a profile name ([A-Za-z0-9_-] then [A-Za-z0-9._-], no '/', no leading "
					 "dot), not '%s'", val);
		f->has_include = true;
		snprintf(f->include, sizeof f->include, "%s", val);
		f->include_loc = *at(c, vs);
		return expect_end(c, "the profile name");
	}
	if (!strcmp(key, "on-drift")) {
		if (f->on_drift != PROF_DRIFT_UNSET)
			return prof_fail(c->err, at(c, ks), MPE_PROFILE_DUPLICATE_KEY, "on-drift given twice in [profile]");
		if (word(c, is_name_ch, val, sizeof val, "report, restore or yield", &vs) < 0)
			return -1;
		if (drift_parse(val, &f->on_drift) < 0)
			return prof_fail(c->err, at(c, vs), MPE_PROFILE_BAD_VALUE,
					 "on-drift is report, restore or yield, not '%s'", val);
		return expect_end(c, "the policy");
	}
	return prof_fail(c->err, at(c, ks), MPE_PROFILE_UNKNOWN_KEY,
			 "unknown key '%s' in [profile]: expected include or on-drift", key);
}

static int entry(struct cur *c, struct ctx *x)
{
	struct prof_file *f = x->f;
	struct prof_key *k;
	bool removal = false;
	char key[PROF_KEY_MAX];
	size_t ks, vs, cs;

	if (c->line[c->p] == '-') {
		removal = true;
		c->p++;
	}
	if (word(c, is_name_ch, key, sizeof key, "a key, a [section] or a # comment", &ks) < 0)
		return -1;
	if (x->sec == SEC_PROFILE) {
		if (removal)
			return prof_fail(c->err, at(c, ks - 1), MPE_PROFILE_SYNTAX, "[profile] keys cannot be removed");
		return profile_key(c, x, key, ks);
	}
	if (f->n == PROF_KEYS_MAX)
		return prof_fail(c->err, at(c, ks), MPE_PROFILE_LIMIT, "more than %d keys in one file", PROF_KEYS_MAX);
	if (prof_keys_room(&f->keys, f->n, &x->cap) < 0)
		return mp_nomem(c->err ? &c->err->e : NULL);
	k = &f->keys[f->n];
	memset(k, 0, sizeof *k);
	snprintf(k->key, sizeof k->key, "%s", key);
	k->loc = *at(c, removal ? ks - 1 : ks);
	k->removal = removal;
	if (place_key(c, x, k, ks) < 0)
		return -1;
	if (removal) {
		if (expect_end(c, "the key to remove") < 0)
			return -1;
	} else {
		skip_ws(c);
		cs = c->p;
		if (comparator(c, &k->cmp) < 0)
			return -1;
		skip_ws(c);
		vs = c->p;
		if (values(c, k) < 0 || options(c, k) < 0 || check_shape(c, k, vs, cs) < 0)
			return -1;
	}
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->keys[i].id, k->id))
			return prof_fail(c->err, &k->loc, MPE_PROFILE_DUPLICATE_KEY, "%s is already %s at line %u",
					 k->id, f->keys[i].removal ? "removed" : "set", f->keys[i].loc.line);
	f->n++;
	return 0;
}

static int parse_line(struct cur *c, struct ctx *x)
{
	if (at_end(c))
		return 0;
	if (c->line[c->p] == '[')
		return section(c, x);
	return entry(c, x);
}

int prof_parse(const char *file, const char *text, size_t len, struct prof_file *out, struct prof_err *err)
{
	struct ctx x = { .f = out };
	struct cur c = { .err = err };
	size_t off = 0;
	const char *nul;

	memset(out, 0, sizeof *out);
	snprintf(c.loc.file, sizeof c.loc.file, "%s", file);
	if (len > PROF_FILE_MAX)
		return prof_fail(err, &c.loc, MPE_PROFILE_LIMIT, "larger than %d bytes", PROF_FILE_MAX);
	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		c.line = text + off;
		c.len = nl ? (size_t)(nl - c.line) : len - off;
		c.p = 0;
		c.loc.line++;
		if ((nul = memchr(c.line, '\0', c.len)))
			return prof_fail(err, at(&c, (size_t)(nul - c.line)), MPE_PROFILE_SYNTAX, "a NUL byte");
		if (c.len > PROF_LINE_MAX)
			return prof_fail(err, at(&c, PROF_LINE_MAX), MPE_PROFILE_LIMIT, "a line longer than %d bytes",
					 PROF_LINE_MAX);
		if (parse_line(&c, &x) < 0)
			return -1;
		off += c.len + (nl != NULL);
	}
	return 0;
}

void prof_file_free(struct prof_file *f)
{
	free(f->keys);
	f->keys = NULL;
	f->n = 0;
}

const char *prof_cmp_text(enum prof_cmp c)
{
	return c == PROF_GE ? ">=" : c == PROF_LE ? "<=" : "=";
}

const char *prof_drift_name(enum prof_drift d)
{
	switch (d) {
	case PROF_DRIFT_REPORT:  return "report";
	case PROF_DRIFT_RESTORE: return "restore";
	case PROF_DRIFT_YIELD:   return "yield";
	default:                 return "";
	}
}

const char *prof_kind_name(enum prof_kind k)
{
	return k == PROF_POOL ? "hugepages" : k == PROF_CGROUP ? "cgroup" : "knob";
}
