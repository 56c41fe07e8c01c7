/* libFuzzer target for the OAuth 2.0 token response parser (lib/oauth2_wire.c),
 * which reads what a token endpoint on the network sends. Input: the first byte picks
 * the status and the Content-Type header; the rest is the body. Checks: no crash,
 * leak or undefined behaviour; a success has a non-empty token, an error has a message,
 * and an Authorization value built from a token never holds CR or LF. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/oauth2_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const types[] = { "application/json", "application/x-www-form-urlencoded; charset=utf-8",
					     "text/plain", NULL, "text/plain garbage", "Application/JSON ; x=\"y\"",
					     "", "text/html" };
	static const long statuses[] = { 200, 201, 299, 400, 401, 500 };
	struct np_oauth2_token tok;
	struct np_err err = { 0 };
	uint8_t pick = size ? data[0] : 0;
	const char *body = size ? (const char *)data + 1 : "";
	size_t len = size ? size - 1 : 0;

	if (np_oauth2_parse_token_response(statuses[(pick >> 3) % 6], types[pick & 7], body, len, &tok, &err) == 0) {
		char *h;
		if (!tok.access_token || !*tok.access_token || !tok.token_type)
			abort();
		h = np_oauth2_header_value(&tok, &err);
		if (h && strpbrk(h, "\r\n"))
			abort();
		free(h);
		np_oauth2_token_free(&tok);
	} else if (!err.msg[0] || tok.access_token) {
		abort();
	}
	return 0;
}
