/* The pure parts of `knob set`: NAME=VALUE arguments and how a value is typed on the wire.
 * No I/O, so tests/unit/test_cli_kv.c checks them directly. */
#ifndef MPD_CLIENT_KV_H
#define MPD_CLIENT_KV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KV_NAME_MAX 128

/* A knob name as the catalogue spells them: 1..127 of [A-Za-z0-9._-]. The daemon is the judge
 * of which names exist; this only keeps a name from changing the URL it is put in. */
bool kv_name_ok(const char *name);

/* The JSON value for VALUE text: decimal digits with an optional leading '-' (fitting in 64
 * bits) become a JSON integer, because integer knobs are typed on the wire; anything else stays
 * a string, which choice knobs take. Returns a new reference, or NULL when out of memory. */
json_t *kv_value(const char *text);

/* Splits "NAME=VALUE" (at the first '='). On success fills name and *value (new reference) and
 * returns 0; otherwise writes a message to err and returns -1: no '=', empty name, bad name
 * characters, empty value. */
int kv_parse(const char *arg, char name[KV_NAME_MAX], json_t **value, char *err, size_t errlen);

/* Parses all pairs into a new object {name: value} in the order given; a name given twice is an
 * error. 0 or -1 (err filled, *out NULL). */
int kv_parse_all(char **args, int n, json_t **out, char *err, size_t errlen);

/* "--node N=COUNT" (or "--node=N=COUNT") may repeat, which cli_args does not do: removes every
 * such option from argv (compacting it, updating *argc; "--" ends the search) and adds
 * {"N": COUNT} to nodes, at most KV_MAX_NODES of them. 0, or -1 with err filled (missing value,
 * not decimal, node given twice, too many). */
#define KV_MAX_NODES 64
int kv_take_node_counts(int *argc, char **argv, json_t *nodes, char *err, size_t errlen);

#endif
