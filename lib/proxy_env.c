/* Proxy settings from the environment, as Go reads them: see proxy_env.h. */
#include "lib/proxy_env.h"

#include <stdlib.h>
#include <strings.h>

void np_proxy_from_env(const char *url, const char **proxy, const char **no_proxy)
{
	int https = strncasecmp(url, "https:", 6) == 0;
	const char *p = getenv(https ? "HTTPS_PROXY" : "HTTP_PROXY");

	if (!p || !*p)
		p = getenv(https ? "https_proxy" : "http_proxy");
	*proxy = p && *p ? p : "";
	p = getenv("NO_PROXY");
	if (!p || !*p)
		p = getenv("no_proxy");
	*no_proxy = p && *p ? p : NULL;
}
