/* Reading the knobs for GET /v1/knobs and /v1/knobs/{name}: each knob's live state, which
 * api/knobs.c writes as JSON text (see knobs.h). */
#include "server/ops/knobs.h"

size_t knobs_read_count(const struct app *app)
{
	return knobs_count(app->knobs);
}

const struct knob *knobs_read_at(const struct app *app, size_t i, struct knob_state *st, char *path, size_t len)
{
	const struct knob *k = knobs_at(app->knobs, i);

	knob_read(app->knobs, k, st);
	knob_path(app->knobs, k, path, len);
	return k;
}

const struct knob *knobs_read_one(const struct app *app, const char *name, struct knob_state *st, char *path,
				  size_t len, mp_err *e)
{
	const struct knob *k = knobs_find(app->knobs, name);

	if (!k) {
		knob_unknown(e, name);
		return NULL;
	}
	knob_read(app->knobs, k, st);
	knob_path(app->knobs, k, path, len);
	return k;
}
