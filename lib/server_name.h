/* tls_config.server_name for libcurl, which has no separate SNI option: the request URL
 * names the server name (so SNI and the certificate check use it, as Go's
 * tls.Config.ServerName does), CURLOPT_CONNECT_TO sends the connection to the real host
 * and port, and a Host header keeps the real authority. Used by every HTTP client with
 * TLS settings (kube-apiserver, Pyroscope push, OAuth 2.0 token endpoint). */
#ifndef NP_LIB_SERVER_NAME_H
#define NP_LIB_SERVER_NAME_H

#include "lib/error.h"

struct np_server_name_route {
	char *url;	  /* the URL with its host replaced */
	char *connect_to; /* "server_name:port:host:port" */
	char *host;	  /* the original authority: host, and :port when the URL gives one (as Go's req.Host) */
};

/* Fills out for an https URL and a non-empty server name; otherwise leaves out zeroed
 * (nothing to reroute) and returns 0. Errors: an unparsable URL, an invalid name. */
NP_MUST_CHECK int np_server_name_route(const char *url, const char *server_name, struct np_server_name_route *out,
				       struct np_err *err);
void np_server_name_route_free(struct np_server_name_route *r);

#endif
