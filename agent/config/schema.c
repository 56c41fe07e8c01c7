/* Types and schema lookups. (The HTTP client arguments shared by discovery.kubernetes,
 * discovery.docker and pyroscope.write are agent/config/http_client.h's.) */
#include "agent/config/schema.h"

#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "agent/config/args.h"

const struct cfg_type cfg_t_any = { CFG_T_ANY, NULL, NULL, "any" };
const struct cfg_type cfg_t_string = { CFG_T_STRING, NULL, NULL, "string" };
const struct cfg_type cfg_t_bool = { CFG_T_BOOL, NULL, NULL, "bool" };
const struct cfg_type cfg_t_int = { CFG_T_INT, NULL, NULL, "number" };
const struct cfg_type cfg_t_uint = { CFG_T_UINT, NULL, NULL, "number" };
const struct cfg_type cfg_t_float = { CFG_T_FLOAT, NULL, NULL, "number" };
const struct cfg_type cfg_t_duration = { CFG_T_DURATION, NULL, NULL, "duration" };
const struct cfg_type cfg_t_secret = { CFG_T_SECRET, NULL, NULL, "secret" };
const struct cfg_type cfg_t_list_string = { CFG_T_LIST, &cfg_t_string, NULL, "list(string)" };
const struct cfg_type cfg_t_map_string = { CFG_T_MAP, &cfg_t_string, NULL, "map(string)" };
const struct cfg_type cfg_t_targets = { CFG_T_TARGETS, NULL, NULL, "list(map(string))" };
const struct cfg_type cfg_t_list_secret = { CFG_T_LIST, &cfg_t_secret, NULL, "list(secret)" };
const struct cfg_type cfg_t_map_list_secret = { CFG_T_MAP, &cfg_t_list_secret, NULL, "map(list(secret))" };
const struct cfg_type cfg_t_receiver = { CFG_T_CAPSULE, NULL, "ProfilesReceiver", "ProfilesReceiver" };
const struct cfg_type cfg_t_list_receiver = { CFG_T_LIST, &cfg_t_receiver, NULL, "list(ProfilesReceiver)" };
const struct cfg_type cfg_t_relabel_rules = { CFG_T_CAPSULE, NULL, "RelabelRules", "RelabelRules" };

const char *cfg_type_name(const struct cfg_type *t)
{
	return t ? t->name : "any";
}

/* Attribute and block tables are both arrays of structs that start with their name
 * and end with a NULL name: one walk serves both. */
_Static_assert(offsetof(struct cfg_attr, name) == 0 && offsetof(struct cfg_block_schema, name) == 0,
	       "schema tables start with the name");

static const char *name_at(const void *table, size_t stride, size_t i)
{
	return *(const char *const *)((const char *)table + i * stride);
}

static size_t table_len(const void *table, size_t stride)
{
	size_t n = 0;

	while (table && name_at(table, stride, n))
		n++;
	return n;
}

/* The index of name in the table, or -1. */
static long table_find(const void *table, size_t stride, const char *name)
{
	for (size_t i = 0; table && name_at(table, stride, i); i++)
		if (strcmp(name_at(table, stride, i), name) == 0)
			return (long)i;
	return -1;
}

const struct cfg_attr *cfg_schema_attr(const struct cfg_schema *s, const char *name, size_t *index)
{
	long i = table_find(s->attrs, sizeof(*s->attrs), name);

	if (i < 0)
		return NULL;
	if (index)
		*index = (size_t)i;
	return &s->attrs[i];
}

const struct cfg_block_schema *cfg_schema_block(const struct cfg_schema *s, const char *name, size_t *index)
{
	long i = table_find(s->blocks, sizeof(*s->blocks), name);

	if (i < 0)
		return NULL;
	if (index)
		*index = (size_t)i;
	return &s->blocks[i];
}

size_t cfg_schema_n_attrs(const struct cfg_schema *s)
{
	return table_len(s->attrs, sizeof(*s->attrs));
}

size_t cfg_schema_n_blocks(const struct cfg_schema *s)
{
	return table_len(s->blocks, sizeof(*s->blocks));
}

/* Levenshtein distance, bounded: names are short. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[65], cur[65];

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(size_t));
	}
	return prev[lb];
}

const char *cfg_suggest(const char *name, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = 99, len = strlen(name);
	/* Allow about one typo per four characters, at least one. */
	size_t limit = len / 4 + 1;

	for (size_t i = 0; i < n; i++) {
		size_t dist = edit_distance(name, candidates[i]);
		if (dist < best_d) {
			best_d = dist;
			best = candidates[i];
		}
	}
	return best_d <= limit ? best : NULL;
}
