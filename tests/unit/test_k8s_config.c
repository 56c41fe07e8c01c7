/* Unit tests for k8s/ configuration: validation messages, selector syntax, kubeconfig
 * parsing, connection resolution (server name, in-cluster), and client-go's backoff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "k8s/conn.h"
#include "k8s/discovery.h"
#include "k8s/kubeconfig.h"
#include "k8s/reflector.h"
#include "k8s/selector.h"

static void set(char **dst, const char *v)
{
	free(*dst);
	*dst = v ? strdup(v) : NULL;
}

static void expect_invalid(struct k8s_sd_config *c, const char *msg)
{
	struct np_err err;

	if (k8s_sd_config_validate(c, &err) == 0)
		fail_msg("config accepted, want error containing \"%s\"", msg);
	if (!strstr(err.msg, msg))
		fail_msg("error \"%s\" does not contain \"%s\"", err.msg, msg);
}

static void validation(void **state)
{
	struct k8s_sd_config c;
	struct np_err err;

	k8s_sd_config_init(&c);
	expect_invalid(&c, "role is required");
	set(&c.role, "pods");
	expect_invalid(&c, "unknown Kubernetes SD role \"pods\"");
	static const char *const roles[] = { "endpoints", "endpointslice", "service", "ingress", "node", "pod" };
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		set(&c.role, roles[i]);
		assert_int_equal(k8s_sd_config_validate(&c, &err), 0); /* in-cluster, all namespaces */
	}
	/* In-cluster, Alloy ignores HTTP client settings instead of refusing them. */
	set(&c.http.bearer_token, "x");
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	set(&c.api_server, "https://10.0.0.1:6443");
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	set(&c.http.bearer_token_file, "/t");
	expect_invalid(&c, "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file");
	set(&c.http.bearer_token_file, NULL);
	c.http.basic_auth.set = 1;
	expect_invalid(&c, "at most one of");
	set(&c.http.bearer_token, NULL);
	set(&c.http.basic_auth.password, "p");
	set(&c.http.basic_auth.password_file, "/p");
	expect_invalid(&c, "at most one of basic_auth password & password_file");
	c.http.basic_auth.set = 0;
	set(&c.http.tls.ca_pem, "x");
	set(&c.http.tls.ca_file, "/x");
	expect_invalid(&c, "at most one of ca_pem and ca_file");
	set(&c.http.tls.ca_pem, NULL);
	set(&c.http.tls.key_file, "/k");
	expect_invalid(&c, "exactly one of cert_pem or cert_file must be configured when a client key");
	set(&c.http.tls.cert_file, "/c");
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	/* Alloy loads these (the kubeconfig wins; the rest is ignored, with warnings from the config layer). */
	set(&c.kubeconfig_file, "/kc");
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	set(&c.api_server, NULL);
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	k8s_sd_config_free(&c);

	k8s_sd_config_init(&c);
	set(&c.role, "pod");
	set(&c.kubeconfig_file, "/kc");
	c.http.enable_http2 = 0; /* not the default: a custom HTTP client configuration, ignored as in Alloy */
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	c.http.enable_http2 = 1;
	c.namespaces.own_namespace = 1;
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	c.namespaces.own_namespace = 0;
	c.selectors = calloc(2, sizeof(*c.selectors));
	c.n_selectors = 2;
	set(&c.selectors[0].role, "node");
	set(&c.selectors[0].label, "kubernetes.io/os=linux");
	set(&c.selectors[1].role, "pod");
	set(&c.selectors[1].field, "spec.nodeName=n1,status.phase!=Failed");
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	/* A duplicate (the last counts) and a role the pod role does not read load, as in Alloy. */
	set(&c.selectors[1].role, "node");
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	set(&c.selectors[1].role, "endpoints");
	assert_int_equal(k8s_sd_config_validate(&c, &err), 0);
	set(&c.selectors[1].role, "endpoint");
	expect_invalid(&c, "selectors: unknown role \"endpoint\"");
	set(&c.selectors[1].role, "pod");
	set(&c.selectors[1].field, "spec.nodeName");
	expect_invalid(&c, "selectors (role \"pod\")");
	k8s_sd_config_free(&c);
}

static void copy_is_deep(void **state)
{
	struct k8s_sd_config c, d;
	struct np_err err;

	k8s_sd_config_init(&c);
	set(&c.role, "pod");
	set(&c.api_server, "https://h");
	assert_int_equal(np_http_headers_add(&c.http.http_headers, "X-A", "v", &err), 0);
	assert_int_equal(k8s_sd_config_copy(&d, &c, &err), 0);
	k8s_sd_config_free(&c);
	assert_string_equal(d.api_server, "https://h");
	assert_string_equal(d.http.http_headers.v[0].value, "v");
	assert_int_equal(d.tunables.page_size, 500);
	assert_int_equal(k8s_sd_config_validate(&d, &err), 0);
	k8s_sd_config_free(&d);
}

