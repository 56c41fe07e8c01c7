/* Test harness for pyroscope.write: builds real gzipped pprof profiles with the
 * protobuf writer and pushes them through np_writer, configured from a JSON spec
 * whose "write" object uses the component's argument names. Integration tests drive
 * it against tests/servers/pyroscope.py.
 *
 *   push SPEC.json      prints one JSON object on stdout when done
 *
 * SPEC: {
 *   "write": { "external_labels": {...}, "endpoint": [ {...}, ... ], "tracing": {...} },
 *   "shutdown_flush": "5s",
 *   "profiles": [ { "labels": {"__name__": "process_cpu", "seq": "{n}"},
 *                   "stacks": [ {"frames": ["main", "work"], "count": 3} ],   frames root first
 *                   "pad_bytes": 0 } ],                                       incompressible filler
 *   "rounds": 1, "interval": "0s", "duration": "0s",    push the list `rounds` times (or until duration)
 *   "updates": [ { "after": 3, "write": {...} } ],      np_writer_update after N appends
 *   "wait_idle": "10s",                                 before shutdown, wait for empty queues
 *   "metrics_file": "/path"                             metrics text, rewritten every 200 ms
 * }
 * "{n}" in a label value becomes the 0-based append number, "{ms}" the wall-clock time in ms. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "agent/pprof/proto.h"
#include "lib/duration.h"
#include "lib/metrics.h"
#include "lib/strbuf.h"
#include "agent/write/writer.h"
#include "tests/harness/oauth2_json.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NP_NSEC_PER_SEC + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / NP_NSEC_PER_SEC, .tv_nsec = ns % NP_NSEC_PER_SEC };

	while (ns > 0 && nanosleep(&ts, &ts) != 0)
		;
}

static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;
	size_t n = strlen(field);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return kb;
}

/* ---- JSON -> np_write_config ---- */

static int check_keys(json_t *obj, const char *what, const char *const *allowed, struct np_err *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		int ok = 0;
		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = strcmp(key, allowed[i]) == 0;
		if (!ok)
			return np_errf(err, "%s: unknown argument \"%s\"", what, key);
	}
	return 0;
}

static int get_str(json_t *obj, const char *key, char **out, struct np_err *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return np_errf(err, "%s must be a string", key);
	free(*out);
	*out = strdup(json_string_value(v));
	return *out ? 0 : np_errf(err, "out of memory");
}

static int get_bool(json_t *obj, const char *key, int *out, struct np_err *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return np_errf(err, "%s must be a bool", key);
	*out = json_is_true(v);
	return 0;
}

static int get_dur(json_t *obj, const char *key, int64_t *out, struct np_err *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return np_errf(err, "%s must be a duration string", key);
	if (np_duration_parse(json_string_value(v), out, err))
		return np_err_wrap(err, "%s", key);
	return 0;
}

static int get_headers(json_t *obj, const char *key, int lists, struct np_http_headers *h, struct np_err *err)
{
	json_t *m = json_object_get(obj, key), *v;
	const char *name;

	if (!m)
		return 0;
	if (!json_is_object(m))
		return np_errf(err, "%s must be an object", key);
	json_object_foreach(m, name, v) {
		if (lists) {
			size_t i;
			json_t *item;
			if (!json_is_array(v))
				return np_errf(err, "%s.%s must be a list of strings", key, name);
			json_array_foreach(v, i, item) {
				if (!json_is_string(item) || np_http_headers_add(h, name, json_string_value(item), err))
					return np_errf(err, "%s.%s: bad value", key, name);
			}
		} else if (!json_is_string(v) || np_http_headers_add(h, name, json_string_value(v), err)) {
			return np_errf(err, "%s.%s must be a string", key, name);
		}
	}
	return 0;
}

