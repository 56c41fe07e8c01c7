/* libFuzzer target: kube-apiserver Status objects (k8s/status.c), as the reflector meets
 * them: the body of a non-2xx answer (first byte even), or a watch stream whose ERROR
 * events carry one (first byte odd: the rest is split by the stream scanner as a watch
 * is, and every ERROR event's object is read as a Status). Checks what the reflector
 * relies on: the fields are NUL-terminated, within their buffers and free of control
 * characters (they go into log lines), the code is 0 or an HTTP status, the Retry-After
 * is bounded, and "expired" follows client-go (reason Expired/Gone, or a bare 410). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/jscan.h"
#include "k8s/status.h"

static void check_text(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		abort(); /* not terminated */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

static void check(const struct k8s_status *st, int parsed)
{
	check_text(st->reason, sizeof(st->reason));
	check_text(st->message, sizeof(st->message));
	if (st->code != 0 && (st->code < 100 || st->code > 599))
		abort();
	if (st->retry_after_s < 0 || st->retry_after_s > 3600)
		abort();
	if (parsed != 0 && (st->code || st->reason[0] || st->message[0] || st->retry_after_s))
		abort(); /* "not a Status" must leave nothing behind */
	if (k8s_status_expired(st) && strcmp(st->reason, "Expired") != 0 && strcmp(st->reason, "Gone") != 0 &&
	    st->code != 410)
		abort();
}

static int on_event(void *ud, enum k8s_jscan_part part, const char *json, size_t len, struct np_err *err)
{
	json_t *ev = json_loadb(json, len, JSON_ALLOW_NUL, NULL);
	const char *type = json_string_value(json_object_get(ev, "type"));
	struct k8s_status st;

	(void)ud;
	(void)part;
	(void)err;
	if (type && strcmp(type, "ERROR") == 0) {
		int rc = k8s_status_from_json(json_object_get(ev, "object"), &st);
		check(&st, rc);
	}
	json_decref(ev);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct k8s_status st;
	struct k8s_jscan s;
	struct np_err err;

	if (size < 1)
		return 0;
	if (!(data[0] & 1)) {
		check(&st, k8s_status_parse((const char *)data + 1, size - 1, &st));
		return 0;
	}
	k8s_jscan_init(&s, K8S_JSCAN_STREAM, 1 << 16, on_event, NULL);
	if (k8s_jscan_feed(&s, (const char *)data + 1, size - 1, &err) == 0)
		(void)k8s_jscan_finish(&s, &err);
	k8s_jscan_free(&s);
	return 0;
}
