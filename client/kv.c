#include "client/kv.h"

#include <stdio.h>
#include <string.h>

#include "common/parse.h"

bool kv_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= KV_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

/* RFC 3629 UTF-8, which is all a JSON string can carry (jansson refuses anything else). */
static bool utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n, cp;
		if (c < 0x80) {
			s++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return false;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

json_t *kv_value(const char *text)
{
	int64_t v;

	/* parse_i64 takes a trailing newline; a value typed on a command line never means one. */
	if (!strchr(text, '\n') && text[0] != '+' && parse_i64(text, &v) == 0)
		return json_integer((json_int_t)v);
	return json_string(text);
}

int kv_parse(const char *arg, char name[KV_NAME_MAX], json_t **value, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	size_t n;

	*value = NULL;
	if (!eq) {
		snprintf(err, errlen, "'%s' is not NAME=VALUE", arg);
		return -1;
	}
	n = (size_t)(eq - arg);
	if (n == 0) {
		snprintf(err, errlen, "'%s' has no knob name before '='", arg);
		return -1;
	}
	if (n >= KV_NAME_MAX) {
		snprintf(err, errlen, "knob name too long in '%.40s...'", arg);
		return -1;
	}
	memcpy(name, arg, n);
	name[n] = '\0';
	if (!kv_name_ok(name)) {
		snprintf(err, errlen, "'%s' is not a knob name (letters, digits, '.', '_', '-')", name);
		return -1;
	}
	if (eq[1] == '\0') {
		snprintf(err, errlen, "'%s' has no value after '='", arg);
		return -1;
	}
	if (!utf8_ok((const unsigned char *)eq + 1)) {
		snprintf(err, errlen, "the value for '%s' is not UTF-8 text", name);
		return -1;
	}
	if (!(*value = kv_value(eq + 1))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int kv_parse_all(char **args, int n, json_t **out, char *err, size_t errlen)
{
	json_t *obj = json_object();

	*out = NULL;
	if (!obj) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char name[KV_NAME_MAX];
		json_t *v;
		if (kv_parse(args[i], name, &v, err, errlen) < 0)
			goto fail;
		if (json_object_get(obj, name)) {
			json_decref(v);
			snprintf(err, errlen, "knob '%s' given twice", name);
			goto fail;
		}
		json_object_set_new(obj, name, v);
	}
	*out = obj;
	return 0;
fail:
	json_decref(obj);
	return -1;
}

int kv_take_node_counts(int *argc, char **argv, json_t *nodes, char *err, size_t errlen)
{
	int out = 0;

	for (int i = 0; i < *argc; i++) {
		const char *v, *eq;
		char node[16];
		uint64_t id, count;

		if (!strcmp(argv[i], "--")) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "--node")) {
			if (i + 1 >= *argc) {
				snprintf(err, errlen, "--node needs N=COUNT");
				return -1;
			}
			v = argv[++i];
		} else if (!strncmp(argv[i], "--node=", 7)) {
			v = argv[i] + 7;
		} else {
			argv[out++] = argv[i];
			continue;
		}
		if (!(eq = strchr(v, '=')) || (size_t)(eq - v) >= sizeof node) {
			snprintf(err, errlen, "--node wants N=COUNT, not '%s'", v);
			return -1;
		}
		snprintf(node, sizeof node, "%.*s", (int)(eq - v), v);
		if (parse_u64(node, &id) < 0 || parse_u64(eq + 1, &count) < 0 || count > (uint64_t)INT64_MAX ||
		    strchr(v, '\n')) {
			snprintf(err, errlen, "--node wants N=COUNT with decimal numbers, not '%s'", v);
			return -1;
		}
		/* The key the daemon looks nodes up by: "07" and "7" are one node, not two keys. */
		snprintf(node, sizeof node, "%llu", (unsigned long long)id);
		if (json_object_get(nodes, node)) {
			snprintf(err, errlen, "node %s given twice", node);
			return -1;
		}
		if (json_object_size(nodes) >= KV_MAX_NODES) {
			snprintf(err, errlen, "too many --node options (at most %d)", KV_MAX_NODES);
			return -1;
		}
		json_object_set_new(nodes, node, json_integer((json_int_t)count));
	}
	*argc = out;
	return 0;
}