static int parse_endpoint(json_t *o, struct np_write_endpoint *ep, struct np_err *err)
{
	static const char *const keys[] = {
		"url", "name", "remote_timeout", "debug_info_upload_timeout", "headers", "http_headers",
		"min_backoff_period", "max_backoff_period", "max_backoff_retries", "retry_on_http_429",
		"bearer_token", "bearer_token_file", "basic_auth", "authorization", "oauth2", "tls_config",
		"proxy_url", "no_proxy", "proxy_from_environment", "proxy_connect_header", "enable_http2",
		"follow_redirects", "queue_max_bytes", NULL,
	};
	static const char *const tls_keys[] = { "ca_pem",      "ca_file",		"cert_pem", "cert_file", "key_pem",
						"key_file",    "server_name",		"insecure_skip_verify",
						"min_version", NULL };
	json_t *v;

	if (!json_is_object(o) || check_keys(o, "endpoint", keys, err))
		return -1;
	if (get_str(o, "url", &ep->url, err) || get_str(o, "name", &ep->name, err) ||
	    get_dur(o, "remote_timeout", &ep->remote_timeout_ns, err) ||
	    get_dur(o, "debug_info_upload_timeout", &ep->debug_info_upload_timeout_ns, err) ||
	    get_headers(o, "headers", 0, &ep->headers, err) || get_headers(o, "http_headers", 1, &ep->http.http_headers, err) ||
	    get_dur(o, "min_backoff_period", &ep->min_backoff_ns, err) ||
	    get_dur(o, "max_backoff_period", &ep->max_backoff_ns, err) ||
	    get_bool(o, "retry_on_http_429", &ep->retry_on_http_429, err) ||
	    get_str(o, "bearer_token", &ep->http.bearer_token, err) ||
	    get_str(o, "bearer_token_file", &ep->http.bearer_token_file, err) ||
	    get_str(o, "proxy_url", &ep->http.proxy_url, err) || get_str(o, "no_proxy", &ep->http.no_proxy, err) ||
	    get_bool(o, "proxy_from_environment", &ep->http.proxy_from_environment, err) ||
	    get_headers(o, "proxy_connect_header", 1, &ep->http.proxy_connect_headers, err) ||
	    get_bool(o, "enable_http2", &ep->http.enable_http2, err) || get_bool(o, "follow_redirects", &ep->http.follow_redirects, err))
		return -1;
	if ((v = json_object_get(o, "max_backoff_retries")))
		ep->max_backoff_retries = (int)json_integer_value(v);
	if ((v = json_object_get(o, "queue_max_bytes")))
		ep->queue_max_bytes = (size_t)json_integer_value(v);
	if ((v = json_object_get(o, "basic_auth"))) {
		ep->http.basic_auth.set = 1;
		if (get_str(v, "username", &ep->http.basic_auth.username, err) ||
		    get_str(v, "password", &ep->http.basic_auth.password, err) ||
		    get_str(v, "password_file", &ep->http.basic_auth.password_file, err))
			return -1;
	}
	if ((v = json_object_get(o, "authorization"))) {
		ep->http.authorization.set = 1;
		if (get_str(v, "type", &ep->http.authorization.type, err) ||
		    get_str(v, "credentials", &ep->http.authorization.credentials, err) ||
		    get_str(v, "credentials_file", &ep->http.authorization.credentials_file, err))
			return -1;
	}
	if (oauth2_from_json(json_object_get(o, "oauth2"), &ep->http.oauth2, err))
		return -1;
	if ((v = json_object_get(o, "tls_config"))) {
		if (check_keys(v, "tls_config", tls_keys, err) || get_str(v, "ca_pem", &ep->http.tls.ca_pem, err) ||
		    get_str(v, "ca_file", &ep->http.tls.ca_file, err) || get_str(v, "cert_pem", &ep->http.tls.cert_pem, err) ||
		    get_str(v, "cert_file", &ep->http.tls.cert_file, err) || get_str(v, "key_pem", &ep->http.tls.key_pem, err) ||
		    get_str(v, "key_file", &ep->http.tls.key_file, err) ||
		    get_str(v, "server_name", &ep->http.tls.server_name, err) ||
		    get_bool(v, "insecure_skip_verify", &ep->http.tls.insecure_skip_verify, err) ||
		    get_str(v, "min_version", &ep->http.tls.min_version, err))
			return -1;
	}
	return 0;
}

