#include "server/api/jsonw.h"

#include "server/api/api.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_int_or_null(struct jw *w, bool has, int64_t v)
{
	if (has)
		jw_int(w, v);
	else
		jw_lit(w, "null");
}

void jw_instant_at(struct jw *w, bool has, int64_t ns)
{
	char at[48];

	if (has && api_instant_text(ns, at, sizeof at) == 0)
		jw_str(w, at);
	else
		jw_lit(w, "null");
}

void jw_json_text(struct jw *w, const char *text)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	char *t = v ? jtext_dump(v, JSON_COMPACT | JSON_ENCODE_ANY, NULL) : NULL;

	if (v && !t)
		w->failed = true;
	if (t)
		jw_raw(w, t, strlen(t));
	else
		jw_lit(w, "null");
	free(t);
	json_decref(v);
}

int jw_reply_page(struct req *rq, struct jw *w, json_t *cursor, mp_err *e)
{
	char *ctext = cursor ? jtext_dump(cursor, JSON_COMPACT | JSON_ENCODE_ANY, NULL) : NULL;
	char *text;
	size_t len;

	json_decref(cursor);
	if (!ctext) {
		jw_free(w);
		return mp_nomem(e);
	}
	jw_lit(w, "],\"next_cursor\":");
	jw_raw(w, ctext, strlen(ctext));
	free(ctext);
	jw_lit(w, "}");
	if (!(text = jw_finish(w, &len)))
		return mp_nomem(e);
	return req_reply_text(rq, text, len, "application/json");
}
