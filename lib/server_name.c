/* Routing a request by TLS server name with libcurl: see server_name.h. */
#include "lib/server_name.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/strbuf.h"

void np_server_name_route_free(struct np_server_name_route *r)
{
	free(r->url);
	free(r->connect_to);
	free(r->host);
	memset(r, 0, sizeof(*r));
}

int np_server_name_route(const char *url, const char *server_name, struct np_server_name_route *out,
			 struct np_err *err)
{
	CURLU *u;
	char *host = NULL, *port = NULL, *given_port = NULL, *routed = NULL;
	struct np_buf ct = NP_BUF_INIT, authority = NP_BUF_INIT;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!server_name || !*server_name || strncasecmp(url, "https://", 8) != 0)
		return 0;
	if (!(u = curl_url()))
		return np_errf(err, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK || curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		np_errf(err, "cannot parse the URL");
		goto out;
	}
	np_buf_printf(&ct, "%s:%s:%s:%s", server_name, port, host, port);
	if (curl_url_get(u, CURLUPART_PORT, &given_port, 0) == CURLUE_OK)
		np_buf_printf(&authority, "%s:%s", host, given_port);
	else
		np_buf_puts(&authority, host);
	if (curl_url_set(u, CURLUPART_HOST, server_name, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &routed, 0) != CURLUE_OK) {
		np_errf(err, "tls_config server_name \"%s\" is not a valid host name", server_name);
		goto out;
	}
	if (ct.failed || authority.failed) {
		np_errf(err, "out of memory");
		goto out;
	}
	out->url = strdup(routed);
	out->connect_to = np_buf_steal(&ct, NULL);
	out->host = np_buf_steal(&authority, NULL);
	if (!out->url || !out->connect_to || !out->host) {
		np_server_name_route_free(out);
		np_errf(err, "out of memory");
		goto out;
	}
	rc = 0;
out:
	np_buf_free(&ct);
	np_buf_free(&authority);
	curl_free(host);
	curl_free(port);
	curl_free(given_port);
	curl_free(routed);
	curl_url_cleanup(u);
	return rc;
}