static int parse_write(json_t *o, struct np_write_config *cfg, struct np_err *err)
{
	static const char *const keys[] = { "external_labels", "endpoint", "tracing", NULL };
	json_t *v, *item;
	const char *name;
	size_t i;

	if (!json_is_object(o) || check_keys(o, "write", keys, err))
		return np_errf(err, "write: expected an object of pyroscope.write arguments");
	if ((v = json_object_get(o, "external_labels"))) {
		json_object_foreach(v, name, item) {
			if (!json_is_string(item) || np_labels_set(&cfg->external_labels, name, json_string_value(item), err))
				return np_errf(err, "external_labels.%s must be a string", name);
		}
	}
	if ((v = json_object_get(o, "tracing")) &&
	    (get_bool(v, "jaeger_propagator", &cfg->tracing.jaeger_propagator, err) ||
	     get_bool(v, "trace_context_propagator", &cfg->tracing.trace_context_propagator, err)))
		return -1;
	json_array_foreach(json_object_get(o, "endpoint"), i, item) {
		struct np_write_endpoint *ep = np_write_config_add_endpoint(cfg, err);
		if (!ep || parse_endpoint(item, ep, err))
			return np_err_wrap(err, "endpoint[%zu]", i);
	}
	return 0;
}

/* ---- pprof builder ---- */

struct strtab {
	char **v;
	size_t n, cap;
};

static int64_t intern(struct strtab *t, const char *s)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i], s) == 0)
			return (int64_t)i;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->v = realloc(t->v, t->cap * sizeof(char *));
		if (!t->v)
			abort(); /* test harness: out of memory is fatal */
	}
	t->v[t->n] = strdup(s);
	return (int64_t)t->n++;
}

static void value_type(struct np_buf *b, uint32_t field, int64_t type, int64_t unit)
{
	size_t m = pb_begin(b, field);

	pb_int64(b, 1, type);
	pb_int64(b, 2, unit);
	pb_end(b, m);
}

/* A cpu/nanoseconds profile like pyroscope.ebpf's (docs/specs/pyroscope-push.md §3.1): one location and one
 * function per distinct frame name, leaf first in each sample, value = count × period. */
