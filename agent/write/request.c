/* The wire side of a push: encoding the PushRequest (docs/specs/pyroscope-push.md §1.1),
 * reading Connect error bodies (§1.3), deciding what is retried (§2 shouldRetry), dskit's backoff,
 * and a log rate limiter. Pure functions, unit-tested without a network. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agent/pprof/proto.h"
#include "lib/duration.h"
#include "agent/write/internal.h"

/* *acc += the size of a length-delimited field with a one-byte tag and a body of `body`
 * bytes; -1 when that does not fit a size_t (labels and profiles come from discovery
 * and the host: their sizes are not trusted to be small). */
static int add_field(size_t *acc, size_t body)
{
	size_t f;

	if (__builtin_add_overflow(body, 1 + pb_varint_len(body), &f) || __builtin_add_overflow(*acc, f, acc))
		return -1;
	return 0;
}

/* Lengths are computed up front so that the body is written once, in one allocation,
 * without pb_begin's slide of the (large) profile bytes. */
int np_write_encode_push(const struct np_labels *labels, const void *profile, size_t len, struct np_buf *out,
			 struct np_err *err)
{
	size_t series = 0, sample = 0, total = 0;

	if (add_field(&sample, len)) /* RawSample{raw_profile} */
		goto too_large;
	for (size_t i = 0; i < labels->n; i++) {
		size_t pair = 0;
		if (add_field(&pair, strlen(labels->v[i].name)) || add_field(&pair, strlen(labels->v[i].value)) ||
		    add_field(&series, pair))
			goto too_large;
	}
	if (add_field(&series, sample) || add_field(&total, series))
		goto too_large;
	if (np_buf_reserve(out, total))
		return np_errf(err, "out of memory encoding a %zu-byte push request", total);
	pb_tag(out, 1, PB_LEN); /* PushRequest.series */
	pb_varint(out, series);
	for (size_t i = 0; i < labels->n; i++) {
		const char *n = labels->v[i].name, *v = labels->v[i].value;
		size_t pair = 0;
		(void)add_field(&pair, strlen(n)); /* checked above */
		(void)add_field(&pair, strlen(v));
		pb_tag(out, 1, PB_LEN); /* RawProfileSeries.labels */
		pb_varint(out, pair);
		pb_string(out, 1, n); /* LabelPair.name */
		pb_string(out, 2, v); /* LabelPair.value */
	}
	pb_tag(out, 2, PB_LEN); /* RawProfileSeries.samples */
	pb_varint(out, sample);
	pb_bytes(out, 1, profile, len); /* RawSample.raw_profile */
	if (out->failed)
		return np_errf(err, "out of memory encoding a push request");
	return 0;
too_large:
	return np_errf(err, "push request too large to encode (%zu labels, %zu-byte profile)", labels->n, len);
}

uint64_t np_write_uncompressed_size(const uint8_t *p, size_t len)
{
	/* A gzip member ends with ISIZE, the input size modulo 2^32 (RFC 1952). */
	if (len >= 18 && p[0] == 0x1f && p[1] == 0x8b)
		return (uint64_t)p[len - 4] | (uint64_t)p[len - 3] << 8 | (uint64_t)p[len - 2] << 16 |
		       (uint64_t)p[len - 1] << 24;
	return len;
}

static const char *const connect_codes[] = {
	"canceled",	     "unknown",	  "invalid_argument", "deadline_exceeded", "not_found",
	"already_exists",    "permission_denied", "resource_exhausted", "failed_precondition", "aborted",
	"out_of_range",	     "unimplemented", "internal", "unavailable", "data_loss",
	"unauthenticated",   NULL,
};

