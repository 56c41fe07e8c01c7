/* kube-apiserver Status objects (metav1.Status): the body of every non-2xx answer and
 * the object of a watch ERROR event. Both come from the network, so every field is
 * optional, bounded and checked; the reflector decides what to do from the result
 * (docs/specs/kubernetes.md §3: 410 Expired relists, 429 honours Retry-After). */
#ifndef NP_K8S_STATUS_H
#define NP_K8S_STATUS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct k8s_status {
	long code;             /* "code" when an integer in 100..599, else 0 */
	char reason[48];       /* "reason" (e.g. "Expired", "TooManyRequests"), cut to fit; "" if absent */
	char message[320];     /* "message", control characters as spaces, cut to fit; "" if absent */
	int retry_after_s;     /* details.retryAfterSeconds within 0..3600, else 0 */
};

/* Reads obj (a JSON object) as a Status; 0 when it has a code, reason, message or
 * retryAfterSeconds, -1 otherwise. *out is always filled (zeroes for what is missing). */
int k8s_status_from_json(const json_t *obj, struct k8s_status *out);

/* The same from a response body (at most len bytes, not NUL-terminated). */
int k8s_status_parse(const char *body, size_t len, struct k8s_status *out);

/* client-go's isExpiredError: reason Expired or Gone, or code 410 with no known reason.
 * The answer to such an error is a relist from scratch. */
int k8s_status_expired(const struct k8s_status *st);

#endif