static int build_profile(json_t *prof, uint64_t *rng, struct np_buf *out, struct np_err *err)
{
	const int64_t period = 1000000000LL / 97;
	struct strtab st = { 0 };
	struct strtab fn = { 0 }; /* function names in id order (id = index + 1) */
	struct np_buf b = NP_BUF_INIT;
	json_t *stack;
	size_t i;
	int64_t pad_idx = 0;
	size_t pad = (size_t)json_integer_value(json_object_get(prof, "pad_bytes"));

	intern(&st, "");
	value_type(&b, 1, intern(&st, "cpu"), intern(&st, "nanoseconds"));
	json_array_foreach(json_object_get(prof, "stacks"), i, stack) {
		json_t *frames = json_object_get(stack, "frames");
		size_t nf = json_array_size(frames), m;
		uint64_t *locs = calloc(nf ? nf : 1, sizeof(uint64_t));
		int64_t value = json_integer_value(json_object_get(stack, "count")) * period;

		if (!locs || nf == 0) {
			free(locs);
			return np_errf(err, "profile stack %zu: frames must be a non-empty list", i);
		}
		for (size_t k = 0; k < nf; k++) {
			const char *name = json_string_value(json_array_get(frames, nf - 1 - k)); /* leaf first */
			if (!name) {
				free(locs);
				return np_errf(err, "profile stack %zu: frames must be strings", i);
			}
			locs[k] = (uint64_t)intern(&fn, name) + 1;
		}
		m = pb_begin(&b, 2);
		pb_packed_uint64(&b, 1, locs, nf);
		pb_packed_int64(&b, 2, &value, 1);
		pb_end(&b, m);
		free(locs);
	}
	{
		size_t m = pb_begin(&b, 3); /* one mapping for the "binary" */
		pb_uint64(&b, 1, 1);
		pb_uint64(&b, 2, 0x400000);
		pb_uint64(&b, 3, 0x800000);
		pb_int64(&b, 5, intern(&st, "/usr/bin/workload"));
		pb_bool(&b, 7, 1);
		pb_end(&b, m);
	}
	for (size_t k = 0; k < fn.n; k++) {
		size_t m = pb_begin(&b, 4), l;
		pb_uint64(&b, 1, k + 1);
		pb_uint64(&b, 2, 1);
		pb_uint64(&b, 3, 0x401000 + 0x10 * k);
		l = pb_begin(&b, 4);
		pb_uint64(&b, 1, k + 1);
		pb_int64(&b, 2, (int64_t)(10 + k));
		pb_end(&b, l);
		pb_end(&b, m);
	}
	for (size_t k = 0; k < fn.n; k++) {
		size_t m = pb_begin(&b, 5);
		int64_t name = intern(&st, fn.v[k]);
		pb_uint64(&b, 1, k + 1);
		pb_int64(&b, 2, name);
		pb_int64(&b, 3, name);
		pb_int64(&b, 4, intern(&st, "workload.c"));
		pb_end(&b, m);
	}
	if (pad) {
		/* Hex from a PRNG: valid UTF-8 that gzip can only halve. */
		char *filler = malloc(pad + 1);
		if (!filler)
			abort();
		for (size_t k = 0; k < pad; k++) {
			*rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
			filler[k] = "0123456789abcdef"[*rng & 15];
		}
		filler[pad] = '\0';
		pad_idx = intern(&st, filler);
		free(filler);
	}
	for (size_t k = 0; k < st.n; k++)
		pb_string(&b, 6, st.v[k]);
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		pb_int64(&b, 9, (int64_t)ts.tv_sec * NP_NSEC_PER_SEC + ts.tv_nsec);
	}
	pb_int64(&b, 10, 15 * NP_NSEC_PER_SEC);
	value_type(&b, 11, intern(&st, "cpu"), intern(&st, "nanoseconds"));
	pb_int64(&b, 12, period);
	if (pad_idx)
		pb_packed_int64(&b, 13, &pad_idx, 1);
	for (size_t k = 0; k < st.n; k++)
		free(st.v[k]);
	for (size_t k = 0; k < fn.n; k++)
		free(fn.v[k]);
	free(st.v);
	free(fn.v);
	if (b.failed)
		return np_errf(err, "out of memory building a profile");

	/* gzip, as pyroscope.ebpf sends it. */
	{
		z_stream z = { 0 };
		uLong bound;
		if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return np_errf(err, "deflateInit2 failed");
		bound = deflateBound(&z, b.len);
		if (np_buf_reserve(out, bound)) {
			deflateEnd(&z);
			np_buf_free(&b);
			return np_errf(err, "out of memory");
		}
		z.next_in = (Bytef *)b.p;
		z.avail_in = (uInt)b.len;
		z.next_out = (Bytef *)out->p;
		z.avail_out = (uInt)bound;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
			deflateEnd(&z);
			np_buf_free(&b);
			return np_errf(err, "deflate failed");
		}
		out->len = z.total_out;
		deflateEnd(&z);
	}
	np_buf_free(&b);
	return 0;
}

