/* kubeconfig files (the `kubeconfig_file` argument), read with libyaml as client-go's
 * clientcmd.BuildConfigFromFlags("", path) reads them: the current context's cluster
 * and user. Relative file names are relative to the kubeconfig's directory. Exec and
 * auth-provider plugins and impersonation are reported as not supported. */
#ifndef NP_K8S_KUBECONFIG_H
#define NP_K8S_KUBECONFIG_H

#include <stddef.h>

#include "lib/error.h"

struct k8s_kubeconfig {
	char *server;
	char *ca_file, *ca_pem; /* *-data fields are base64-decoded into the *_pem strings */
	char *cert_file, *cert_pem;
	char *key_file, *key_pem; /* key_pem is a secret */
	char *tls_server_name;
	int insecure;
	char *token; /* secret; wins over token_file, as in client-go */
	char *token_file;
	char *username, *password; /* password is a secret */
	char *proxy_url;
};

NP_MUST_CHECK int k8s_kubeconfig_load(const char *path, struct k8s_kubeconfig *out, struct np_err *err);
/* The same from memory; base_dir resolves relative paths (NULL: leave them as they are). */
NP_MUST_CHECK int k8s_kubeconfig_parse(const char *text, size_t len, const char *base_dir,
				       struct k8s_kubeconfig *out, struct np_err *err);
void k8s_kubeconfig_free(struct k8s_kubeconfig *kc);

#endif
