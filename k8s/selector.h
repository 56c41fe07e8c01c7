/* Syntax checks for Kubernetes field and label selectors, so that a typo in
 * `selectors { field = ... }` is a config error instead of an endless 400 loop,
 * with the same acceptance rules as apimachinery's fields.ParseSelector and
 * labels.Parse. */
#ifndef NP_K8S_SELECTOR_H
#define NP_K8S_SELECTOR_H

#include "lib/error.h"

/* "" and NULL are valid (everything). */
NP_MUST_CHECK int k8s_field_selector_check(const char *sel, struct np_err *err);
NP_MUST_CHECK int k8s_label_selector_check(const char *sel, struct np_err *err);

/* When the field selector pins `spec.nodeName` with = or ==, returns a new string with
 * the (unescaped) node name; else NULL. Used to narrow the node watch to this node. */
char *k8s_field_selector_node_name(const char *sel);

/* RFC 1123 label, as namespace names must be. */
int k8s_is_dns_label(const char *s);

#endif