static int profile_labels(json_t *prof, unsigned long n, struct np_labels *ls, struct np_err *err)
{
	const char *name;
	json_t *v;

	json_object_foreach(json_object_get(prof, "labels"), name, v) {
		const char *val = json_string_value(v), *at;
		char buf[4096];
		if (!val)
			return np_errf(err, "profile label %s must be a string", name);
		if ((at = strstr(val, "{n}"))) {
			snprintf(buf, sizeof(buf), "%.*s%lu%s", (int)(at - val), val, n, at + 3);
		} else if ((at = strstr(val, "{ms}"))) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			snprintf(buf, sizeof(buf), "%.*s%lld%s", (int)(at - val), val,
				 (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, at + 4);
		} else {
			snprintf(buf, sizeof(buf), "%s", val);
		}
		if (np_labels_set(ls, name, buf, err))
			return -1;
	}
	return 0;
}

static void write_metrics(struct np_metrics *reg, const char *path)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;
	char tmp[4096];
	FILE *f;

	if (!path || np_metrics_render(reg, &b, &err)) {
		np_buf_free(&b);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (f) {
		fwrite(b.p ? b.p : "", 1, b.len, f);
		fclose(f);
		rename(tmp, path);
	}
	np_buf_free(&b);
}

static int run(json_t *spec, struct np_err *err)
{
	struct np_write_config cfg;
	struct np_metrics *reg = np_metrics_new(err);
	struct np_writer *w = NULL;
	json_t *profiles = json_object_get(spec, "profiles"), *updates = json_object_get(spec, "updates");
	json_t *result = json_object(), *errors = json_array(), *stats = json_array();
	const char *metrics_file = json_string_value(json_object_get(spec, "metrics_file"));
	int64_t interval = 0, duration = 0, wait_idle = 0, start, last_metrics = 0;
	int64_t append_ns_total = 0, append_ns_max = 0; /* time the caller spends in np_writer_append */
	long rounds = json_integer_value(json_object_get(spec, "rounds"));
	unsigned long appended = 0, failed = 0;
	uint64_t rng = 0x2545f4914f6cdd1dULL;
	long baseline_kb;
	int rc = -1;

	np_write_config_init(&cfg);
	if (!reg || !result || !errors || !stats)
		goto out;
	cfg.metrics = reg;
	if (parse_write(json_object_get(spec, "write"), &cfg, err) ||
	    get_dur(spec, "shutdown_flush", &cfg.shutdown_flush_ns, err) || get_dur(spec, "interval", &interval, err) ||
	    get_dur(spec, "duration", &duration, err) || get_dur(spec, "wait_idle", &wait_idle, err))
		goto out;
	if (np_writer_new(&cfg, &w, err))
		goto out;
	if (rounds <= 0)
		rounds = 1;
	baseline_kb = status_kb("VmRSS");
	start = now_ns();
	for (long r = 0; duration ? now_ns() - start < duration : r < rounds; r++) {
		size_t i;
		json_t *prof;
		json_array_foreach(profiles, i, prof) {
			struct np_buf gz = NP_BUF_INIT;
			struct np_labels ls = NP_LABELS_INIT;
			size_t len;
			json_t *u;
			size_t k;
			if (build_profile(prof, &rng, &gz, err) || profile_labels(prof, appended, &ls, err)) {
				np_labels_free(&ls);
				np_buf_free(&gz);
				goto out;
			}
			{
				char *data = np_buf_steal(&gz, &len);
				int64_t t0 = now_ns(), took;
				if (np_writer_append(w, &ls, data, len, err)) {
					failed++;
					json_array_append_new(errors, json_string(err->msg));
				}
				took = now_ns() - t0;
				append_ns_total += took;
				if (took > append_ns_max)
					append_ns_max = took;
			}
			np_labels_free(&ls);
			appended++;
			json_array_foreach(updates, k, u) {
				struct np_write_config ucfg;
				if ((unsigned long)json_integer_value(json_object_get(u, "after")) != appended)
					continue;
				np_write_config_init(&ucfg);
				ucfg.metrics = reg;
				if (parse_write(json_object_get(u, "write"), &ucfg, err) || np_writer_update(w, &ucfg, err)) {
					np_write_config_free(&ucfg);
					np_err_wrap(err, "update after %lu appends", appended);
					goto out;
				}
				np_write_config_free(&ucfg);
			}
		}
		if (metrics_file && now_ns() - last_metrics > 200000000LL) {
			write_metrics(reg, metrics_file);
			last_metrics = now_ns();
		}
		if (interval)
			sleep_ns(interval);
	}
	/* Optionally wait until every endpoint has nothing queued (or the wait ends). */
	for (int64_t until = now_ns() + wait_idle; now_ns() < until;) {
		int busy = 0;
		struct np_write_endpoint_stats st;
		for (size_t i = 0; np_writer_endpoint_stats(w, i, &st) == 0; i++)
			busy |= st.queued_profiles > 0;
		if (!busy)
			break;
		if (metrics_file)
			write_metrics(reg, metrics_file);
		sleep_ns(20000000LL);
	}
	{
		struct np_write_endpoint_stats st;
		for (size_t i = 0; np_writer_endpoint_stats(w, i, &st) == 0; i++) {
			json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "queued_profiles", (json_int_t)st.queued_profiles,
					      "queued_bytes", (json_int_t)st.queued_bytes, "max_queued_bytes",
					      (json_int_t)st.max_queued_bytes, "sent_profiles", (json_int_t)st.sent_profiles,
					      "dropped_profiles", (json_int_t)st.dropped_profiles, "retries",
					      (json_int_t)st.retries);
			json_array_append_new(stats, o);
		}
	}
	json_object_set_new(result, "baseline_rss_kb", json_integer(baseline_kb));
	json_object_set_new(result, "peak_rss_kb", json_integer(status_kb("VmHWM")));
	{
		int64_t t0 = now_ns();
		np_writer_free(w);
		w = NULL;
		json_object_set_new(result, "shutdown_ms", json_integer((now_ns() - t0) / 1000000));
	}
	json_object_set_new(result, "elapsed_ms", json_integer((now_ns() - start) / 1000000));
	rc = 0;
