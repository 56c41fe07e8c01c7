/* Test and benchmark harness for Kubernetes discovery: runs k8s/ alone from a JSON
 * description of the discovery.kubernetes arguments and prints the targets, as one
 * compact JSON array per line on stdout (the format of `nodeprof tools targets`),
 * every time they change. "synced" goes to stderr once the initial lists are in.
 *
 *   k8s_targets CONFIG.json [--duration SECONDS]
 *
 * CONFIG.json uses the Alloy argument names, blocks as objects, repeatable blocks as
 * arrays: {"role": "pod", "api_server": "https://...", "tls_config": {"ca_file": ...},
 * "selectors": [{"role": "pod", "field": "spec.nodeName=n1"}], ...}. nodeprof's own
 * settings go under "nodeprof" (durations as Go strings): serviceaccount_dir,
 * credentials_reread, debounce_quiet, debounce_max, initial_wait, min_watch_timeout, watch_idle_timeout,
 * request_timeout, connect_timeout, max_object_bytes, page_size.
 * Exit status: 0 after SIGTERM/SIGINT or --duration, 1 on a configuration error
 * ("error: ..." on stderr), 2 on a usage error. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/duration.h"
#include "lib/log.h"
#include "lib/targets_json.h"
#include "k8s/discovery.h"
#include "tests/harness/oauth2_json.h"

static struct k8s_discovery *discovery;
static int printed_synced;

static void on_targets(void *ud, const struct np_targets *ts)
{
	char *s = np_targets_to_json_string(ts, 0);

	(void)ud;
	if (!s) {
		fprintf(stderr, "harness: out of memory printing targets\n");
		return;
	}
	fputs(s, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	free(s);
}

/* --- JSON -> config, strict: unknown keys and wrong types are errors. */

static int get_str(json_t *obj, const char *key, char **dst, struct np_err *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return np_errf(err, "%s: must be a string", key);
	free(*dst);
	*dst = strdup(json_string_value(v));
	return *dst ? 0 : np_errf(err, "out of memory");
}

static int get_bool(json_t *obj, const char *key, int *dst, struct np_err *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return np_errf(err, "%s: must be a bool", key);
	*dst = json_is_true(v);
	return 0;
}

static int get_strs(json_t *arr, const char *key, struct k8s_strs *dst, struct np_err *err)
{
	size_t i;
	json_t *v;

	if (json_is_string(arr)) {
		dst->v = calloc(1, sizeof(char *));
		dst->n = 1;
		dst->v[0] = strdup(json_string_value(arr));
		return 0;
	}
	if (!json_is_array(arr))
		return np_errf(err, "%s: must be a list of strings", key);
	dst->v = calloc(json_array_size(arr) + 1, sizeof(char *));
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v))
			return np_errf(err, "%s: must be a list of strings", key);
		dst->v[dst->n++] = strdup(json_string_value(v));
	}
	return 0;
}

/* A map(list(string)) of header values: one (name, value) pair per value. */
static int get_headers(json_t *obj, const char *key, struct np_http_headers *dst, struct np_err *err)
{
	json_t *m = json_object_get(obj, key), *vals, *v;
	const char *name;
	size_t i;

	if (!m)
		return 0;
	if (!json_is_object(m))
		return np_errf(err, "%s: must be an object of lists of strings", key);
	json_object_foreach(m, name, vals) {
		if (!json_is_array(vals))
			return np_errf(err, "%s: must be an object of lists of strings", key);
		json_array_foreach(vals, i, v) {
			if (!json_is_string(v))
				return np_errf(err, "%s: must be an object of lists of strings", key);
			if (np_http_headers_add(dst, name, json_string_value(v), err))
				return -1;
		}
	}
	return 0;
}

static int check_keys(json_t *obj, const char *where, const char *const *allowed, struct np_err *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return np_errf(err, "%s: must be an object", where);
	json_object_foreach(obj, key, v) {
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			ok |= strcmp(*a, key) == 0;
		if (!ok)
			return np_errf(err, "%s: unknown argument \"%s\"", where, key);
	}
	return 0;
}

static int get_duration(json_t *obj, const char *key, int64_t *dst, struct np_err *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return np_errf(err, "nodeprof.%s: must be a duration string", key);
	return np_duration_parse(json_string_value(v), dst, err);
}

