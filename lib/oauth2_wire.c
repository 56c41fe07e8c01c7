/* The OAuth 2.0 token request and response bytes: see oauth2_wire.h. JSON goes
 * through jansson; the form encoding and decoding are small enough to write here. */
#include "lib/oauth2_wire.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void np_oauth2_token_free(struct np_oauth2_token *t)
{
	np_secret_free(t->access_token);
	free(t->token_type);
	memset(t, 0, sizeof(*t));
}

/* ---- request ---- */

void np_oauth2_query_escape(struct np_buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~') {
			np_buf_putc(out, (char)*p);
		} else if (*p == ' ') {
			np_buf_putc(out, '+');
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			np_buf_append(out, e, 3);
		}
	}
}

/* One form parameter; the body is built from an array sorted by name. */
struct param {
	const char *name, *value;
};

static int param_cmp(const void *a, const void *b)
{
	return strcmp(((const struct param *)a)->name, ((const struct param *)b)->name);
}

/* Sets name=value, replacing an existing value (url.Values.Set). */
static void param_set(struct param *v, size_t *n, const char *name, const char *value)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(v[i].name, name) == 0) {
			v[i].value = value;
			return;
		}
	v[*n].name = name;
	v[*n].value = value;
	(*n)++;
}

int np_oauth2_request_body(const struct np_oauth2_config *c, const char *secret, int secret_in_body,
			   struct np_buf *out, struct np_err *err)
{
	struct np_buf scope = NP_BUF_INIT;
	size_t n = 0, cap = c->endpoint_params.n + 4;
	struct param *v = calloc(cap, sizeof(*v));
	int rc = -1;

	if (!v)
		return np_errf(err, "out of memory");
	v[n++] = (struct param){ "grant_type", "client_credentials" };
	if (c->n_scopes) {
		for (size_t i = 0; i < c->n_scopes; i++) {
			if (i)
				np_buf_putc(&scope, ' ');
			np_buf_puts(&scope, c->scopes[i]);
		}
		if (scope.failed) {
			np_errf(err, "out of memory");
			goto out;
		}
		v[n++] = (struct param){ "scope", scope.p ? scope.p : "" };
	}
	for (size_t i = 0; i < c->endpoint_params.n; i++) {
		const char *name = c->endpoint_params.v[i].name;
		if (strcmp(name, "grant_type") != 0 && strcmp(name, "scope") == 0 && c->n_scopes) {
			np_errf(err, "cannot overwrite parameter \"%s\" with endpoint_params (it comes from scopes)",
				name);
			goto out;
		}
		param_set(v, &n, name, c->endpoint_params.v[i].value);
	}
	if (secret_in_body) {
		if (c->client_id && *c->client_id)
			param_set(v, &n, "client_id", c->client_id);
		if (secret && *secret)
			param_set(v, &n, "client_secret", secret);
	}
	qsort(v, n, sizeof(*v), param_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i)
			np_buf_putc(out, '&');
		np_oauth2_query_escape(out, v[i].name);
		np_buf_putc(out, '=');
		np_oauth2_query_escape(out, v[i].value ? v[i].value : "");
	}
	rc = out->failed ? np_errf(err, "out of memory") : 0;
out:
	np_buf_free(&scope);
	free(v);
	return rc;
}

char *np_oauth2_basic_credentials(const char *client_id, const char *secret)
{
	struct np_buf plain = NP_BUF_INIT;
	char *out = NULL;

	np_oauth2_query_escape(&plain, client_id ? client_id : "");
	np_buf_putc(&plain, ':');
	np_oauth2_query_escape(&plain, secret ? secret : "");
	if (!plain.failed && plain.len < INT_MAX / 2) {
		size_t cap = 6 + 4 * ((plain.len + 2) / 3) + 1;
		out = malloc(cap);
		if (out) {
			memcpy(out, "Basic ", 6);
			EVP_EncodeBlock((unsigned char *)out + 6, (const unsigned char *)plain.p, (int)plain.len);
		}
	}
	if (plain.p)
		explicit_bzero(plain.p, plain.len);
	np_buf_free(&plain);
	return out;
}

/* ---- response ---- */

