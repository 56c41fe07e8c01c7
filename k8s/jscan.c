/* Incremental JSON value splitter for watch streams and list bodies: see jscan.h. */
#include "k8s/jscan.h"

#include <stdlib.h>
#include <string.h>

/* Buffers larger than this are released after use so that one big event does not pin memory. */
#define KEEP_BUF_BYTES (256u << 10)

void k8s_jscan_init(struct k8s_jscan *s, enum k8s_jscan_mode mode, size_t max_value, k8s_jscan_fn fn, void *ud)
{
	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->max_value = max_value;
	s->fn = fn;
	s->ud = ud;
}

void k8s_jscan_free(struct k8s_jscan *s)
{
	np_buf_free(&s->buf);
}

void k8s_jscan_reset(struct k8s_jscan *s)
{
	enum k8s_jscan_mode mode = s->mode;
	size_t max_value = s->max_value;
	k8s_jscan_fn fn = s->fn;
	void *ud = s->ud;
	struct np_buf buf = s->buf;

	np_buf_reset(&buf);
	if (buf.cap > KEEP_BUF_BYTES)
		np_buf_free(&buf);
	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->max_value = max_value;
	s->fn = fn;
	s->ud = ud;
	s->buf = buf;
}

int k8s_jscan_idle(const struct k8s_jscan *s)
{
	return !s->capturing && !s->skipping && !s->in_str && (s->mode == K8S_JSCAN_STREAM ? s->depth == 0 : 1);
}

static void release_buf(struct k8s_jscan *s)
{
	np_buf_reset(&s->buf);
	if (s->buf.cap > KEEP_BUF_BYTES)
		np_buf_free(&s->buf);
}

static void start_capture(struct k8s_jscan *s, enum k8s_jscan_part part)
{
	s->capturing = 1;
	s->cap_depth = s->depth;
	s->cap_part = part;
	np_buf_reset(&s->buf);
}

/* The captured value ends at data[i]; seg is where this chunk's part of it began. */
static int end_capture(struct k8s_jscan *s, const char *data, size_t seg, size_t i, struct np_err *err)
{
	size_t n = i + 1 - seg;
	int rc;

	s->capturing = 0;
	if (s->buf.len == 0) {
		/* The whole value is in this chunk: no copy. */
		rc = s->fn(s->ud, s->cap_part, data + seg, n, err);
	} else {
		np_buf_append(&s->buf, data + seg, n);
		if (s->buf.failed) {
			release_buf(s);
			return np_errf(err, "out of memory buffering a %zu-byte value", s->buf.len + n);
		}
		rc = s->fn(s->ud, s->cap_part, s->buf.p, s->buf.len, err);
	}
	release_buf(s);
	return rc;
}

static int oversize(struct k8s_jscan *s, struct np_err *err)
{
	if (s->mode == K8S_JSCAN_STREAM || s->cap_part != K8S_JSCAN_ITEM)
		return np_errf(err, "a value is longer than the %zu-byte limit", s->max_value);
	/* Skip this list item up to its closing brace; the rest of the list is still good. */
	s->capturing = 0;
	s->skipping = 1;
	release_buf(s);
	return 0;
}

static void key_byte(struct k8s_jscan *s, char c)
{
	if (s->key_len + 1 < sizeof(s->key))
		s->key[s->key_len++] = c;
	else
		s->key_overflow = 1;
}

static void key_done(struct k8s_jscan *s)
{
	s->reading_key = 0;
	s->key[s->key_len] = '\0';
	if (s->key_overflow)
		s->key_kind = KEY_OTHER;
	else if (strcmp(s->key, "items") == 0)
		s->key_kind = KEY_ITEMS;
	else if (strcmp(s->key, "metadata") == 0)
		s->key_kind = KEY_METADATA;
	else
		s->key_kind = KEY_OTHER;
}

/* A byte inside a string: escapes, the end of the string, and the key being read. */
static void string_byte(struct k8s_jscan *s, char c)
{
	if (s->esc) {
		s->esc = 0;
		if (s->reading_key)
			key_byte(s, c);
	} else if (c == '\\') {
		s->esc = 1;
		if (s->reading_key)
			s->key_overflow = 1; /* escaped keys are never ours */
	} else if (c == '"') {
		s->in_str = 0;
		if (s->reading_key)
			key_done(s);
	} else if (s->reading_key) {
		key_byte(s, c);
	}
}

static int unexpected(const struct k8s_jscan *s, char c, struct np_err *err)
{
	if (s->mode == K8S_JSCAN_STREAM)
		return np_errf(err, "unexpected '%c' between watch events", c);
	return np_errf(err, "unexpected '%c' %s the list object", c, s->started ? "after" : "before");
}