static void selectors(void **state)
{
	static const char *const good_fields[] = { "", "spec.nodeName=n1", "a==b", "a!=b", "a=",
						   "metadata.name=x\\,y\\=z\\\\", "a=b,c!=d" };
	static const char *const bad_fields[] = { "abc", "a=b=c", "a=b\\q", "a=b\\", "a=b,,c=d" };
	static const char *const good_labels[] = { "", "app", "!app", "app=x", "app==x", "app!=x",
						   "app in (a, b)", "tier notin (x)", "example.com/app=x,env",
						   "a=", "n>3", " app = x , b " };
	static const char *const bad_labels[] = { "app in (a", "app in ()", "-app=x", "app=x y", "a=b=c", "=x",
						  "app=-x", "n>x", "!app=x", "a,", "app in a" };
	struct np_err err;

	for (size_t i = 0; i < sizeof(good_fields) / sizeof(*good_fields); i++)
		if (k8s_field_selector_check(good_fields[i], &err))
			fail_msg("field selector \"%s\" rejected: %s", good_fields[i], err.msg);
	for (size_t i = 0; i < sizeof(bad_fields) / sizeof(*bad_fields); i++)
		if (!k8s_field_selector_check(bad_fields[i], &err))
			fail_msg("field selector \"%s\" accepted", bad_fields[i]);
	for (size_t i = 0; i < sizeof(good_labels) / sizeof(*good_labels); i++)
		if (k8s_label_selector_check(good_labels[i], &err))
			fail_msg("label selector \"%s\" rejected: %s", good_labels[i], err.msg);
	for (size_t i = 0; i < sizeof(bad_labels) / sizeof(*bad_labels); i++)
		if (!k8s_label_selector_check(bad_labels[i], &err))
			fail_msg("label selector \"%s\" accepted", bad_labels[i]);

	char *n = k8s_field_selector_node_name("status.phase=Running,spec.nodeName==node\\,1");
	assert_string_equal(n, "node,1");
	free(n);
	assert_null(k8s_field_selector_node_name("spec.nodeName!=x"));
	assert_null(k8s_field_selector_node_name("spec.nodeName="));
	assert_null(k8s_field_selector_node_name(NULL));
	assert_true(k8s_is_dns_label("kube-system"));
	assert_false(k8s_is_dns_label("Kube"));
	assert_false(k8s_is_dns_label("a.b"));
	assert_false(k8s_is_dns_label("-a"));
	assert_false(k8s_is_dns_label(""));
}

static const char *const kubeconfig_yaml =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: dev\n"
	"clusters:\n"
	"- name: prod\n"
	"  cluster: {server: 'https://prod:6443'}\n"
	"- name: dev-cluster\n"
	"  cluster:\n"
	"    server: https://127.0.0.1:6443\n"
	"    certificate-authority: certs/ca.crt\n"
	"    tls-server-name: kubernetes.default\n"
	"contexts:\n"
	"- name: dev\n"
	"  context:\n"
	"    cluster: dev-cluster\n"
	"    user: dev-user\n"
	"users:\n"
	"- name: dev-user\n"
	"  user:\n"
	"    token: abc\n"
	"    tokenFile: /ignored/because/token/wins\n"
	"    client-certificate-data: aGVsbG8=\n"
	"    client-key-data: d29y\n"
	"      bGQ=\n";

static void kubeconfig(void **state)
{
	struct k8s_kubeconfig kc;
	struct np_err err;

	assert_int_equal(k8s_kubeconfig_parse(kubeconfig_yaml, strlen(kubeconfig_yaml), "/etc/kube", &kc, &err), 0);
	assert_string_equal(kc.server, "https://127.0.0.1:6443");
	assert_string_equal(kc.ca_file, "/etc/kube/certs/ca.crt");
	assert_string_equal(kc.tls_server_name, "kubernetes.default");
	assert_string_equal(kc.token, "abc");
	assert_string_equal(kc.cert_pem, "hello");
	assert_string_equal(kc.key_pem, "world");
	assert_false(kc.insecure);
	k8s_kubeconfig_free(&kc);

	static const struct {
		const char *yaml, *msg;
	} bad[] = {
		{ "kind: Config\n", "no current-context" },
		{ "current-context: x\n", "context \"x\" (current-context) is not defined" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n", "cluster \"c\" is not defined" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://s'}}]\n",
		  "user \"u\" is not defined" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://s'}}]\nusers: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
		  "\"auth-provider\" is not supported yet" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://s', insecure-skip-tls-verify: true, "
		  "certificate-authority-data: eA==}}]\n",
		  "insecure flag is not allowed" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {}}]\n",
		  "has no server" },
		{ "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: s, certificate-authority-data: '!!!'}}]\n",
		  "not valid base64" },
		{ "a: [b\n", "line" },
		{ "- just\n- a list\n", "not a kubeconfig" },
		{ "", "not a kubeconfig" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (k8s_kubeconfig_parse(bad[i].yaml, strlen(bad[i].yaml), NULL, &kc, &err) == 0)
			fail_msg("kubeconfig %zu accepted", i);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("kubeconfig %zu: \"%s\" does not contain \"%s\"", i, err.msg, bad[i].msg);
	}
}