static const char bad_token_msg[] =
	"the token endpoint issued a token or token_type with control characters; it cannot be sent in a header";

/* mime.ParseMediaType's media type: the part before ';', trimmed and lower-cased, ""
 * when it is not a token or token/token. */
static void media_type(const char *header, char *out, size_t cap)
{
	static const char tspecials[] = "()<>@,;:\\\"/[]?=";
	const char *s = header ? header : "", *end;
	size_t n = 0, slashes = 0, seg = 0;

	end = s + strcspn(s, ";");
	while (s < end && isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	if (s == end || (size_t)(end - s) >= cap)
		goto invalid;
	for (const char *p = s; p < end; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '/') {
			if (seg == 0 || ++slashes > 1)
				goto invalid;
			seg = 0;
		} else if (ch <= 0x20 || ch >= 0x7f || strchr(tspecials, ch)) {
			goto invalid;
		} else {
			seg++;
		}
		out[n++] = (char)tolower(ch);
	}
	if (seg == 0)
		goto invalid;
	out[n] = '\0';
	return;
invalid:
	out[0] = '\0';
}

/* Fields of the token response (RFC 6749 §5.1 and §5.2). */
struct fields {
	char *access_token, *token_type, *error, *error_description, *error_uri;
	int64_t expires_in;
	int has_nul; /* the form-encoded access_token or token_type held a NUL byte */
};

static void fields_free(struct fields *f)
{
	np_secret_free(f->access_token);
	free(f->token_type);
	free(f->error);
	free(f->error_description);
	free(f->error_uri);
	memset(f, 0, sizeof(*f));
}

static int replace(char **dst, const char *s, size_t len, struct np_err *err)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return np_errf(err, "out of memory");
	memcpy(copy, s, len);
	copy[len] = '\0';
	np_secret_free(*dst);
	*dst = copy;
	return 0;
}

/* Go's QueryUnescape: "%XX" and '+'; an invalid escape is an error. *out_len counts
 * decoded NUL bytes too. */
