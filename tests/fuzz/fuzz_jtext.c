/* common/jtext.c against jansson: whatever JSON the input is (any value, NULs in strings), its
 * tree dumped by jtext_dump is byte for byte json_dumps(JSON_COMPACT | JSON_ENCODE_ANY)'s text,
 * and the input's raw bytes as a string that skipped jansson's UTF-8 check fail both alike. */
#include <jansson.h>

#include "common/jtext.h"
#include "tests/fuzz/fuzz.h"

static void same(const json_t *v)
{
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t len = 0;
	char *got = jtext_dump(v, JSON_COMPACT | JSON_ENCODE_ANY, &len);

	FZ_ASSERT(!want == !got, "json_dumps %s, jtext %s", want ? want : "fails", got ? got : "fails");
	if (want) {
		FZ_ASSERT(len == strlen(want) && !memcmp(want, got, len), "jtext %s\njansson %s", got, want);
	}
	free(want);
	free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_t *s = json_stringn_nocheck((const char *)data, size);

	if (v)
		same(v);
	if (s)
		same(s);
	json_decref(v);
	json_decref(s);
	return 0;
}
