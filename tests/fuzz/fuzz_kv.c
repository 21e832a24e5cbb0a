/* client/kv.c: `knob set NAME=VALUE...` and `--node N=COUNT` options, against reference
 * implementations of what kv.h documents. The input is an argv: arguments separated by NUL bytes.
 *   kv_parse_all: accepted exactly when every argument is NAME=VALUE with a good name, a value, and
 *     no name twice; the object then holds each value typed as documented (an integer for decimal
 *     text, else the string unchanged). A refusal explains itself, and never as "out of memory".
 *   kv_take_node_counts: removes exactly the --node options before "--", keeps the rest in order,
 *     and fills {"N": COUNT} with one canonical key per node; a node named twice (in any
 *     spelling), a bad number or more than KV_MAX_NODES is refused. */
#include <errno.h>
#include <jansson.h>

#include "client/kv.h"
#include "common/parse.h"
#include "tests/fuzz/fuzz.h"

#define MAX_ARGS 80

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= KV_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]))
			return false;
	return true;
}

static void check_parse_all(char **args, int n)
{
	json_t *want = json_object(), *got = (json_t *)1;
	char err[256] = "";
	bool ok = true;

	for (int i = 0; i < n && ok; i++) {
		const char *eq = strchr(args[i], '=');
		char name[KV_NAME_MAX];
		int64_t iv;
		if (!eq || !name_ok(args[i], (size_t)(eq - args[i])) || !eq[1]) {
			ok = false;
			break;
		}
		snprintf(name, sizeof name, "%.*s", (int)(eq - args[i]), args[i]);
		if (json_object_get(want, name)) {
			ok = false;
			break;
		}
		const char *v = eq + 1;
		json_t *str;
		if (!strchr(v, '\n') && v[0] != '+' && parse_i64(v, &iv) == 0)
			json_object_set_new(want, name, json_integer(iv));
		else if ((str = json_string(v)))   /* jansson's own UTF-8 check, not a copy of kv.c's */
			json_object_set_new(want, name, str);
		else
			ok = false;   /* no JSON string can carry it */
	}
	int rc = kv_parse_all(args, n, &got, err, sizeof err);
	FZ_ASSERT((rc == 0) == ok, "kv_parse_all: %d (%s), reference says %s", rc, err, ok ? "valid" : "invalid");
	if (ok) {
		FZ_ASSERT(json_equal(got, want), "kv_parse_all built a different object");
		json_decref(got);
	} else {
		FZ_ASSERT(got == NULL && err[0], "refused without a message or with an object");
		FZ_ASSERT(strcmp(err, "out of memory"), "refused as \"%s\"", err);
	}
	json_decref(want);
}

static void check_node_counts(char **args, int n)
{
	char *argv[MAX_ARGS], *kept[MAX_ARGS], err[256] = "";
	json_t *got = json_object(), *want = json_object();
	int argc = n, nkept = 0;
	bool ok = true;
	uint64_t ids[KV_MAX_NODES];
	int nids = 0;

	memcpy(argv, args, sizeof argv[0] * (size_t)n);
	for (int i = 0; i < n && ok; i++) {
		const char *v, *eq;
		uint64_t id, count;
		if (!strcmp(args[i], "--")) {
			while (i < n)
				kept[nkept++] = args[i++];
			break;
		}
		if (!strcmp(args[i], "--node")) {
			if (i + 1 >= n) {
				ok = false;
				break;
			}
			v = args[++i];
		} else if (!strncmp(args[i], "--node=", 7)) {
			v = args[i] + 7;
		} else {
			kept[nkept++] = args[i];
			continue;
		}
		char node[16];   /* the documented limit of the implementation: ids are small */
		if (!(eq = strchr(v, '=')) || (size_t)(eq - v) >= sizeof node) {
			ok = false;
			break;
		}
		snprintf(node, sizeof node, "%.*s", (int)(eq - v), v);
		if (parse_u64(node, &id) < 0 || strchr(node, '\n') || parse_u64(eq + 1, &count) < 0 ||
		    strchr(eq + 1, '\n') || count > (uint64_t)INT64_MAX) {
			ok = false;
			break;
		}
		for (int j = 0; j < nids; j++)
			if (ids[j] == id)
				ok = false;
		if (!ok || nids == KV_MAX_NODES) {
			ok = false;
			break;
		}
		ids[nids++] = id;
		snprintf(node, sizeof node, "%llu", (unsigned long long)id);
		json_object_set_new(want, node, json_integer((json_int_t)count));
	}
	int rc = kv_take_node_counts(&argc, argv, got, err, sizeof err);
	FZ_ASSERT((rc == 0) == ok, "kv_take_node_counts: %d (%s), reference says %s", rc, err,
		  ok ? "valid" : "invalid");
	if (ok) {
		FZ_ASSERT(argc == nkept, "%d arguments left, want %d", argc, nkept);
		for (int i = 0; i < argc; i++)
			FZ_ASSERT(argv[i] == kept[i], "argument %d is '%s', want '%s'", i, argv[i], kept[i]);
		char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);
		FZ_ASSERT(json_equal(got, want), "nodes %s, want %s", g, w);
		free(g);
		free(w);
	} else {
		FZ_ASSERT(err[0], "refused without a message");
	}
	json_decref(got);
	json_decref(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *args[MAX_ARGS];
	int n = 0;

	memcpy(buf, data, size);
	buf[size] = '\0';
	/* NUL-separated arguments; a trailing NUL does not start an empty one. */
	for (size_t i = 0; i < size && n < MAX_ARGS; n++) {
		args[n] = buf + i;
		i += strlen(buf + i) + 1;
	}
	check_parse_all(args, n);
	check_node_counts(args, n);
	free(buf);
	return 0;
}