static int query_unescape(const char *s, size_t len, char **out, size_t *out_len, struct np_err *err)
{
	char *d = malloc(len + 1);
	size_t n = 0;

	if (!d)
		return np_errf(err, "out of memory");
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '%') {
			if (i + 2 >= len || !isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2])) {
				int shown = len - i < 3 ? (int)(len - i) : 3;
				free(d);
				return np_errf(err, "invalid URL escape \"%.*s\"", shown, s + i);
			}
			char hex[3] = { s[i + 1], s[i + 2], 0 };
			d[n++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			d[n++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	d[n] = '\0';
	*out = d;
	*out_len = n;
	return 0;
}

/* strconv.Atoi on a 64-bit platform: optional sign, decimal digits, in range. */
static int go_atoi(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!*s || !(isdigit((unsigned char)*s) || ((*s == '+' || *s == '-') && isdigit((unsigned char)s[1]))))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* url.ParseQuery, keeping the first value of each field (Values.Get). */
static int parse_form(const char *body, size_t len, struct fields *f, struct np_err *err)
{
	const char *p = body, *endp = body + len;
	int rc = 0;
	char *expires = NULL;

	while (p < endp) {
		const char *amp = memchr(p, '&', (size_t)(endp - p));
		const char *seg_end = amp ? amp : endp, *eq;
		char *key = NULL, *value = NULL;
		size_t seg = (size_t)(seg_end - p);

		if (memchr(p, ';', seg)) {
			rc = np_errf(err, "invalid semicolon separator in query");
		} else if (seg) {
			eq = memchr(p, '=', seg);
			size_t klen = eq ? (size_t)(eq - p) : seg;
			size_t key_len, value_len;
			struct np_err e2;
			if (query_unescape(p, klen, &key, &key_len, &e2) ||
			    query_unescape(eq ? eq + 1 : seg_end, eq ? (size_t)(seg_end - eq - 1) : 0, &value, &value_len,
					   &e2)) {
				if (rc == 0)
					rc = np_errf(err, "%s", e2.msg);
			} else {
				char **slot = NULL;
				if (strcmp(key, "access_token") == 0)
					slot = &f->access_token;
				else if (strcmp(key, "token_type") == 0)
					slot = &f->token_type;
				else if (strcmp(key, "error") == 0)
					slot = &f->error;
				else if (strcmp(key, "error_description") == 0)
					slot = &f->error_description;
				else if (strcmp(key, "error_uri") == 0)
					slot = &f->error_uri;
				else if (strcmp(key, "expires_in") == 0)
					slot = &expires;
				if (key_len != strlen(key))
					slot = NULL; /* a NUL in the name: no field of ours */
				if (slot && !*slot) {
					/* A NUL cannot go into a header: the token is refused when sent. */
					if (value_len != strlen(value) && (slot == &f->access_token || slot == &f->token_type))
						f->has_nul = 1;
					*slot = value;
					value = NULL;
				}
			}
			free(key);
			np_secret_free(value);
		}
		p = amp ? amp + 1 : endp;
	}
	if (expires && go_atoi(expires, &f->expires_in))
		f->expires_in = 0; /* x/oauth2 ignores a malformed expires_in here */
	free(expires);
	return rc;
}

/* Go's encoding/json matches names case-insensitively, folding U+017F (long s) to 's'
 * and U+212A (Kelvin sign) to 'k' as well. */
static int json_name_is(const char *key, const char *name)
{
	const unsigned char *k = (const unsigned char *)key;

	for (; *name; name++) {
		if (k[0] == 0xC5 && k[1] == 0xBF && *name == 's') {
			k += 2;
		} else if (k[0] == 0xE2 && k[1] == 0x84 && k[2] == 0xAA && *name == 'k') {
			k += 3;
		} else if (*k && tolower(*k) == *name) {
			k++;
		} else {
			return 0;
		}
	}
	return *k == '\0';
}

/* x/oauth2's expirationTime: a number or a string holding an integer literal, capped at
 * MaxInt32 and stored in an int32. */
static int json_expires_in(json_t *v, int64_t *out)
{
	int64_t i;

	if (json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		i = json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		const char *d = s[0] == '-' ? s + 1 : s;
		/* A JSON number literal that ParseInt accepts: -?(0|[1-9][0-9]*). */
		if (!*d || (d[0] == '0' && d[1]) || strspn(d, "0123456789") != strlen(d) || go_atoi(s, &i))
			return -1;
	} else {
		return -1;
	}
	if (i > INT32_MAX)
		i = INT32_MAX;
	*out = (int32_t)(uint32_t)(uint64_t)i;
	return 0;
}

static int parse_json(const char *body, size_t len, struct fields *f, struct np_err *err)
{
	static const char *const names[] = { "access_token", "token_type", "error", "error_description", "error_uri" };
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_DECODE_ANY, &jerr), *v;
	const char *key;
	int bad_type = 0;

	if (!root)
		return np_errf(err, "%s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
	if (json_is_null(root)) {
		json_decref(root);
		return 0;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		return np_errf(err, "the response is not a JSON object");
	}
	json_object_foreach(root, key, v) {
		char **slots[] = { &f->access_token, &f->token_type, &f->error, &f->error_description, &f->error_uri };
		if (json_name_is(key, "expires_in")) {
			if (json_expires_in(v, &f->expires_in)) {
				json_decref(root);
				return np_errf(err, "expires_in is not an integer number of seconds");
			}
			continue;
		}
		if (json_name_is(key, "refresh_token") && !json_is_string(v) && !json_is_null(v))
			bad_type = 1;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (!json_name_is(key, names[i]) || json_is_null(v))
				continue;
			if (!json_is_string(v)) {
				bad_type = 1;
			} else if (replace(slots[i], json_string_value(v), json_string_length(v), err)) {
				json_decref(root);
				return -1;
			}
		}
	}
	json_decref(root);
	return bad_type ? np_errf(err, "a field of the token response has the wrong JSON type") : 0;
}

/* Appends s as Go's %q would show it (quotes, backslash escapes for the unprintable). */
static void quoted(struct np_buf *b, const char *s)
{
	np_buf_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			np_buf_printf(b, "\\%c", *p);
		else if (*p == '\n')
			np_buf_puts(b, "\\n");
		else if (*p == '\t')
			np_buf_puts(b, "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			np_buf_printf(b, "\\x%02x", *p);
		else
			np_buf_putc(b, (char)*p);
	}
	np_buf_putc(b, '"');
}