static int has_line(const struct curl_slist *l, const char *line)
{
	for (; l; l = l->next)
		if (strcmp(l->data, line) == 0)
			return 1;
	return 0;
}

static void conn_server_name_and_in_cluster(void **state)
{
	struct k8s_sd_config c;
	struct k8s_conn conn;
	struct np_http_request req = NP_HTTP_REQUEST_INIT;
	struct np_err err;
	CURL *h;
	char dir[] = "/tmp/nodeprof-k8s-unit-XXXXXX";
	char path[128];
	FILE *f;

	k8s_sd_config_init(&c);
	set(&c.role, "pod");
	set(&c.api_server, "https://10.0.0.1:6443/prefix/");
	set(&c.http.tls.server_name, "kubernetes.default.svc");
	set(&c.http.bearer_token, "tok");
	assert_int_equal(np_http_global_init(&err), 0);
	assert_int_equal(k8s_conn_resolve(&c, &conn, &err), 0);
	assert_string_equal(conn.base_url, "https://10.0.0.1:6443/prefix");
	assert_null(conn.http.proxy_url); /* no proxy unless asked, as Prometheus */
	assert_int_equal(conn.http.proxy_from_environment, 0);
	/* The request goes to the server name, connects to the address, keeps its Host. */
	h = curl_easy_init();
	assert_non_null(h);
	assert_int_equal(k8s_conn_apply(&conn, h, "/api/v1/pods", &req, &err), 0);
	assert_string_equal(req.url, "https://kubernetes.default.svc:6443/prefix/api/v1/pods");
	assert_string_equal(req.connect_to->data, "kubernetes.default.svc:6443:10.0.0.1:6443");
	assert_true(has_line(req.headers, "Host: 10.0.0.1:6443"));
	assert_true(has_line(req.headers, "Authorization: Bearer tok"));
	assert_true(has_line(req.headers, "Accept: application/json"));
	np_http_request_release(h, &req);
	curl_easy_cleanup(h);
	k8s_conn_free(&conn);
	k8s_sd_config_free(&c);

	/* In-cluster: env + service account files; the token file is re-read when it changes. */
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	f = fopen(path, "w");
	fputs(" t1\n", f);
	fclose(f);
	k8s_sd_config_init(&c);
	set(&c.role, "pod");
	set(&c.tunables.serviceaccount_dir, dir);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(k8s_conn_resolve(&c, &conn, &err), 0);
	assert_string_equal(conn.base_url, "https://[fd00::1]:443");
	assert_string_equal(conn.credentials, "t1");
	assert_null(conn.http.tls.ca_file);		      /* no ca.crt: system roots, as client-go */
	assert_int_equal(conn.http.proxy_from_environment, 1); /* client-go honours the proxy environment */
	assert_int_equal(k8s_conn_refresh(&conn, 10, 60, 0, &err), 0); /* not due */
	f = fopen(path, "w");
	fputs("t2", f);
	fclose(f);
	assert_int_equal(k8s_conn_refresh(&conn, 100LL * 1000000000, 60LL * 1000000000, 0, &err), 1);
	assert_string_equal(conn.credentials, "t2");
	assert_int_equal(k8s_conn_refresh(&conn, 0, 60, 1, &err), 0); /* forced, unchanged */
	unlink(path);
	assert_int_equal(k8s_conn_refresh(&conn, 0, 60, 1, &err), -1);
	assert_string_equal(conn.credentials, "t2"); /* kept */
	k8s_conn_free(&conn);
	c.namespaces.own_namespace = 1;
	assert_int_equal(k8s_conn_resolve(&c, &conn, &err), -1); /* no token file now */
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(k8s_conn_resolve(&c, &conn, &err), -1);
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
	k8s_sd_config_free(&c);
	rmdir(dir);
}

