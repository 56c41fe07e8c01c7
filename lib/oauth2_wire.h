/* The bytes of the OAuth 2.0 client-credentials exchange, without any network: the
 * token request (form body, Basic credentials) and the token response, parsed as
 * golang.org/x/oauth2's internal.RetrieveToken parses it. Used by the token source
 * (oauth2.c) and reachable by the unit tests and the fuzz target. */
#ifndef NP_LIB_OAUTH2_WIRE_H
#define NP_LIB_OAUTH2_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/oauth2.h"
#include "lib/strbuf.h"

#define NP_OAUTH2_MAX_RESPONSE (1u << 20) /* x/oauth2 reads at most 1 MiB */

/* Appends s encoded as Go's url.QueryEscape: unreserved bytes kept, ' ' as '+',
 * everything else %XX. */
void np_oauth2_query_escape(struct np_buf *out, const char *s);

/* The request body: grant_type=client_credentials, scope (scopes joined by one space,
 * when there are any), endpoint_params, and with secret_in_body client_id and
 * client_secret (each only when not empty); sorted by key, as url.Values.Encode.
 * An endpoint parameter may replace grant_type but no other parameter (x/oauth2:
 * "cannot overwrite parameter"). */
NP_MUST_CHECK int np_oauth2_request_body(const struct np_oauth2_config *c, const char *secret, int secret_in_body,
					 struct np_buf *out, struct np_err *err);

/* "Basic base64(QueryEscape(id):QueryEscape(secret))", as x/oauth2 sets it. The caller
 * wipes and frees the result; NULL when out of memory. */
char *np_oauth2_basic_credentials(const char *client_id, const char *secret);

/* A token as the endpoint issued it. */
struct np_oauth2_token {
	char *access_token; /* secret, owned */
	char *token_type;   /* owned; may be "" */
	int64_t expires_in; /* seconds; 0: no expiry given (the token never expires) */
};

void np_oauth2_token_free(struct np_oauth2_token *t); /* wipes; leaves zeroes */

/* Parses one response of the token endpoint. content_type is the raw header (NULL when
 * absent): application/x-www-form-urlencoded and text/plain are parsed as a query
 * string, anything else as JSON. A non-2xx status, or an `error` field in a 2xx
 * answer, is an error with the endpoint's error, error_description and error_uri;
 * a response without access_token is an error too. */
NP_MUST_CHECK int np_oauth2_parse_token_response(long status, const char *content_type, const char *body, size_t len,
						 struct np_oauth2_token *out, struct np_err *err);

/* The Authorization header value for a token: x/oauth2's Token.Type() ("bearer",
 * "mac" and "basic" in any case are canonicalized, empty is "Bearer"), a space, the
 * access token. NULL when out of memory or when either part is not a valid header
 * value (control characters). The caller wipes and frees it. */
char *np_oauth2_header_value(const struct np_oauth2_token *t, struct np_err *err);

#endif
