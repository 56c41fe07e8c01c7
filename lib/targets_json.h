/* Targets <-> JSON: the format of `nodeprof tools targets`, `tools relabel` and the
 * debug pages: an array of objects whose values are strings. jansson values for the
 * callers that parse or merge; the text is written by the JSON writer (json_writer.h). */
#ifndef NP_LIB_TARGETS_JSON_H
#define NP_LIB_TARGETS_JSON_H

#include <jansson.h>

#include "lib/error.h"
#include "lib/labels.h"

/* New reference to an object (keys in label order); NULL on allocation failure. */
json_t *np_labels_to_json(const struct np_labels *ls);

/* Appends the targets of a JSON array to out. Errors name the offending element and key
 * ("target 3: label \"x\": value must be a string"). */
NP_MUST_CHECK int np_targets_from_json(const json_t *arr, struct np_targets *out, struct np_err *err);
NP_MUST_CHECK int np_labels_from_json(const json_t *obj, struct np_labels *out, struct np_err *err);

/* Sets prefix + sanitized key = value (np_label_name_sanitize, gostr.h) for each entry of the
 * JSON object map whose value is a string, or null (as Go decodes a map[string]string: "");
 * with present_prefix, also present_prefix + sanitized key = "true". Keys go in sorted order
 * so that when two keys sanitize to the same name (a.b, a_b, a/b) the greatest key wins
 * every time (Prometheus leaves this to Go's random map order). Kubernetes' labels and
 * annotations, Docker's container and network labels. Nothing when map is not an object. */
NP_MUST_CHECK int np_labels_set_json_map(struct np_labels *ls, const json_t *map, const char *prefix,
					 const char *present_prefix, struct np_err *err);

/* The text form: compact by default, one target per line when pretty. Caller frees. */
char *np_targets_to_json_string(const struct np_targets *ts, int pretty);

#endif