int np_write_parse_connect_error(const char *body, size_t len, struct np_write_result *r)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, 0, &jerr);
	const char *code = NULL, *msg = NULL;
	int known = 0;

	if (!root)
		return -1;
	if (json_is_object(root)) {
		code = json_string_value(json_object_get(root, "code"));
		msg = json_string_value(json_object_get(root, "message"));
	}
	for (size_t i = 0; code && connect_codes[i]; i++)
		if (strcmp(code, connect_codes[i]) == 0)
			known = 1;
	if (known) {
		snprintf(r->code, sizeof(r->code), "%s", code);
		snprintf(r->message, sizeof(r->message), "%s", msg ? msg : "");
	}
	json_decref(root);
	return known ? 0 : -1;
}

enum np_write_outcome np_write_classify(const struct np_write_result *r, int retry_on_http_429)
{
	static const char *const retried[] = { "deadline_exceeded", "unknown",	 "internal",
					       "unavailable",	    "data_loss", "aborted", NULL };

	if (r->local_error)
		return NP_WRITE_RETRY; /* e.g. a password file mid-rotation */
	if (r->transport_error) {
		switch (r->transport_error) {
		/* Our own mistakes or a redirect loop: another attempt cannot help. */
		case CURLE_UNSUPPORTED_PROTOCOL:
		case CURLE_URL_MALFORMAT:
		case CURLE_NOT_BUILT_IN:
		case CURLE_BAD_FUNCTION_ARGUMENT:
		case CURLE_OUT_OF_MEMORY:
		case CURLE_TOO_MANY_REDIRECTS:
		case CURLE_UNKNOWN_OPTION:
			return NP_WRITE_FAIL;
		default:
			/* Timeouts, refused connections, resets, TLS failures: connect-go reports
			 * them as unavailable or unknown, both retried by Alloy. */
			return NP_WRITE_RETRY;
		}
	}
	if (r->status >= 200 && r->status < 300)
		return NP_WRITE_SENT;
	if (r->code[0]) {
		if (strcmp(r->code, "resource_exhausted") == 0)
			return retry_on_http_429 ? NP_WRITE_RETRY : NP_WRITE_FAIL;
		for (size_t i = 0; retried[i]; i++)
			if (strcmp(r->code, retried[i]) == 0)
				return NP_WRITE_RETRY;
		return NP_WRITE_FAIL;
	}
	if (r->status == 429)
		return retry_on_http_429 ? NP_WRITE_RETRY : NP_WRITE_FAIL;
	if (r->status == 408 || r->status >= 500)
		return NP_WRITE_RETRY;
	return NP_WRITE_FAIL;
}

/* The server's value is untrusted: an HTTP date can be any year, so the difference is
 * taken in seconds, bounded, and only then scaled to nanoseconds. */
int64_t np_write_parse_retry_after(const char *value, int64_t now_realtime_ns)
{
	const int64_t max_s = 86400;
	char *end;
	long long secs;
	time_t when;
	int64_t delta_ns;

	while (*value == ' ' || *value == '\t')
		value++;
	if (*value >= '0' && *value <= '9') {
		secs = strtoll(value, &end, 10); /* saturates on overflow, refused below */
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		if (*end || secs < 0 || secs > max_s)
			return 0;
		return secs * NP_NSEC_PER_SEC;
	}
	when = curl_getdate(value, NULL);
	if (when <= 0 || (int64_t)when - now_realtime_ns / NP_NSEC_PER_SEC > max_s)
		return 0;
	delta_ns = (int64_t)when * NP_NSEC_PER_SEC - now_realtime_ns; /* |when| <= now + 1 day: no overflow */
	return delta_ns > 0 ? delta_ns : 0;
}

/* ---- misc ---- */

int np_write_lograte_allow(struct np_write_lograte *r, int64_t now_ns, int64_t interval_ns, uint64_t *suppressed)
{
	if (r->used && now_ns - r->last_ns < interval_ns) {
		r->suppressed++;
		return 0;
	}
	*suppressed = r->suppressed;
	r->suppressed = 0;
	r->last_ns = now_ns;
	r->used = 1;
	return 1;
}
