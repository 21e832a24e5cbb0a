/* Reading the knobs for GET /v1/knobs and /v1/knobs/{name}: the catalogue with each knob's live
 * value (see knobs.h). */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "server/ops/knobs.h"

static json_t *knob_json(const struct knob_catalogue *c, const struct knob *k)
{
	struct knob_state st;
	char path[PATH_MAX];
	json_t *o;

	knob_read(c, k, &st);
	knob_path(c, k, path, sizeof path);
	o = json_pack("{s:s, s:s}", "name", k->name, "type", knob_type_name(k->type));
	json_object_set_new(o, "value", st.available ? knob_value_json(k, st.value) : json_null());
	if (k->type == KNOB_CHOICE) {
		json_t *a = json_array();
		for (int i = 0; i < st.nopts; i++)
			json_array_append_new(a, json_string(st.opts[i]));
		json_object_set_new(o, "allowed", a);
	} else {
		json_object_set_new(o, "min", json_integer((json_int_t)k->min));
		json_object_set_new(o, "max", json_integer((json_int_t)k->max));
	}
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "available", json_boolean(st.available));
	json_object_set_new(o, "writable", json_boolean(st.available && st.writable));
	if (!st.available)
		json_object_set_new(o, "error", json_string(st.read_err == -EINVAL && st.optbuf[0]
							    ? "the file's text does not parse for this type"
							    : strerror(-st.read_err)));
	json_object_set_new(o, "description", json_string(k->desc));
	return o;
}

json_t *knobs_list_json(const struct app *app)
{
	const struct knob_catalogue *c = app->knobs;
	json_t *a = json_array();

	for (size_t i = 0; a && i < knobs_count(c); i++)
		json_array_append_new(a, knob_json(c, knobs_at(c, i)));
	return a;
}

json_t *knob_get_json(const struct app *app, const char *name, mp_err *e)
{
	const struct knob *k = knobs_find(app->knobs, name);

	if (!k) {
		knob_unknown(e, name);
		return NULL;
	}
	return knob_json(app->knobs, k);
}