/* proxy_from_environment reads the environment as Go does, through lib/http_client.h:
 * HTTP_PROXY (upper case) for an http:// apiserver, which libcurl alone ignores (it
 * reads only http_proxy for http://). The proxy here accepts and never answers: the
 * request line it received tells where the client sent it. */
static void conn_proxy_from_environment_as_go(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct np_http_request req = NP_HTTP_REQUEST_INIT;
	struct k8s_sd_config c;
	struct k8s_conn conn;
	struct np_err err;
	char proxy[64], got[512] = "";
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;
	struct pollfd p;
	size_t n = 0;
	CURL *h;

	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(ls, 4), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", ntohs(a.sin_port));
	unsetenv("http_proxy");
	unsetenv("NO_PROXY");
	unsetenv("no_proxy");
	setenv("HTTP_PROXY", proxy, 1);

	k8s_sd_config_init(&c);
	set(&c.role, "pod");
	set(&c.api_server, "http://apiserver.invalid:8080");
	c.http.proxy_from_environment = 1;
	assert_int_equal(k8s_conn_resolve(&c, &conn, &err), 0);
	h = curl_easy_init();
	assert_non_null(h);
	assert_int_equal(k8s_conn_apply(&conn, h, "/api/v1/pods", &req, &err), 0);
	assert_int_equal(NP_CURL_SET(h, CURLOPT_TIMEOUT_MS, 500L, &err), 0);
	assert_int_not_equal(curl_easy_perform(h), CURLE_OK); /* the proxy never answers */

	p.fd = ls;
	p.events = POLLIN;
	assert_int_equal(poll(&p, 1, 0), 1); /* connected, or the request went elsewhere */
	fd = accept(ls, NULL, NULL);
	assert_true(fd >= 0);
	p.fd = fd;
	while (n < sizeof(got) - 1 && !strstr(got, "\r\n") && poll(&p, 1, 5000) == 1) {
		ssize_t r = read(fd, got + n, sizeof(got) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		got[n] = '\0';
	}
	assert_non_null(strstr(got, "GET http://apiserver.invalid:8080/api/v1/pods HTTP/1.1\r\n"));
	close(fd);
	close(ls);
	unsetenv("HTTP_PROXY");
	np_http_request_release(h, &req);
	curl_easy_cleanup(h);
	k8s_conn_free(&conn);
	k8s_sd_config_free(&c);
}

/* client-go's shape with a 0.5 s floor and a 1 s cap, jittered by [1, 1.5): never a
 * tight loop, and never more than 1.5 s between two attempts (k8s/reflector.h). */
static void backoff_like_client_go(void **state)
{
	(void)state;
	struct np_backoff b;
	uint64_t rng = 12345;
	int64_t now = 1000LL * 1000000000, last = 0;
	const int64_t base[] = { 500, 1000, 1000, 1000, 1000, 1000, 1000, 1000 };

	np_backoff_init(&b, K8S_BACKOFF_MIN_NS, K8S_BACKOFF_MAX_NS, K8S_BACKOFF_JITTER, 0, 12345);
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
		int64_t d = k8s_backoff_delay(&b, &last, now) / 1000000;
		if (d < base[i] || d >= base[i] * 3 / 2)
			fail_msg("step %zu: %lld ms not in [%lld, %lld)", i, (long long)d, (long long)base[i],
				 (long long)(base[i] * 3 / 2));
		now += 1000000000LL;
	}
	assert_true(np_backoff_ongoing(&b)); /* never gives up */
	/* Quiet for more than two minutes: back to the start. */
	now += 121LL * 1000000000;
	assert_true(k8s_backoff_delay(&b, &last, now) < 750LL * 1000000);
	/* The jitter varies. */
	int64_t first = k8s_backoff_delay(&b, &last, now + 200LL * 1000000000);
	int64_t second = k8s_backoff_delay(&b, &last, now + 400LL * 1000000000);
	assert_true(first != second);
	double sum = 0;
	for (int i = 0; i < 10000; i++)
		sum += np_rand_unit(&rng);
	assert_true(sum / 10000 > 0.45 && sum / 10000 < 0.55);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(validation),
		cmocka_unit_test(copy_is_deep),
		cmocka_unit_test(selectors),
		cmocka_unit_test(kubeconfig),
		cmocka_unit_test(conn_server_name_and_in_cluster),
		cmocka_unit_test(conn_proxy_from_environment_as_go),
		cmocka_unit_test(backoff_like_client_go),
	};

	return cmocka_run_group_tests_name("k8s_config", tests, NULL, NULL);
}
