/* The sys namespace (sys.env, and the deprecated top-level env) and the constants
 * object (constants.hostname, os, arch, version as Alloy's Go runtime names them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
struct cfg_value *cfg_fn_env(struct cfg_call *c)
{
	const char *name, *val;
	size_t len;
	struct cfg_value *tmp, *r;

	if (cfg_arg_string(c, 0, &name, &len, &tmp))
		return NULL;
	val = memchr(name, '\0', len) ? NULL : getenv(name);
	r = cfg_cstring(val ? val : "");
	cfg_unref(tmp);
	return r ? r : cfg_fn_oom(c);
}


static const char *go_arch(void)
{
	static char machine[65];
	struct utsname u;

	if (uname(&u) != 0)
		return "unknown";
	if (strcmp(u.machine, "x86_64") == 0)
		return "amd64";
	if (strcmp(u.machine, "aarch64") == 0)
		return "arm64";
	if (u.machine[0] == 'i' && strcmp(u.machine + 2, "86") == 0)
		return "386";
	if (strncmp(u.machine, "armv", 4) == 0)
		return "arm";
	snprintf(machine, sizeof(machine), "%s", u.machine);
	return machine;
}

struct cfg_value *cfg_stdlib_constants(void)
{
	char host[256] = "";
	struct cfg_value *obj = cfg_object_new(4);

	if (!obj)
		return NULL;
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	if (cfg_object_put(obj, "hostname", cfg_cstring(host)) || cfg_object_put(obj, "os", cfg_cstring("linux")) ||
	    cfg_object_put(obj, "arch", cfg_cstring(go_arch())) || cfg_object_put(obj, "version", cfg_cstring("v" NP_VERSION))) {
		cfg_unref(obj);
		return NULL;
	}
	cfg_object_done(obj);
	return obj;
}