out:
	np_writer_free(w);
	if (result) {
		struct np_buf b = NP_BUF_INIT;
		struct np_err e2;
		if (reg && np_metrics_render(reg, &b, &e2) == 0)
			json_object_set_new(result, "metrics", json_string(b.p ? b.p : ""));
		np_buf_free(&b);
		write_metrics(reg, metrics_file);
		json_object_set_new(result, "appended", json_integer((json_int_t)appended));
		json_object_set_new(result, "append_failures", json_integer((json_int_t)failed));
		json_object_set_new(result, "append_us_max", json_integer(append_ns_max / 1000));
		json_object_set_new(result, "append_us_avg",
				    json_integer(appended ? append_ns_total / 1000 / (int64_t)appended : 0));
		json_object_set_new(result, "append_errors", errors);
		json_object_set_new(result, "endpoints", stats);
		if (rc)
			json_object_set_new(result, "error", json_string(err->msg));
		json_dumpf(result, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(result);
	}
	np_write_config_free(&cfg);
	np_metrics_free(reg);
	return rc;
}

int main(int argc, char **argv)
{
	json_error_t jerr;
	json_t *spec;
	struct np_err err = { { 0 }, 0 };
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SPEC.json\n", argv[0]);
		return 2;
	}
	spec = json_load_file(argv[1], 0, &jerr);
	if (!spec) {
		fprintf(stderr, "%s:%d: %s\n", argv[1], jerr.line, jerr.text);
		return 2;
	}
	rc = run(spec, &err);
	json_decref(spec);
	if (rc)
		fprintf(stderr, "push: %s\n", err.msg);
	return rc ? 1 : 0;
}
