/* metav1.Status from untrusted JSON: see status.h. */
#include "k8s/status.h"

#include <stdio.h>
#include <string.h>

/* Copies s into out (cap bytes), control characters as spaces: the text goes into
 * logfmt lines, where a newline from the server must not forge another line. */
static void copy_text(char *out, size_t cap, const char *s, size_t len)
{
	size_t n = len < cap - 1 ? len : cap - 1;

	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	out[n] = '\0';
}

int k8s_status_from_json(const json_t *obj, struct k8s_status *out)
{
	const json_t *code = json_object_get(obj, "code"), *reason = json_object_get(obj, "reason"),
		     *msg = json_object_get(obj, "message"), *details = json_object_get(obj, "details");
	const json_t *retry = json_object_get(details, "retryAfterSeconds");

	memset(out, 0, sizeof(*out));
	if (json_is_integer(code) && json_integer_value(code) >= 100 && json_integer_value(code) <= 599)
		out->code = (long)json_integer_value(code);
	if (json_is_string(reason))
		copy_text(out->reason, sizeof(out->reason), json_string_value(reason), json_string_length(reason));
	if (json_is_string(msg))
		copy_text(out->message, sizeof(out->message), json_string_value(msg), json_string_length(msg));
	if (json_is_integer(retry) && json_integer_value(retry) > 0 && json_integer_value(retry) <= 3600)
		out->retry_after_s = (int)json_integer_value(retry);
	return out->code || out->reason[0] || out->message[0] || out->retry_after_s ? 0 : -1;
}

int k8s_status_parse(const char *body, size_t len, struct k8s_status *out)
{
	json_t *v = len ? json_loadb(body, len, JSON_ALLOW_NUL, NULL) : NULL;
	int rc;

	if (!json_is_object(v)) {
		json_decref(v);
		memset(out, 0, sizeof(*out));
		return -1;
	}
	rc = k8s_status_from_json(v, out);
	json_decref(v);
	return rc;
}

int k8s_status_expired(const struct k8s_status *st)
{
	/* apimachinery's IsResourceExpired || IsGone: a code alone counts only when the
	 * reason is not one of the known StatusReasons. */
	static const char *const known[] = { "Unauthorized", "Forbidden", "NotFound", "AlreadyExists", "Conflict",
					     "Invalid", "ServerTimeout", "Timeout", "TooManyRequests", "BadRequest",
					     "MethodNotAllowed", "NotAcceptable", "RequestEntityTooLarge",
					     "UnsupportedMediaType", "InternalError", "ServiceUnavailable", NULL };

	if (strcmp(st->reason, "Expired") == 0 || strcmp(st->reason, "Gone") == 0)
		return 1;
	if (st->code != 410)
		return 0;
	for (size_t i = 0; known[i]; i++)
		if (strcmp(st->reason, known[i]) == 0)
			return 0;
	return 1;
}
