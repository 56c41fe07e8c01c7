/* Targets <-> JSON: see targets_json.h. */
#include "lib/targets_json.h"

#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/json_writer.h"
#include "lib/labels.h"
#include "lib/sorted.h"
#include "lib/strbuf.h"

json_t *np_labels_to_json(const struct np_labels *ls)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	for (size_t i = 0; i < ls->n; i++) {
		if (json_object_set_new(o, ls->v[i].name, json_string(ls->v[i].value))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

int np_labels_from_json(const json_t *obj, struct np_labels *out, struct np_err *err)
{
	const char *key;
	json_t *val;

	if (!json_is_object(obj))
		return np_errf(err, "a target must be an object of strings");
	json_object_foreach((json_t *)obj, key, val) {
		if (!json_is_string(val))
			return np_errf(err, "label \"%s\": value must be a string", key);
		if (np_labels_setn(out, key, json_string_value(val), json_string_length(val), err))
			return -1;
	}
	return 0;
}

int np_targets_from_json(const json_t *arr, struct np_targets *out, struct np_err *err)
{
	size_t i;
	json_t *el;

	if (!json_is_array(arr))
		return np_errf(err, "targets must be a JSON array of objects");
	json_array_foreach(arr, i, el) {
		struct np_labels ls = NP_LABELS_INIT;
		if (np_labels_from_json(el, &ls, err)) {
			np_labels_free(&ls);
			return np_err_wrap(err, "target %zu", i);
		}
		if (np_targets_push(out, &ls, err)) {
			np_labels_free(&ls);
			return -1;
		}
	}
	return 0;
}

char *np_targets_to_json_string(const struct np_targets *ts, int pretty)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;

	np_json_init(&j, &b);
	np_json_arr_begin(&j);
	for (size_t i = 0; i < ts->n; i++) {
		const struct np_labels *ls = &ts->v[i];
		if (pretty)
			np_json_break(&j, "\n  ");
		np_json_obj_begin(&j);
		for (size_t k = 0; k < ls->n; k++)
			np_json_kv_str(&j, ls->v[k].name, ls->v[k].value);
		np_json_obj_end(&j);
	}
	if (pretty && ts->n)
		np_buf_putc(&b, '\n');
	np_json_arr_end(&j);
	if (b.failed) {
		np_buf_free(&b);
		return NULL;
	}
	return np_buf_steal(&b, NULL);
}

/* Sets prefix + sanitized key = value. */
static int set_prefixed(struct np_labels *ls, struct np_buf *name, const char *prefix, const char *key,
			const char *value, size_t value_len, struct np_err *err)
{
	np_buf_reset(name);
	np_buf_puts(name, prefix);
	np_label_name_sanitize(key, name);
	if (name->failed)
		return np_errf(err, "out of memory setting labels %s*", prefix);
	return np_labels_setn(ls, name->p, value, value_len, err);
}

int np_labels_set_json_map(struct np_labels *ls, const json_t *map, const char *prefix, const char *present_prefix,
			   struct np_err *err)
{
	size_t n = json_object_size(map), k = 0;
	const char **keys;
	const char *key;
	json_t *val;
	struct np_buf name = NP_BUF_INIT;
	int rc = 0;

	if (!json_is_object(map) || n == 0)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return np_errf(err, "out of memory setting labels %s*", prefix);
	json_object_foreach((json_t *)map, key, val) {
		if (json_is_string(val) || json_is_null(val))
			keys[k++] = key;
	}
	qsort(keys, k, sizeof(*keys), np_cmp_str);
	for (size_t i = 0; i < k && rc == 0; i++) {
		const json_t *v = json_object_get(map, keys[i]);
		rc = json_is_string(v) ? set_prefixed(ls, &name, prefix, keys[i], json_string_value(v),
						      json_string_length(v), err)
				       : set_prefixed(ls, &name, prefix, keys[i], "", 0, err);
		if (rc == 0 && present_prefix)
			rc = set_prefixed(ls, &name, present_prefix, keys[i], "true", 4, err);
	}
	np_buf_free(&name);
	free(keys);
	return rc;
}
