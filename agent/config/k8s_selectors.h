/* Load-time syntax rules shared by component validations (k8s_selectors.c): Kubernetes field
 * and label selectors, and the label names Pyroscope accepts. */
#ifndef NP_CONFIG_K8S_SELECTORS_H
#define NP_CONFIG_K8S_SELECTORS_H

/* Kubernetes selector syntax (k8s.io/apimachinery fields.ParseSelector and
 * labels.Parse). Return NULL when valid, else a static description of the problem. */
const char *cfg_k8s_field_selector_error(const char *s);
const char *cfg_k8s_label_selector_error(const char *s);

/* Label names as Pyroscope accepts them: [a-zA-Z_][a-zA-Z0-9_.]* */
int cfg_valid_label_name(const char *s);

#endif
