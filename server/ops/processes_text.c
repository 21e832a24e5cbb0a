/* The full placement answer as text: the mapping list written straight into one buffer.
 *
 * Built as a jansson tree, 100 000 mappings were about 1.5 million allocations (an object, a
 * dozen members and a nodes object each), then a dump walking them and a free of every one: 83 %
 * of the daemon's samples for that answer (perf, bench/README.md "proc.placement_full"), against
 * 14 % reading the kernel's files. Here each mapping is appended to one buffer sized for the
 * list. The small head (nodes, totals, policies) is still placement_json's, so it and the summary
 * cannot drift apart, and strings that need escaping (the policy texts, file paths) still go
 * through jansson's encoder, so the bytes are the ones json_dumps would write. */
#include "server/ops/processes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tbuf {
	char *b;        /* owned */
	size_t n, cap;
	bool failed;    /* out of memory: every later write is dropped */
};

static bool tb_room(struct tbuf *t, size_t more)
{
	if (t->failed)
		return false;
	if (t->n + more + 1 > t->cap) {
		size_t nc = t->cap ? t->cap : 1 << 16;
		char *nb;
		while (nc < t->n + more + 1)
			nc *= 2;
		if (!(nb = realloc(t->b, nc))) {
			t->failed = true;
			return false;
		}
		t->b = nb;
		t->cap = nc;
	}
	return true;
}

static void tb_put(struct tbuf *t, const char *s, size_t len)
{
	if (!tb_room(t, len))
		return;
	memcpy(t->b + t->n, s, len);
	t->n += len;
	t->b[t->n] = '\0';
}

static void tb_lit(struct tbuf *t, const char *s)
{
	tb_put(t, s, strlen(s));
}

/* v in decimal, or in lower-case hex (the addresses, as "%" PRIx64 wrote them): the answer's
 * 100 000 mappings are a million numbers, and printf's format parsing was a quarter of the
 * daemon's time for it (perf). */
static void tb_u64(struct tbuf *t, uint64_t v, bool hex)
{
	char d[20], *e = d + sizeof d, *c = e;
	unsigned base = hex ? 16 : 10;

	do {
		*--c = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	tb_put(t, c, (size_t)(e - c));
}

/* v as jansson writes it (the same flags as the API's replies); v is taken. false when jansson
 * cannot encode it (a string that is not UTF-8): the member is then left out, as
 * json_object_set_new of a NULL value leaves it out of the tree. */
static bool tb_json(struct tbuf *t, json_t *v)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	bool ok = s != NULL;

	if (s)
		tb_put(t, s, strlen(s));
	free(s);
	json_decref(v);
	return ok;
}

static void mapping_text(struct tbuf *t, const struct placement *p, const struct pl_mapping *m,
			 char *const *policy_text)
{
	const struct pl_policy *pol = &p->policies[m->policy];
	bool names = pol->names_nodes;
	uint64_t bytes = 0, local = 0;

	for (uint32_t c = 0; c < m->n_counts; c++) {
		const struct pl_count *pc = &p->counts[m->first_count + c];
		bytes += pl_count_bytes(m, pc);
		if (names && idset_has(&pol->nodes, pc->node))
			local += pl_count_bytes(m, pc);
	}
	tb_lit(t, "{\"start\":\"");
	tb_u64(t, m->start, true);
	tb_lit(t, "\",\"end\":");
	if (m->end) {
		tb_lit(t, "\"");
		tb_u64(t, m->end, true);
		tb_lit(t, "\"");
	} else {
		tb_lit(t, "null");
	}
	tb_lit(t, ",\"kind\":\"");
	tb_lit(t, pl_kind_name(m->kind));
	tb_lit(t, m->huge ? "\",\"huge\":true,\"policy\":" : "\",\"huge\":false,\"policy\":");
	tb_lit(t, policy_text[m->policy]);
	tb_lit(t, ",\"page_size_kb\":");
	tb_u64(t, m->page_kb, false);
	tb_lit(t, ",\"pages\":");
	tb_u64(t, m->pages, false);
	tb_lit(t, ",\"bytes\":");
	tb_u64(t, bytes, false);
	tb_lit(t, ",\"thp_bytes\":");
	tb_u64(t, m->thp_kb * 1024, false);
	tb_lit(t, ",\"nodes\":{");
	for (uint32_t c = 0; c < m->n_counts; c++) {
		const struct pl_count *pc = &p->counts[m->first_count + c];
		tb_lit(t, c ? ",\"" : "\"");
		tb_u64(t, pc->node, false);
		tb_lit(t, "\":");
		tb_u64(t, pc->pages, false);
	}
	tb_put(t, "},\"locality\":", 13);
	if (names && bytes)
		tb_json(t, json_real((double)local / (double)bytes));
	else
		tb_put(t, "null", 4);
	if (m->kind == PL_KIND_FILE) {
		size_t mark = t->n;
		tb_put(t, ",\"path\":", 8);
		if (!tb_json(t, json_string(p->strings + m->path)) && !t->failed)
			t->n = mark;   /* not encodable: no path member, as in the tree */
	}
	tb_put(t, "}", 1);
}

char *placement_text(const struct placement *p, json_t *head, size_t *len)
{
	struct tbuf t = { 0 };
	char **policy_text = NULL; /* owned: each policy's text as a JSON string */
	char *h = NULL;            /* owned */
	size_t hl;

	if (!head || !(h = json_dumps(head, JSON_COMPACT)) || (hl = strlen(h)) < 2 || h[hl - 1] != '}')
		goto fail;
	if (p->n_policies && !(policy_text = calloc(p->n_policies, sizeof *policy_text)))
		goto fail;
	for (size_t i = 0; i < p->n_policies; i++) {
		json_t *s = json_string(p->policies[i].text);
		policy_text[i] = s ? json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		json_decref(s);
		if (!policy_text[i])
			goto fail;
	}
	/* About 200 bytes a mapping: one allocation up front instead of a dozen doublings, each
	 * copying what was written and faulting in fresh pages. */
	tb_room(&t, hl + p->n_mappings * 200);
	/* The head's members, then the list as its last member (where the tree answer had it). */
	tb_put(&t, h, hl - 1);
	tb_put(&t, hl > 2 ? ",\"mappings\":[" : "\"mappings\":[", hl > 2 ? 13 : 12);
	for (size_t i = 0; i < p->n_mappings && !t.failed; i++) {
		if (i)
			tb_put(&t, ",", 1);
		mapping_text(&t, p, &p->mappings[i], policy_text);
	}
	tb_put(&t, "]}", 2);
	if (t.failed)
		goto fail;
	*len = t.n;
	goto out;
fail:
	free(t.b);
	t.b = NULL;
out:
	for (size_t i = 0; policy_text && i < p->n_policies; i++)
		free(policy_text[i]);
	free(policy_text);
	free(h);
	json_decref(head);
	return t.b;
}
