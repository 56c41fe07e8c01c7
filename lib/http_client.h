/* Alloy's HTTP client settings (prometheus/common's HTTPClientConfig, as Alloy's
 * common/config exposes them) and their one mapping onto a libcurl easy handle, for
 * every client that takes them (pyroscope.write, discovery.docker, discovery.kubernetes,
 * whose kubeconfig and in-cluster settings are expressed in them too):
 *
 *  - authentication, at most one of: bearer_token / bearer_token_file, authorization
 *    (type + credentials / credentials_file), basic_auth (password / password_file),
 *    oauth2 (the caller asks its token source and passes the header value). Secret
 *    files are read for every request through lib/file.h's bounded non-blocking
 *    reader, so rotated secrets apply, and trimmed of surrounding white space as
 *    Prometheus does (the kube-apiserver client reads them on its own schedule and
 *    passes what it read: k8s/conn.h).
 *  - http_headers: one header line per value, sent on every request (an empty value too).
 *  - tls_config: a configured CA is the only trust anchor (Go's RootCAs), client
 *    certificate and key from files or PEM, server_name (lib/server_name.h),
 *    min_version (TLS 1.2 when unset, Go's client default), insecure_skip_verify.
 *  - proxy_url + no_proxy, proxy_from_environment (as Go reads the environment; no
 *    proxy at all otherwise), proxy_connect_header on the CONNECT request only.
 *  - follow_redirects (at most 10, Go's limit), enable_http2 (HTTP/2 over TLS by ALPN,
 *    as Go's transport; HTTP/1.1 otherwise).
 *
 * It is the one place where these settings meet libcurl: the kube-apiserver client
 * (k8s/conn.c), Pyroscope pushes (agent/write/http.c), the Docker Engine client
 * (agent/discovery/docker.c) and the OAuth 2.0 token source (lib/oauth2.c) all go
 * through np_http_client_apply or its parts, through np_http_global_init, and set their
 * own options with NP_CURL_SET.
 *
 * Every string in a config is owned (malloc'd); np_http_client_config_free releases
 * them and wipes the secrets. Header values may be secrets and are never logged.
 * Thread rules: a config is read-only once built and may be shared; a request and its
 * easy handle belong to one thread at a time. */
#ifndef NP_LIB_HTTP_CLIENT_H
#define NP_LIB_HTTP_CLIENT_H

#include <curl/curl.h>
#include <stddef.h>

#include "lib/error.h"

struct np_oauth2_config;

/* Owned (name, value) pairs, in order; a name may repeat. Header lines, and the
 * oauth2 endpoint_params (form parameters) too. */
struct np_http_header {
	char *name;
	char *value; /* may be a secret: wiped when freed */
};

struct np_http_headers {
	struct np_http_header *v; /* owned array */
	size_t n, cap;
};

NP_MUST_CHECK int np_http_headers_add(struct np_http_headers *h, const char *name, const char *value,
				      struct np_err *err);
void np_http_headers_free(struct np_http_headers *h); /* wipes the values, leaves an empty list */
/* Appends copies of src's pairs to dst. */
NP_MUST_CHECK int np_http_headers_copy(struct np_http_headers *dst, const struct np_http_headers *src,
				       struct np_err *err);
/* 1 when both hold the same pairs in the same order. */
int np_http_headers_equal(const struct np_http_headers *a, const struct np_http_headers *b);

struct np_http_tls {
	char *ca_pem, *ca_file;
	char *cert_pem, *cert_file;
	char *key_pem; /* secret */
	char *key_file;
	char *server_name; /* SNI and the name the server certificate must carry */
	char *min_version; /* "TLS10".."TLS13"; NULL: TLS 1.2 */
	int insecure_skip_verify;
};

/* Frees every string (wiping key_pem) and zeroes t. */
void np_http_tls_free(struct np_http_tls *t);
/* A deep copy into dst (which holds nothing yet); on failure dst is still safe to free. */
NP_MUST_CHECK int np_http_tls_copy(struct np_http_tls *dst, const struct np_http_tls *src, struct np_err *err);
/* 1 when both configure the same TLS (an empty string is the same as unset). */
int np_http_tls_equal(const struct np_http_tls *a, const struct np_http_tls *b);

struct np_http_client_config {
	char *bearer_token; /* secret */
	char *bearer_token_file;
	struct {
		int set; /* the block is present */
		char *username;
		char *password; /* secret */
		char *password_file;
	} basic_auth;
	struct {
		int set;
		char *type; /* NULL or blank: "Bearer" */
		char *credentials; /* secret */
		char *credentials_file;
	} authorization;
	struct np_oauth2_config *oauth2; /* owned; NULL without the block */
	struct np_http_headers http_headers;
	struct np_http_tls tls;
	char *proxy_url; /* http://, https:// or socks5://; may carry user:password */
	char *no_proxy;	 /* comma-separated hosts, domains, IPs, CIDRs */
	int proxy_from_environment;
	struct np_http_headers proxy_connect_headers; /* values are secrets */
	int follow_redirects; /* default 1 */
	int enable_http2;     /* default 1 */
};

