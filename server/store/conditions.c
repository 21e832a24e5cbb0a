/* The stored form of an operation's conditions (ops/conditions.h), see store/conditions.h.
 *
 * What is measured, per node, is the free blocks per order before and after; the rest of the
 * answer's buddyinfo (free_pages, the unusable and fragmentation indices, 2 x 11 reals printed with
 * 17 digits) is a function of those counts (common/extfrag.h), and "after" mostly repeats
 * "before": a knob change takes microseconds. So a row keeps
 *   "buddyinfo": {"before": {node: {"zones", "free_blocks"}}, "moved": {node: [after - before per order]}}
 * with "moved" naming only the nodes whose counts moved (and {} when none did), and the reader
 * builds the answer's form again with frag_node_json, value for value what was measured. A row in
 * the full form (written before this form existed, or whose after cannot be said as a difference:
 * other nodes, zones or orders) has "after" and is returned as it is. */
#include "server/store/conditions.h"

#include <string.h>

#include "common/extfrag.h"
#include "server/store/internal.h"
#include "common/jtext.h"

/* More orders than any kernel has (MAX_PAGE_ORDER is 10 on x86-64; kernel/mmcounters.h reads 16
 * at most): a stored array longer than this is not ours, and is left alone. */
#define ORDERS_MAX 32

/* A node's free_blocks as counts; -1 when it is not an array of at most ORDERS_MAX integers. */
static int blocks_of(const json_t *node, uint64_t *out)
{
	const json_t *a = json_object_get(node, "free_blocks"), *v;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > ORDERS_MAX)
		return -1;
	json_array_foreach(a, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return -1;
		out[i] = (uint64_t)json_integer_value(v);
	}
	return (int)json_array_size(a);
}

/* {"before": ..., "moved": ...} for this full buddyinfo, or NULL to keep it as it is. */
static json_t *pack_buddy(const json_t *buddy)
{
	const json_t *before = json_object_get(buddy, "before"), *after = json_object_get(buddy, "after"), *b;
	json_t *kept = json_object(), *moved = json_object();
	const char *node;

	if (!json_is_object(before) || !json_is_object(after) || json_object_size(before) != json_object_size(after))
		goto keep;
	json_object_foreach((json_t *)before, node, b) {
		const json_t *a = json_object_get(after, node);
		uint64_t nb[ORDERS_MAX], na[ORDERS_MAX];
		int n = blocks_of(b, nb);
		bool same = true;

		if (n < 0 || !a || blocks_of(a, na) != n || !json_equal(json_object_get(b, "zones"), json_object_get(a, "zones")))
			goto keep;
		json_t *d = json_array();
		for (int o = 0; o < n; o++) {
			same &= na[o] == nb[o];
			json_array_append_new(d, json_integer((json_int_t)(na[o] - nb[o])));
		}
		if (same)
			json_decref(d);
		else
			json_object_set_new(moved, node, d);
		json_object_set_new(kept, node, json_pack("{s:O, s:O}", "zones", json_object_get(b, "zones"), "free_blocks",
							  json_object_get(b, "free_blocks")));
	}
	return json_pack("{s:o, s:o}", "before", kept, "moved", moved);
keep:
	json_decref(kept);
	json_decref(moved);
	return NULL;
}

json_t *cond_stored_form(json_t *result)
{
	json_t *cond = json_object_get(result, "conditions"), *packed, *c2, *r2;

	if (!json_is_object(cond) || !(packed = pack_buddy(json_object_get(cond, "buddyinfo"))))
		return json_incref(result);
	/* Shallow copies: the caller's result is not changed, and nothing but buddyinfo is copied. */
	c2 = json_copy(cond);
	r2 = json_copy(result);
	if (!c2 || !r2 || json_object_set_new(c2, "buddyinfo", packed) < 0 || json_object_set_new(r2, "conditions", c2) < 0) {
		json_decref(c2);
		json_decref(r2);
		return NULL;
	}
	return r2;
}

/* The answer's form of one node: its counts plus delta (NULL: none). */
static json_t *node_full(const json_t *node, const json_t *delta)
{
	uint64_t nr[ORDERS_MAX];
	int n = blocks_of(node, nr);

	if (n < 0 || (delta && (!json_is_array(delta) || json_array_size(delta) != (size_t)n)))
		return NULL;
	for (int o = 0; delta && o < n; o++)
		nr[o] += (uint64_t)json_integer_value(json_array_get(delta, (size_t)o));
	return frag_node_json(json_copy(json_object_get(node, "zones")), nr, n);
}

void cond_answer_form(json_t *result)
{
	json_t *buddy = json_object_get(json_object_get(result, "conditions"), "buddyinfo");
	const json_t *before = json_object_get(buddy, "before"), *moved = json_object_get(buddy, "moved"), *node;
	json_t *full_before, *full_after;
	const char *id;

	if (json_object_get(buddy, "after") || !json_is_object(before) || !json_is_object(moved))
		return;   /* the full form already, or not ours */
	full_before = json_object();
	full_after = json_object();
	json_object_foreach((json_t *)before, id, node) {
		json_object_set_new(full_before, id, node_full(node, NULL));
		json_object_set_new(full_after, id, node_full(node, json_object_get(moved, id)));
	}
	json_object_set_new(buddy, "before", full_before);
	json_object_set_new(buddy, "after", full_after);
	json_object_del(buddy, "moved");
}

int result_text(json_t *result, char **text)
{
	json_t *stored;

	*text = NULL;
	if (!result)
		return SQLITE_OK;
	if (!(stored = cond_stored_form(result)))
		return SQLITE_NOMEM;
	*text = jtext_dump(stored, JSON_COMPACT | JSON_ENCODE_ANY, NULL);
	json_decref(stored);
	return *text ? SQLITE_OK : SQLITE_NOMEM;
}

int bind_result(sqlite3_stmt *s, int i, json_t *result)
{
	char *text;
	int rc = result_text(result, &text);

	if (rc != SQLITE_OK)
		return rc;
	/* The text is handed to SQLite, which frees it. */
	return text ? sqlite3_bind_text(s, i, text, -1, free) : sqlite3_bind_null(s, i);
}

json_t *col_result(sqlite3_stmt *s, int col)
{
	json_t *v = col_json(s, col);

	cond_answer_form(v);
	return v;
}