static int parse_config(json_t *j, struct k8s_sd_config *c, struct np_err *err)
{
	static const char *const top[] = { "role", "api_server", "kubeconfig_file", "bearer_token",
					   "bearer_token_file", "basic_auth", "authorization", "oauth2", "tls_config",
					   "proxy_url", "no_proxy", "proxy_from_environment", "proxy_connect_header",
					   "enable_http2", "follow_redirects", "http_headers", "namespaces", "selectors",
					   "attach_metadata", "nodeprof", NULL };
	static const char *const tls[] = { "ca_pem", "ca_file", "cert_pem", "cert_file", "key_pem", "key_file",
					   "server_name", "insecure_skip_verify", "min_version", NULL };
	static const char *const basic[] = { "username", "password", "password_file", NULL };
	static const char *const authz[] = { "type", "credentials", "credentials_file", NULL };
	static const char *const nsk[] = { "names", "own_namespace", NULL };
	static const char *const selk[] = { "role", "label", "field", NULL };
	static const char *const am[] = { "node", "namespace", NULL };
	static const char *const npk[] = { "serviceaccount_dir", "credentials_reread", "debounce_quiet", "debounce_max",
					   "initial_wait", "min_watch_timeout", "watch_idle_timeout", "request_timeout", "connect_timeout",
					   "max_object_bytes", "page_size", NULL };
	struct np_http_client_config *h = &c->http;
	json_t *b;

	if (check_keys(j, "config", top, err))
		return -1;
	if (get_str(j, "role", &c->role, err) || get_str(j, "api_server", &c->api_server, err) ||
	    get_str(j, "kubeconfig_file", &c->kubeconfig_file, err) || get_str(j, "bearer_token", &h->bearer_token, err) ||
	    get_str(j, "bearer_token_file", &h->bearer_token_file, err) || get_str(j, "proxy_url", &h->proxy_url, err) ||
	    get_str(j, "no_proxy", &h->no_proxy, err) ||
	    get_bool(j, "proxy_from_environment", &h->proxy_from_environment, err) ||
	    get_bool(j, "enable_http2", &h->enable_http2, err) || get_bool(j, "follow_redirects", &h->follow_redirects, err) ||
	    get_headers(j, "http_headers", &h->http_headers, err) ||
	    get_headers(j, "proxy_connect_header", &h->proxy_connect_headers, err))
		return -1;
	if ((b = json_object_get(j, "basic_auth"))) {
		h->basic_auth.set = 1;
		if (check_keys(b, "basic_auth", basic, err) || get_str(b, "username", &h->basic_auth.username, err) ||
		    get_str(b, "password", &h->basic_auth.password, err) ||
		    get_str(b, "password_file", &h->basic_auth.password_file, err))
			return -1;
	}
	if ((b = json_object_get(j, "authorization"))) {
		h->authorization.set = 1;
		if (check_keys(b, "authorization", authz, err) || get_str(b, "type", &h->authorization.type, err) ||
		    get_str(b, "credentials", &h->authorization.credentials, err) ||
		    get_str(b, "credentials_file", &h->authorization.credentials_file, err))
			return -1;
	}
	if (oauth2_from_json(json_object_get(j, "oauth2"), &h->oauth2, err))
		return -1;
	if ((b = json_object_get(j, "tls_config"))) {
		struct np_http_tls *t = &h->tls;
		if (check_keys(b, "tls_config", tls, err) || get_str(b, "ca_pem", &t->ca_pem, err) ||
		    get_str(b, "ca_file", &t->ca_file, err) || get_str(b, "cert_pem", &t->cert_pem, err) ||
		    get_str(b, "cert_file", &t->cert_file, err) || get_str(b, "key_pem", &t->key_pem, err) ||
		    get_str(b, "key_file", &t->key_file, err) || get_str(b, "server_name", &t->server_name, err) ||
		    get_bool(b, "insecure_skip_verify", &t->insecure_skip_verify, err) ||
		    get_str(b, "min_version", &t->min_version, err))
			return -1;
	}
	if ((b = json_object_get(j, "namespaces"))) {
		c->namespaces.set = 1;
		if (check_keys(b, "namespaces", nsk, err) ||
		    get_bool(b, "own_namespace", &c->namespaces.own_namespace, err))
			return -1;
		if (json_object_get(b, "names") && get_strs(json_object_get(b, "names"), "names", &c->namespaces.names, err))
			return -1;
	}
	if ((b = json_object_get(j, "selectors"))) {
		size_t i;
		json_t *s;
		if (!json_is_array(b))
			return np_errf(err, "selectors: must be a list of blocks");
		c->selectors = calloc(json_array_size(b) + 1, sizeof(*c->selectors));
		json_array_foreach(b, i, s) {
			struct k8s_selector *sel = &c->selectors[c->n_selectors++];
			if (check_keys(s, "selectors", selk, err) || get_str(s, "role", &sel->role, err) ||
			    get_str(s, "label", &sel->label, err) || get_str(s, "field", &sel->field, err))
				return -1;
		}
	}
	if ((b = json_object_get(j, "attach_metadata"))) {
		if (check_keys(b, "attach_metadata", am, err) || get_bool(b, "node", &c->attach_metadata.node, err) ||
		    get_bool(b, "namespace", &c->attach_metadata.namespace_, err))
			return -1;
	}
	if ((b = json_object_get(j, "nodeprof"))) {
		struct k8s_tunables *t = &c->tunables;
		json_t *v;
		if (check_keys(b, "nodeprof", npk, err) || get_str(b, "serviceaccount_dir", &t->serviceaccount_dir, err) ||
		    get_duration(b, "credentials_reread", &t->credentials_reread_ns, err) ||
		    get_duration(b, "debounce_quiet", &t->debounce_quiet_ns, err) ||
		    get_duration(b, "debounce_max", &t->debounce_max_ns, err) ||
		    get_duration(b, "initial_wait", &t->initial_wait_ns, err) ||
		    get_duration(b, "min_watch_timeout", &t->min_watch_timeout_ns, err) ||
		    get_duration(b, "watch_idle_timeout", &t->watch_idle_timeout_ns, err) ||
		    get_duration(b, "request_timeout", &t->request_timeout_ns, err) ||
		    get_duration(b, "connect_timeout", &t->connect_timeout_ns, err))
			return -1;
		if ((v = json_object_get(b, "max_object_bytes")))
			t->max_object_bytes = json_is_integer(v) ? (size_t)json_integer_value(v) : 0;
		if ((v = json_object_get(b, "page_size")))
			t->page_size = json_is_integer(v) ? (unsigned)json_integer_value(v) : 0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct k8s_sd_config cfg;
	struct np_err err;
	json_error_t jerr;
	json_t *j;
	double duration = 0;
	sigset_t set;
	int sig = 0;
	const char *lvl = getenv("NODEPROF_LOG_LEVEL");
	enum np_level level;

	if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--duration") == 0)) {
		fprintf(stderr, "usage: %s CONFIG.json [--duration SECONDS]\n", argv[0]);
		return 2;
	}
	if (argc == 4)
		duration = atof(argv[3]);
	if (lvl && np_log_parse_level(lvl, &level) == 0)
		np_log_set_level(level);
	j = json_load_file(argv[1], 0, &jerr);
	if (!j) {
		fprintf(stderr, "error: %s:%d: %s\n", argv[1], jerr.line, jerr.text);
		return 2;
	}
	k8s_sd_config_init(&cfg);
	if (parse_config(j, &cfg, &err)) {
		fprintf(stderr, "error: %s\n", err.msg);
		json_decref(j);
		k8s_sd_config_free(&cfg);
		return 2;
	}
	json_decref(j);

	/* Signals are taken synchronously by this thread; the discovery thread inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (k8s_discovery_start(&cfg, on_targets, NULL, &discovery, &err)) {
		fprintf(stderr, "error: %s\n", err.msg);
		k8s_sd_config_free(&cfg);
		return 1;
	}
	k8s_sd_config_free(&cfg); /* the discovery keeps its own copy */

	struct timespec start, tick = { 0, 20 * 1000000 };
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		siginfo_t si;
		if ((sig = sigtimedwait(&set, &si, &tick)) > 0)
			break;
		if (!printed_synced && k8s_discovery_synced(discovery)) {
			printed_synced = 1;
			fprintf(stderr, "synced\n");
			fflush(stderr);
		}
		if (duration > 0) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 >= duration)
				break;
		}
	}
	k8s_discovery_stop(discovery);
	return 0;
}