/* Alloy's defaults: nothing set, follow_redirects and enable_http2 on. */
void np_http_client_config_init(struct np_http_client_config *c);
/* Frees every string (wiping secrets) and re-initialises c. */
void np_http_client_config_free(struct np_http_client_config *c);
/* A deep copy into dst (which holds nothing yet). On failure dst is still safe to free
 * and owns none of src's strings. */
NP_MUST_CHECK int np_http_client_config_copy(struct np_http_client_config *dst, const struct np_http_client_config *src,
					     struct np_err *err);
/* The number of authentication methods configured (valid configs have at most one). */
int np_http_client_auth_count(const struct np_http_client_config *c);

/* Alloy's HTTPClientConfig.Validate rules (one auth method, one of each secret and
 * its file, TLS pairs, proxy combinations, reserved http_headers), plus what the
 * transport needs: a known TLS version, a usable proxy URL, header names and values
 * that fit on a header line. Touches no file. Messages name the argument to fix. */
NP_MUST_CHECK int np_http_client_config_validate(const struct np_http_client_config *c, struct np_err *err);

/* The tls_config rules alone (pairs of PEM and file, certificate and key, a known
 * min_version), and the proxy rules alone (Alloy's ProxyConfig.Validate combinations, a
 * usable proxy URL, proxy_connect_header lines), for settings that embed them (oauth2). */
NP_MUST_CHECK int np_http_check_tls(const struct np_http_tls *t, struct np_err *err);
NP_MUST_CHECK int np_http_check_proxy(const char *proxy_url, const char *no_proxy, int from_environment,
				      const struct np_http_headers *connect_headers, struct np_err *err);

/* ---- the rules, one by one ----
 * Each rule of these settings is written once, in the np_http_*_rules functions (and
 * np_oauth2_config_rules): the checks above stop at the first broken one, and the config
 * loader (agent/config/http_client_schema.c) reports every broken rule that Alloy's
 * loader has at the position of the argument it names. Each returns nonzero when
 * r->broken asked to stop. */
struct np_http_rules {
	/* One broken rule: arg is the argument to fix (NULL: the whole block), flags its
	 * NP_HTTP_RULE_* and msg the message without the block's name. Nonzero stops the
	 * check there. */
	int (*broken)(void *ud, const char *arg, unsigned flags, const char *msg);
	void *ud;
};
enum {
	NP_HTTP_RULE_ALLOY = 1, /* Alloy's Validate has it (else nodeprof's own, for the transport) */
	NP_HTTP_RULE_VALUE = 2, /* arg's value is wrong by itself, not its combination with others */
};
/* Reports one broken rule to r: what r->broken returned. */
int np_http_rule_broken(const struct np_http_rules *r, const char *arg, unsigned flags, const char *fmt, ...)
	NP_PRINTF(4, 5);
/* Rules that stop at the first broken one with its message in err. */
struct np_http_rules np_http_rules_first(struct np_err *err);

/* At most one authentication method (the message names no argument). */
int np_http_auth_rules(const struct np_http_client_config *c, const struct np_http_rules *r);
/* The basic_auth and the authorization block of c, when set. */
int np_http_basic_auth_rules(const struct np_http_client_config *c, const struct np_http_rules *r);
int np_http_authorization_rules(const struct np_http_client_config *c, const struct np_http_rules *r);
int np_http_tls_rules(const struct np_http_tls *t, const struct np_http_rules *r);
int np_http_proxy_rules(const char *proxy_url, const char *no_proxy, int from_environment,
			const struct np_http_headers *connect_headers, const struct np_http_rules *r);
/* The name as prometheus/common's reserved header list spells it when it refuses name in
 * http_headers (any case), else NULL. np_http_check_headers refuses these too. */
const char *np_http_prometheus_reserved(const char *name);

/* Checks header lines of argument `arg`: token names, values without line breaks, none
 * of the names the transport sets (and with prometheus_rules, none that
 * prometheus/common reserves), none of also_reserved (NULL-terminated, may be NULL), and
 * no Authorization when has_auth. */
NP_MUST_CHECK int np_http_check_headers(const struct np_http_headers *h, const char *arg, int prometheus_rules,
					const char *const *also_reserved, int has_auth, struct np_err *err);

/* A URL curl can use for a server (proxy: a proxy): scheme http or https (a proxy also
 * socks5), a host, and for a server no query or fragment. The error names `arg`. */
NP_MUST_CHECK int np_http_check_url(const char *url, const char *arg, int proxy, struct np_err *err);
/* CURL_SSLVERSION_TLSv1_x for "TLS1x", -1 when unknown. */
long np_http_tls_version(const char *name);
/* The authorization type, trimmed, "Bearer" when unset; NULL when it does not fit buf. */
const char *np_http_auth_type(const char *type, char buf[64]);
/* The URL with any password replaced by "xxxxx" (as Go's url.Redacted), for logs. */
void np_http_redact_url(const char *url, char *buf, size_t cap);

/* A secret file as Prometheus reads it (np_read_secret_file: the whole file, at most
 * 64 KiB, non-blocking, surrounding white space trimmed); refused when what remains holds
 * a line break (it goes into a header). The caller wipes and frees it (np_secret_free). */
