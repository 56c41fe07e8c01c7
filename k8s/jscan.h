/* Incremental splitter for kube-apiserver responses, fed with whatever byte ranges
 * the network delivers (chunk boundaries need not match JSON boundaries).
 *
 * STREAM mode (watch): the body is a sequence of JSON objects (newline-separated in
 * practice, but only the braces matter); each complete object is handed to the callback.
 * LIST mode (list): the body is one object; its "metadata" member and each element of
 * its "items" array are handed over one by one, so a list is never buffered whole.
 *
 * Memory is bounded by max_value: a longer event is an error; a longer list item is
 * skipped and reported (K8S_JSCAN_OVERSIZE) so one huge pod cannot stall a node's list.
 * Hand-written (not jansson's stream decoder) because it is on the hot path and only
 * needs to find value boundaries; each value is then parsed with jansson. */
#ifndef NP_K8S_JSCAN_H
#define NP_K8S_JSCAN_H

#include <stddef.h>

#include "lib/error.h"
#include "lib/strbuf.h"

enum k8s_jscan_mode { K8S_JSCAN_STREAM, K8S_JSCAN_LIST };

enum k8s_jscan_part {
	K8S_JSCAN_EVENT,    /* STREAM: one complete top-level object */
	K8S_JSCAN_METADATA, /* LIST: the top-level "metadata" object */
	K8S_JSCAN_ITEM,     /* LIST: one element of "items" */
	K8S_JSCAN_OVERSIZE, /* LIST: an element of "items" longer than max_value was skipped (json = NULL) */
};

/* Returns 0 to go on, -1 (with err filled) to stop scanning. The bytes are only valid during the call. */
typedef int (*k8s_jscan_fn)(void *ud, enum k8s_jscan_part part, const char *json, size_t len, struct np_err *err);

struct k8s_jscan {
	enum k8s_jscan_mode mode;
	size_t max_value;
	k8s_jscan_fn fn;
	void *ud;

	unsigned long depth;
	int in_str, esc;
	int capturing, skipping;
	unsigned long cap_depth;
	enum k8s_jscan_part cap_part;
	struct np_buf buf; /* the part of the current value that came in earlier chunks */

	/* LIST mode: where we are in the top-level object. */
	int started, done;
	int expect_key, reading_key;
	char key[16];
	size_t key_len;
	int key_overflow;
	enum { KEY_OTHER, KEY_ITEMS, KEY_METADATA } key_kind;
	int in_items;
};

void k8s_jscan_init(struct k8s_jscan *s, enum k8s_jscan_mode mode, size_t max_value, k8s_jscan_fn fn, void *ud);
void k8s_jscan_free(struct k8s_jscan *s);
/* Back to the start of a new body; keeps mode, limit and callback. */
void k8s_jscan_reset(struct k8s_jscan *s);

NP_MUST_CHECK int k8s_jscan_feed(struct k8s_jscan *s, const char *data, size_t len, struct np_err *err);

/* The body ended: an error when it ended inside a value (a connection cut mid-event)
 * or, in LIST mode, before the top-level object was complete. */
NP_MUST_CHECK int k8s_jscan_finish(struct k8s_jscan *s, struct np_err *err);

/* 1 when no value is partially received (STREAM: between events). */
int k8s_jscan_idle(const struct k8s_jscan *s);

#endif
