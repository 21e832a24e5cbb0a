#include "common/jsonstr.h"

#include <stdint.h>
#include <stdio.h>

size_t json_utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0xC2 || s[0] > 0xF4)
		return 0;   /* a continuation byte, an overlong two-byte lead, or past U+10FFFF */
	len = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
	if (len > n)
		return 0;
	cp = s[0] & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return len;
}

const char *json_ascii_escape(unsigned char c, char buf[8])
{
	static const char *const short_form[0x20] = {
		['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t",
	};

	if (json_ascii_plain(c))
		return NULL;
	if (c == '"')
		return "\\\"";
	if (c == '\\')
		return "\\\\";
	if (short_form[c])
		return short_form[c];
	snprintf(buf, 8, "\\u%04X", c);   /* jansson's form: four upper-case hex digits */
	return buf;
}