/* '{' or '[' at data[i]: starts capturing an event, the list's metadata or an item (*seg
 * = i) when this value is one. -1 when it cannot stand here. */
static int open_bracket(struct k8s_jscan *s, char c, size_t i, size_t *seg, struct np_err *err)
{
	if (s->depth == 0) {
		if (c != '{' || (s->mode == K8S_JSCAN_LIST && s->started))
			return unexpected(s, c, err);
		if (s->mode == K8S_JSCAN_STREAM) {
			start_capture(s, K8S_JSCAN_EVENT);
			*seg = i;
		} else {
			s->started = 1;
			s->expect_key = 1;
		}
	} else if (s->mode == K8S_JSCAN_LIST && s->depth == 1) {
		if (s->key_kind == KEY_ITEMS && c == '[') {
			s->in_items = 1;
		} else if (s->key_kind == KEY_METADATA && c == '{') {
			start_capture(s, K8S_JSCAN_METADATA);
			*seg = i;
		}
		s->key_kind = KEY_OTHER;
	} else if (s->mode == K8S_JSCAN_LIST && s->depth == 2 && s->in_items && c == '{' && !s->capturing &&
		   !s->skipping) {
		start_capture(s, K8S_JSCAN_ITEM);
		*seg = i;
	}
	s->depth++;
	return 0;
}

/* '}' or ']' at data[i]: ends a captured value (handing it to fn) or an oversized one. */
static int close_bracket(struct k8s_jscan *s, char c, const char *data, size_t seg, size_t i, struct np_err *err)
{
	if (s->depth == 0)
		return unexpected(s, c, err);
	s->depth--;
	if (s->capturing && s->depth == s->cap_depth) {
		if (end_capture(s, data, seg, i, err))
			return -1;
	} else if (s->skipping && s->depth == 2) {
		s->skipping = 0;
		if (s->fn(s->ud, K8S_JSCAN_OVERSIZE, NULL, 0, err))
			return -1;
	}
	if (s->mode == K8S_JSCAN_LIST) {
		if (s->depth == 1 && c == ']')
			s->in_items = 0;
		if (s->depth == 0)
			s->done = 1;
	}
	return 0;
}

/* Keeps data[seg..len) of a value still being captured when the chunk ends. */
static int keep_tail(struct k8s_jscan *s, const char *data, size_t seg, size_t len, struct np_err *err)
{
	if (!s->capturing || len <= seg)
		return 0;
	if (s->buf.len + (len - seg) > s->max_value)
		return oversize(s, err) ? -1 : 0;
	np_buf_append(&s->buf, data + seg, len - seg);
	if (s->buf.failed) {
		release_buf(s);
		return np_errf(err, "out of memory buffering a value");
	}
	return 0;
}

int k8s_jscan_feed(struct k8s_jscan *s, const char *data, size_t len, struct np_err *err)
{
	size_t seg = 0; /* start of the captured bytes within this chunk */

	for (size_t i = 0; i < len; i++) {
		char c = data[i];

		if (s->capturing && s->buf.len + (i - seg) >= s->max_value) {
			if (oversize(s, err))
				return -1;
		}
		if (s->in_str) {
			string_byte(s, c);
			continue;
		}
		switch (c) {
		case ' ':
		case '\t':
		case '\r':
		case '\n':
			break;
		case '"':
			if (s->depth == 0)
				return unexpected(s, c, err);
			s->in_str = 1;
			if (s->mode == K8S_JSCAN_LIST && s->depth == 1 && s->expect_key) {
				s->expect_key = 0;
				s->reading_key = 1;
				s->key_len = 0;
				s->key_overflow = 0;
			}
			break;
		case '{':
		case '[':
			if (open_bracket(s, c, i, &seg, err))
				return -1;
			break;
		case '}':
		case ']':
			if (close_bracket(s, c, data, seg, i, err))
				return -1;
			break;
		case ',':
			if (s->mode == K8S_JSCAN_LIST && s->depth == 1) {
				s->expect_key = 1;
				s->key_kind = KEY_OTHER;
			}
			break;
		default:
			if (s->depth == 0)
				return unexpected(s, c, err);
			break;
		}
	}
	return keep_tail(s, data, seg, len, err);
}

int k8s_jscan_finish(struct k8s_jscan *s, struct np_err *err)
{
	if (s->mode == K8S_JSCAN_STREAM) {
		if (s->depth || s->in_str)
			return np_errf(err, "the stream ended in the middle of an event (%zu bytes of it received)",
				       s->buf.len);
		return 0;
	}
	if (!s->done)
		return np_errf(err, "the list response ended before its end (truncated)");
	return 0;
}