/* RetrieveError.Error(): the endpoint's error fields, or the status and the start of the body. */
static int retrieve_error(long status, const struct fields *f, const char *body, size_t len, struct np_err *err)
{
	struct np_buf b = NP_BUF_INIT;

	if (f->error && *f->error) {
		quoted(&b, f->error);
		if (f->error_description && *f->error_description) {
			np_buf_putc(&b, ' ');
			quoted(&b, f->error_description);
		}
		if (f->error_uri && *f->error_uri) {
			np_buf_putc(&b, ' ');
			quoted(&b, f->error_uri);
		}
	} else {
		size_t n = len < 256 ? len : 256;
		np_buf_printf(&b, "cannot fetch token: HTTP %ld; response: ", status);
		for (size_t i = 0; i < n; i++)
			np_buf_putc(&b, (unsigned char)body[i] < 0x20 || body[i] == 0x7f ? ' ' : body[i]);
		if (len > n)
			np_buf_puts(&b, "...");
	}
	np_errf(err, "%s", b.failed ? "cannot fetch token (out of memory describing the error)" : b.p);
	np_buf_free(&b);
	return -1;
}

int np_oauth2_parse_token_response(long status, const char *content_type, const char *body, size_t len,
				   struct np_oauth2_token *out, struct np_err *err)
{
	struct fields f = { 0 };
	char media[128];
	int failure = status < 200 || status > 299, rc;
	struct np_err perr;

	memset(out, 0, sizeof(*out));
	media_type(content_type, media, sizeof(media));
	if (strcmp(media, "application/x-www-form-urlencoded") == 0 || strcmp(media, "text/plain") == 0) {
		rc = parse_form(body, len, &f, &perr);
		if (rc && !failure) {
			fields_free(&f);
			return np_errf(err, "cannot parse response: %s", perr.msg);
		}
	} else {
		rc = parse_json(body, len, &f, &perr);
		if (rc && !failure) {
			fields_free(&f);
			return np_errf(err, "cannot parse json: %s", perr.msg);
		}
	}
	if (rc) { /* unparsable and a failure status: no error fields to show */
		fields_free(&f);
		return retrieve_error(status, &f, body, len, err);
	}
	if (failure || (f.error && *f.error)) {
		retrieve_error(status, &f, body, len, err);
		fields_free(&f);
		return -1;
	}
	if (!f.access_token || !*f.access_token) {
		fields_free(&f);
		return np_errf(err, "server response missing access_token");
	}
	if (f.has_nul) {
		fields_free(&f);
		return np_errf(err, "%s", bad_token_msg);
	}
	out->access_token = f.access_token;
	out->token_type = f.token_type ? f.token_type : strdup("");
	out->expires_in = f.expires_in;
	f.access_token = f.token_type = NULL;
	fields_free(&f);
	if (!out->token_type) {
		np_oauth2_token_free(out);
		return np_errf(err, "out of memory");
	}
	return 0;
}

/* net/http refuses header values with control characters other than tab. */
static int valid_header_value(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return 0;
	return 1;
}

char *np_oauth2_header_value(const struct np_oauth2_token *t, struct np_err *err)
{
	const char *type = t->token_type && *t->token_type ? t->token_type : "Bearer";
	size_t n;
	char *v;

	if (strcasecmp(type, "bearer") == 0)
		type = "Bearer";
	else if (strcasecmp(type, "mac") == 0)
		type = "MAC";
	else if (strcasecmp(type, "basic") == 0)
		type = "Basic";
	if (!valid_header_value(type) || !valid_header_value(t->access_token)) {
		np_errf(err, "%s", bad_token_msg);
		return NULL;
	}
	n = strlen(type) + strlen(t->access_token) + 2;
	v = malloc(n);
	if (!v) {
		np_errf(err, "out of memory");
		return NULL;
	}
	snprintf(v, n, "%s %s", type, t->access_token);
	return v;
}
