/* Internal interfaces of agent/write/, split out so that the unit tests can reach
 * the pure parts (labels, encoding, response classification, backoff) without a
 * network. Nothing outside agent/write/ and its tests includes this. */
#ifndef NP_WRITE_INTERNAL_H
#define NP_WRITE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/labels.h"
#include "lib/strbuf.h"
#include "agent/write/writer.h"

#define NP_WRITE_PUSH_PATH "/push.v1.PusherService/Push"
#define NP_WRITE_USER_AGENT "nodeprof/" NP_VERSION

/* ---- config helpers (config.c, http.c) ---- */

/* Deep copy; on failure dst is still safe to pass to np_write_endpoint_free. */
NP_MUST_CHECK int np_write_endpoint_copy(struct np_write_endpoint *dst, const struct np_write_endpoint *src,
					 struct np_err *err);
void np_write_endpoint_free(struct np_write_endpoint *ep); /* wipes secrets, leaves zeroes */
/* The endpoint's URL with any password redacted (lib/http_client.h), for logs and the
 * `endpoint` metric label. */
void np_write_endpoint_label(const struct np_write_endpoint *ep, char *buf, size_t cap);

/* ---- labels (push_labels.c) ---- */

enum np_write_fix {
	NP_FIX_INVALID_NAME,	/* characters outside [A-Za-z0-9_.] replaced by '_' */
	NP_FIX_NAME_TOO_LONG,	/* label dropped */
	NP_FIX_VALUE_TOO_LONG,	/* value truncated at a UTF-8 boundary */
	NP_FIX_INVALID_UTF8,	/* invalid bytes replaced by U+FFFD */
	NP_FIX_TOO_MANY_LABELS, /* labels dropped, last names first, keeping protected ones */
	NP_FIX__COUNT
};
extern const char *const np_write_fix_reasons[NP_FIX__COUNT]; /* metric `reason` values */

struct np_write_fixes {
	int applied[NP_FIX__COUNT];
	char example[NP_FIX__COUNT][80]; /* a label name that needed the fix, for the log */
};

/* Applies pyroscope.write's label rules (drop "__" labels except __name__ and
 * __delta__, drop empty values, external labels override) and then the server limits,
 * fixing what can be fixed. On failure *reject_reason is a metric `reason` value and
 * err says why. out receives a new sorted set. */
NP_MUST_CHECK int np_write_prepare_labels(const struct np_labels *in, const struct np_labels *external,
					  const struct np_write_limits *limits, struct np_labels *out,
					  struct np_write_fixes *fixes, const char **reject_reason, struct np_err *err);

/* ---- request encoding and responses (request.c) ---- */

/* One PushRequest with one series (labels) and one RawSample (the profile). */
NP_MUST_CHECK int np_write_encode_push(const struct np_labels *labels, const void *profile, size_t len,
				       struct np_buf *out, struct np_err *err);

/* The uncompressed size of a gzip member from its trailer, or len for plain bytes. */
uint64_t np_write_uncompressed_size(const uint8_t *p, size_t len);

/* What one attempt produced. */
struct np_write_result {
	int transport_error;	 /* a CURLcode; 0 when an HTTP response arrived */
	int local_error;	 /* the request could not be built (e.g. unreadable password_file) */
	int aborted;		 /* stopped by the writer (queue overflow or shutdown) */
	long status;		 /* final HTTP status, 0 without a response */
	char content_type[64];
	char code[32];		 /* Connect error code from a JSON error body, "" otherwise */
	char message[512];	 /* the server's message, or the transport error text */
	int64_t retry_after_ns;	 /* from Retry-After, 0 when absent */
};

enum np_write_outcome { NP_WRITE_SENT, NP_WRITE_RETRY, NP_WRITE_FAIL };

/* Fills code and message from a Connect JSON error body; 0 when it was one. */
int np_write_parse_connect_error(const char *body, size_t len, struct np_write_result *r);
/* Alloy's shouldRetry, with the HTTP status deciding when the body is not a Connect
 * error (5xx, 408 and 429 retried; other 4xx not). */
enum np_write_outcome np_write_classify(const struct np_write_result *r, int retry_on_http_429);
/* Retry-After: delta seconds or an HTTP date; 0 when absent or unparsable. */
int64_t np_write_parse_retry_after(const char *value, int64_t now_realtime_ns);

/* ---- one HTTP attempt (http.c) ---- */

struct np_write_http; /* a libcurl multi + easy pair owned by one worker */

NP_MUST_CHECK struct np_write_http *np_write_http_new(struct np_err *err);
void np_write_http_free(struct np_write_http *h);
/* Makes a running (or the next) np_write_http_push return at once with r->aborted
 * set, until np_write_http_clear_abort. Thread-safe. */
void np_write_http_abort(struct np_write_http *h);
void np_write_http_clear_abort(struct np_write_http *h);
/* A transfer still running at deadline_ns (monotonic) ends as aborted. Thread-safe. */
void np_write_http_set_deadline(struct np_write_http *h, int64_t deadline_ns);
/* POSTs body to <url>/push.v1.PusherService/Push with ep's settings, waiting at most
 * timeout_ns. Always fills r. */
void np_write_http_push(struct np_write_http *h, const struct np_write_endpoint *ep, const void *body, size_t len,
			int64_t timeout_ns, struct np_write_result *r);

/* The same for any call: a Connect unary call (connect: its headers, application/proto) or a
 * plain POST (no Content-Type) of body to <url><path>; the response body (its first 64 KiB)
 * is appended to resp_body when given. */
void np_write_http_call(struct np_write_http *h, const struct np_write_endpoint *ep, const char *path, int connect,
			const void *body, size_t len, int64_t timeout_ns, struct np_write_result *r,
			struct np_buf *resp_body);

/* ---- misc ---- */

/* Lets one log line through per interval and counts the ones held back. */
struct np_write_lograte {
	int64_t last_ns;
	uint64_t suppressed;
	int used;
};
/* 1 when the caller should log now; *suppressed then holds how many were held back. */
int np_write_lograte_allow(struct np_write_lograte *r, int64_t now_ns, int64_t interval_ns, uint64_t *suppressed);

#endif
