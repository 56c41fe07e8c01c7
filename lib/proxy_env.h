/* The proxy Go's httpproxy.FromEnvironment picks for a URL (HTTPS_PROXY or HTTP_PROXY
 * by the URL's scheme, upper case first, then lower case; NO_PROXY likewise), for the
 * HTTP clients whose configuration says proxy_from_environment. libcurl alone would
 * read only the lower-case http_proxy. */
#ifndef NP_LIB_PROXY_ENV_H
#define NP_LIB_PROXY_ENV_H

/* *proxy is "" when none applies (for CURLOPT_PROXY: no proxy); *no_proxy is NULL
 * when unset. Both point into the environment. */
void np_proxy_from_env(const char *url, const char **proxy, const char **no_proxy);

#endif