NP_MUST_CHECK char *np_http_read_secret_file(const char *path, struct np_err *err);

/* ---- libcurl ---- */

/* curl_global_init, once for the whole program (it is not thread-safe, and every client
 * may start first): call before making a handle. The first result is kept. */
NP_MUST_CHECK int np_http_global_init(struct np_err *err);

/* curl_easy_setopt, checked: 0, or -1 with an error naming the option ("libcurl refused
 * CURLOPT_X: ..."). An option curl refuses (a build without a feature, a bad value) must
 * fail the request with its name rather than send it some other way. Used for every
 * option every client sets: `if (NP_CURL_SET(h, CURLOPT_URL, url, err)) return -1;`. */
#define NP_CURL_SET(h, opt, value, err) np_curl_setopt_result(curl_easy_setopt((h), (opt), (value)), #opt, (err))
NP_MUST_CHECK int np_curl_setopt_result(CURLcode rc, const char *option, struct np_err *err);
/* Sets a pointer option back to NULL before what it points to is freed (a list, an
 * error buffer, a body). libcurl accepts NULL for every such option, and a caller that
 * is releasing has nobody to report to, so nothing is returned. */
void np_curl_clear(CURL *h, CURLoption opt);

/* ---- one request ---- */

/* Everything the settings of one request allocate; the easy handle points into it
 * until np_http_request_release. Start from NP_HTTP_REQUEST_INIT. */
struct np_http_request {
	struct curl_slist *headers;	  /* owned, wiped: may carry credentials */
	struct curl_slist *proxy_headers; /* owned, wiped */
	struct curl_slist *connect_to;	  /* owned */
	char *url;			  /* owned: the URL asked, rerouted by server_name */
	char *secret;			  /* owned, wiped: a password read from its file */
};
#define NP_HTTP_REQUEST_INIT { NULL, NULL, NULL, NULL, NULL }

/* Adds a header line of the caller's own (protocol headers, a component's `headers`)
 * before np_http_client_apply, which adds the configured ones after it. An empty value
 * removes a header curl would send on its own ("Expect"); configured http_headers with an
 * empty value are sent empty, as Go sends them. */
NP_MUST_CHECK int np_http_request_header(struct np_http_request *r, const char *name, const char *value,
					 struct np_err *err);

/* Replaces *h with a new easy handle for the next transfer (the old one is cleaned up; it
 * must not be in a multi handle). Use it instead of curl_easy_reset between transfers:
 * libcurl 7.88 (Debian 12) keeps a pointer to the previous response's last header across
 * curl_easy_reset, and a response whose first header line is a folded one (" x") then
 * reads freed memory (found by tests/fuzz/fuzz_docker_http; fixed upstream in curl 8:
 * "headers: clear (possibly) lingering pointer in init"). Connections live in the multi
 * handle, so a transfer driven through one still reuses them. 0, or -1 when out of memory
 * (*h is then NULL). */
NP_MUST_CHECK int np_curl_easy_renew(CURL **h);

/* Sets on c (fresh or curl_easy_reset) everything the settings say for a request to url:
 * URL, http and https only (also on redirects), redirects, HTTP version, TLS, proxy,
 * headers, authentication, user_agent, no signals. oauth2_authorization is the
 * Authorization value from the caller's token source, required when c->oauth2 is set.
 * The caller adds its own options (timeouts, callbacks, method) and performs. Every
 * option is checked; errors name the file that could not be read or the option curl
 * refused. */
NP_MUST_CHECK int np_http_client_apply(CURL *c, const struct np_http_client_config *cfg, const char *url,
				       const char *user_agent, const char *oauth2_authorization,
				       struct np_http_request *r, struct np_err *err);

/* The parts of np_http_client_apply alone, for a client with no authentication or
 * headers of its own settings (an OAuth 2.0 token endpoint), after np_http_client_route
 * and the caller's header lines: the request (r's URL, headers and rerouting, http and
 * https only, at most 10 redirects when followed, no signals), the TLS settings, the
 * proxy settings (url is the request's URL, for proxy_from_environment; the proxy
 * headers are kept in r). */
NP_MUST_CHECK int np_http_apply_request(CURL *c, const struct np_http_request *r, int follow_redirects,
					struct np_err *err);
NP_MUST_CHECK int np_http_apply_tls(CURL *c, const struct np_http_tls *tls, struct np_err *err);
NP_MUST_CHECK int np_http_apply_proxy(CURL *c, const char *url, const char *proxy_url, const char *no_proxy,
				      int from_environment, const struct np_http_headers *connect_headers,
				      struct np_http_request *r, struct np_err *err);
/* The URL to ask for url under tls.server_name: r->url, with r->connect_to and a Host
 * header in r->headers when it is rerouted. */
NP_MUST_CHECK int np_http_client_route(const char *url, const char *server_name, struct np_http_request *r,
				struct np_err *err);

/* Detaches r's lists from c (c stays usable for the next request) and frees them,
 * wiping what may be secret. c may be NULL. */
void np_http_request_release(CURL *c, struct np_http_request *r);

#endif
