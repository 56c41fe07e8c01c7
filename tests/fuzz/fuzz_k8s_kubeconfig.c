/* libFuzzer target: kubeconfig parsing (YAML through libyaml, base64 *-data fields). */
#include <stdint.h>
#include <stddef.h>

#include "k8s/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct k8s_kubeconfig kc;
	struct np_err err;

	if (k8s_kubeconfig_parse((const char *)data, size, "/base", &kc, &err) == 0)
		k8s_kubeconfig_free(&kc);
	return 0;
}
