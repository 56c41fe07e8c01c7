/* Unit tests for agent/discovery/docker: label-name sanitizing, label building from
 * Engine API JSON (ports, networks, shared network stacks, host networking, IPv6,
 * collisions, type errors) and configuration checks. The HTTP side is tested against
 * tests/servers/docker_api.py by tests/integration/test_containers_docker.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/discovery/docker.h"
#include "lib/gostr.h"
#include "lib/labels.h"
#include "lib/strbuf.h"
#include "lib/targets_json.h"

static char *sanitized(const char *s)
{
	struct np_buf b = NP_BUF_INIT;

	np_label_name_sanitize(s, &b);
	return np_buf_steal(&b, NULL);
}

static void expect_sanitized(const char *in, const char *want)
{
	char *got = sanitized(in);

	assert_string_equal(got, want);
	free(got);
}

static void sanitize_like_prometheus(void **state)
{
	expect_sanitized("app.kubernetes.io/name", "app_kubernetes_io_name");
	expect_sanitized("com.docker.compose.project", "com_docker_compose_project");
	expect_sanitized("a-b c", "a_b_c");
	expect_sanitized("Already_OK_09", "Already_OK_09");
	expect_sanitized("", "");
	expect_sanitized("caf\xc3\xa9", "caf_");		  /* one rune, one '_' */
	expect_sanitized("\xe6\x97\xa5\xe6\x9c\xac", "__");	  /* two 3-byte runes */
	expect_sanitized("x\xf0\x9f\x90\xb3y", "x_y");		  /* a 4-byte rune */
	expect_sanitized("\xff\xfe", "__");			  /* invalid bytes: one each */
	expect_sanitized("\xc3", "_");				  /* truncated sequence */
	expect_sanitized("\xe0\x80\x80", "___");		  /* overlong: invalid, byte by byte */
	expect_sanitized("\xed\xa0\x80", "___");		  /* surrogate: invalid */
}

struct run {
	struct np_targets ts;
	char *json;
	struct np_err err;
	int rc;
};

static void run(struct run *r, const struct np_docker_config *cfg, const char *containers, const char *networks)
{
	memset(r, 0, sizeof(*r));
	r->rc = np_docker_targets_from_json(cfg, containers, strlen(containers), networks, strlen(networks), &r->ts,
					    &r->err);
	r->json = r->rc == 0 ? np_targets_to_json_string(&r->ts, 0) : NULL;
}

static void done(struct run *r)
{
	free(r->json);
	np_targets_free(&r->ts);
}

static const char *get(const struct run *r, size_t i, const char *name)
{
	assert_true(i < r->ts.n);
	return np_labels_get(&r->ts.v[i], name);
}

#define NETS                                                                                                       \
	"[{\"Name\":\"n1\",\"Id\":\"net1\",\"Scope\":\"local\",\"Internal\":false,\"Ingress\":false,"             \
	"\"Labels\":{\"com.example.tier\":\"front\"}},"                                                            \
	"{\"Name\":\"n2\",\"Id\":\"net2\",\"Scope\":\"swarm\",\"Internal\":true,\"Ingress\":true,\"Labels\":null}]"

static void ports_and_fallback(void **state)
{
	struct np_docker_config cfg;
	struct run r;

	np_docker_config_init(&cfg);
	run(&r, &cfg,
	    "[{\"Id\":\"c1\",\"Names\":[\"/web\",\"/alias\"],\"Labels\":{\"a.b\":\"dot\",\"a_b\":\"underscore\"},"
	    "\"HostConfig\":{\"NetworkMode\":\"n1\"},"
	    "\"NetworkSettings\":{\"Networks\":{\"n1\":{\"NetworkID\":\"net1\",\"IPAddress\":\"10.0.0.2\"}}},"
	    "\"Ports\":[{\"IP\":\"0.0.0.0\",\"PrivatePort\":80,\"PublicPort\":8080,\"Type\":\"tcp\"},"
	    "{\"PrivatePort\":53,\"Type\":\"udp\"},{\"PrivatePort\":443,\"PublicPort\":0,\"Type\":\"tcp\"}]},"
	    " {\"Id\":\"c2\",\"Names\":[\"/udp-only\"],\"HostConfig\":{\"NetworkMode\":\"n1\"},"
	    "\"NetworkSettings\":{\"Networks\":{\"n1\":{\"NetworkID\":\"net1\",\"IPAddress\":\"10.0.0.3\"}}},"
	    "\"Ports\":[{\"PrivatePort\":53,\"Type\":\"udp\"}]}]",
	    NETS);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.ts.n, 3);
	assert_string_equal(r.json,
			    "[{\"__address__\":\"10.0.0.2:80\",\"__meta_docker_container_id\":\"c1\","
			    "\"__meta_docker_container_label_a_b\":\"underscore\","
			    "\"__meta_docker_container_name\":\"/web\",\"__meta_docker_container_network_mode\":\"n1\","
			    "\"__meta_docker_network_id\":\"net1\",\"__meta_docker_network_ingress\":\"false\","
			    "\"__meta_docker_network_internal\":\"false\",\"__meta_docker_network_ip\":\"10.0.0.2\","
			    "\"__meta_docker_network_label_com_example_tier\":\"front\","
			    "\"__meta_docker_network_name\":\"n1\",\"__meta_docker_network_scope\":\"local\","
			    "\"__meta_docker_port_private\":\"80\",\"__meta_docker_port_public\":\"8080\","
			    "\"__meta_docker_port_public_ip\":\"0.0.0.0\"},"
			    "{\"__address__\":\"10.0.0.2:443\",\"__meta_docker_container_id\":\"c1\","
			    "\"__meta_docker_container_label_a_b\":\"underscore\","
			    "\"__meta_docker_container_name\":\"/web\",\"__meta_docker_container_network_mode\":\"n1\","
			    "\"__meta_docker_network_id\":\"net1\",\"__meta_docker_network_ingress\":\"false\","
			    "\"__meta_docker_network_internal\":\"false\",\"__meta_docker_network_ip\":\"10.0.0.2\","
			    "\"__meta_docker_network_label_com_example_tier\":\"front\","
			    "\"__meta_docker_network_name\":\"n1\",\"__meta_docker_network_scope\":\"local\","
			    "\"__meta_docker_port_private\":\"443\"},"
			    "{\"__address__\":\"10.0.0.3:80\",\"__meta_docker_container_id\":\"c2\","
			    "\"__meta_docker_container_name\":\"/udp-only\",\"__meta_docker_container_network_mode\":\"n1\","
			    "\"__meta_docker_network_id\":\"net1\",\"__meta_docker_network_ingress\":\"false\","
			    "\"__meta_docker_network_internal\":\"false\",\"__meta_docker_network_ip\":\"10.0.0.3\","
			    "\"__meta_docker_network_label_com_example_tier\":\"front\","
			    "\"__meta_docker_network_name\":\"n1\",\"__meta_docker_network_scope\":\"local\"}]");
	done(&r);
	/* the fallback port is configurable */
	cfg.port = 9999;
	run(&r, &cfg,
	    "[{\"Id\":\"c\",\"Names\":[\"/x\"],\"NetworkSettings\":{\"Networks\":{\"n2\":{\"NetworkID\":\"net2\","
	    "\"IPAddress\":\"fd00::5\"}}}}]",
	    NETS);
	assert_int_equal(r.rc, 0);
	assert_string_equal(get(&r, 0, "__address__"), "[fd00::5]:9999"); /* net.JoinHostPort */
	assert_string_equal(get(&r, 0, "__meta_docker_network_internal"), "true");
	assert_string_equal(get(&r, 0, "__meta_docker_network_ingress"), "true");
	assert_string_equal(get(&r, 0, "__meta_docker_network_scope"), "swarm");
	assert_string_equal(get(&r, 0, "__meta_docker_container_network_mode"), "");
	done(&r);
}

static void networks_first_or_all(void **state)
{
	struct np_docker_config cfg;
	const char *c = "[{\"Id\":\"c\",\"Names\":[\"/multi\"],\"HostConfig\":{\"NetworkMode\":\"zeta\"},"
			"\"NetworkSettings\":{\"Networks\":{\"zeta\":{\"NetworkID\":\"net1\",\"IPAddress\":\"10.0.0.9\"},"
			"\"alpha\":null,\"mid\":{\"NetworkID\":\"net2\",\"IPAddress\":\"10.1.0.9\"}}},"
			"\"Ports\":[{\"PrivatePort\":7,\"Type\":\"tcp\"}]}]";
	struct run r;

	np_docker_config_init(&cfg);
	run(&r, &cfg, c, NETS);
	assert_int_equal(r.rc, 0);
	/* first non-null network by name: "mid" (alpha is null) */
	assert_int_equal(r.ts.n, 1);
	assert_string_equal(get(&r, 0, "__address__"), "10.1.0.9:7");
	assert_string_equal(get(&r, 0, "__meta_docker_network_name"), "n2");
	done(&r);
	cfg.match_first_network = 0;
	run(&r, &cfg, c, NETS);
	assert_int_equal(r.ts.n, 2); /* null networks are skipped; name order */
	assert_string_equal(get(&r, 0, "__address__"), "10.1.0.9:7");
	assert_string_equal(get(&r, 1, "__address__"), "10.0.0.9:7");
	done(&r);
	/* a network the network list does not know: only its IP */
	run(&r, &cfg,
	    "[{\"Id\":\"c\",\"Names\":[\"/x\"],\"NetworkSettings\":{\"Networks\":{\"gone\":{\"NetworkID\":\"zzz\","
	    "\"IPAddress\":\"1.2.3.4\"}}}}]",
	    NETS);
	assert_int_equal(r.ts.n, 1);
	assert_null(get(&r, 0, "__meta_docker_network_name"));
	assert_string_equal(get(&r, 0, "__meta_docker_network_ip"), "1.2.3.4");
	done(&r);
}

static void shared_network_stack_and_host_mode(void **state)
{
	struct np_docker_config cfg;
	struct run r;

	np_docker_config_init(&cfg);
	cfg.host_networking_host = "node-1.example";
	run(&r, &cfg,
	    "[{\"Id\":\"side\",\"Names\":[\"/sidecar\"],\"HostConfig\":{\"NetworkMode\":\"container:mid\"},"
	    "\"NetworkSettings\":{\"Networks\":{}},\"Ports\":[{\"PrivatePort\":9187,\"Type\":\"tcp\"}]},"
	    " {\"Id\":\"mid\",\"Names\":[\"/mid\"],\"HostConfig\":{\"NetworkMode\":\"container:app\"},"
	    "\"NetworkSettings\":{\"Networks\":null}},"
	    " {\"Id\":\"app\",\"Names\":[\"/app\"],\"HostConfig\":{\"NetworkMode\":\"n1\"},"
	    "\"NetworkSettings\":{\"Networks\":{\"n1\":{\"NetworkID\":\"net1\",\"IPAddress\":\"10.0.0.7\"}}}},"
	    " {\"Id\":\"h\",\"Names\":[\"/hostnet\"],\"HostConfig\":{\"NetworkMode\":\"host\"},"
	    "\"NetworkSettings\":{\"Networks\":{\"host\":{\"NetworkID\":\"nethost\",\"IPAddress\":\"\"}}}},"
	    " {\"Id\":\"orphan\",\"Names\":[\"/orphan\"],\"HostConfig\":{\"NetworkMode\":\"container:nope\"}},"
	    " {\"Id\":\"a\",\"Names\":[\"/loop-a\"],\"HostConfig\":{\"NetworkMode\":\"container:b\"}},"
	    " {\"Id\":\"b\",\"Names\":[\"/loop-b\"],\"HostConfig\":{\"NetworkMode\":\"container:a\"}}]",
	    NETS);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.ts.n, 4);
	/* sidecar -> mid (no networks) -> app: app's network, the sidecar's ports */
	assert_string_equal(get(&r, 0, "__meta_docker_container_name"), "/sidecar");
	assert_string_equal(get(&r, 0, "__address__"), "10.0.0.7:9187");
	assert_string_equal(get(&r, 0, "__meta_docker_network_name"), "n1");
	assert_string_equal(get(&r, 1, "__meta_docker_container_name"), "/mid");
	assert_string_equal(get(&r, 1, "__address__"), "10.0.0.7:80");
	assert_string_equal(get(&r, 2, "__meta_docker_container_name"), "/app");
	assert_string_equal(get(&r, 3, "__address__"), "node-1.example");
	assert_string_equal(get(&r, 3, "__meta_docker_network_ip"), "");
	done(&r);
}

static void skipped_and_empty(void **state)
{
	struct np_docker_config cfg;
	struct run r;

	np_docker_config_init(&cfg);
	run(&r, &cfg, "[{\"Id\":\"x\",\"Names\":[]},{\"Id\":\"y\"},{\"Id\":\"z\",\"Names\":null},null]", "[]");
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.ts.n, 0);
	done(&r);
	run(&r, &cfg, "null", "null");
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.ts.n, 0);
	done(&r);
	run(&r, &cfg, "[]", "[]");
	assert_int_equal(r.rc, 0);
	done(&r);
}

static void expect_error(const char *containers, const char *networks, const char *fragment)
{
	struct np_docker_config cfg;
	struct run r;

	np_docker_config_init(&cfg);
	run(&r, &cfg, containers, networks);
	assert_int_equal(r.rc, -1);
	if (!strstr(r.err.msg, fragment))
		fail_msg("error \"%s\" lacks \"%s\"", r.err.msg, fragment);
	done(&r);
}

static void type_errors_fail_the_refresh(void **state)
{
	expect_error("{}", "[]", "container list: expected a JSON array");
	expect_error("[", "[]", "container list: invalid JSON");
	expect_error("[]", "{\"a\":1}", "network list: expected a JSON array");
	expect_error("[1]", "[]", "container 0: not an object");
	expect_error("[{\"Names\":\"/x\"}]", "[]", "Names");
	expect_error("[{\"Names\":[\"/x\"],\"Ports\":{}}]", "[]", "Ports");
	expect_error("[{\"Names\":[\"/x\"],\"Ports\":[{\"PrivatePort\":70000}]}]", "[]", "PrivatePort");
	expect_error("[{\"Names\":[\"/x\"],\"Ports\":[{\"PrivatePort\":80.5}]}]", "[]", "PrivatePort");
	expect_error("[{\"Names\":[\"/x\"],\"Ports\":[{\"PrivatePort\":-1}]}]", "[]", "PrivatePort");
	expect_error("[{\"Names\":[\"/x\"],\"Labels\":{\"k\":1}}]", "[]", "Labels[\"k\"]");
	expect_error("[{\"Id\":7}]", "[]", "Id");
	expect_error("[{\"HostConfig\":[]}]", "[]", "HostConfig");
	expect_error("[{\"NetworkSettings\":{\"Networks\":{\"n\":3}}}]", "[]", "network \"n\"");
	expect_error("[{\"NetworkSettings\":{\"Networks\":{\"n\":{\"IPAddress\":false}}}}]", "[]", "IPAddress");
	expect_error("[]", "[{\"Internal\":\"yes\"}]", "network 0: field Internal");
	expect_error("[]", "[7]", "network 0: not an object");
}

static void config_validation(void **state)
{
	struct np_docker_config cfg;
	struct np_http_client_config http; /* its strings are literals here: never freed */
	struct np_err err;
	static const char *const vals[] = { "a=b" };
	struct np_docker_filter bad_filter = { "", vals, 1 };

#define EXPECT_INVALID(fragment)                                                                                   \
	do {                                                                                                       \
		assert_int_equal(np_docker_config_validate(&cfg, &err), -1);                                       \
		if (!strstr(err.msg, fragment))                                                                    \
			fail_msg("error \"%s\" lacks \"%s\"", err.msg, fragment);                                  \
	} while (0)

	np_docker_config_init(&cfg);
	EXPECT_INVALID("host attribute must not be empty");
	cfg.host = "unix:///var/run/docker.sock";
	assert_int_equal(np_docker_config_validate(&cfg, &err), 0);
	cfg.host = "tcp://127.0.0.1:2375";
	assert_int_equal(np_docker_config_validate(&cfg, &err), 0);
	cfg.host = "https://docker.example:2376/base";
	assert_int_equal(np_docker_config_validate(&cfg, &err), 0);
	cfg.host = "/var/run/docker.sock";
	EXPECT_INVALID("unsupported address");
	cfg.host = "unix://relative.sock";
	EXPECT_INVALID("absolute path");
	cfg.host = "npipe:////./pipe/docker_engine";
	EXPECT_INVALID("not supported");
	cfg.host = "tcp://";
	EXPECT_INVALID("missing host");
	cfg.host = "tcp://a b";
	EXPECT_INVALID("white space");
	cfg.host = "unix:///run/docker.sock";
	cfg.refresh_interval_ns = 0;
	EXPECT_INVALID("refresh_interval must be greater than 0");
	np_docker_config_init(&cfg);
	cfg.host = "unix:///run/docker.sock";
	cfg.port = 70000;
	EXPECT_INVALID("port");
	cfg.port = 0;
	assert_int_equal(np_docker_config_validate(&cfg, &err), 0);
	cfg.filters = &bad_filter;
	cfg.n_filters = 1;
	EXPECT_INVALID("filter 1: name");
	cfg.n_filters = 0;
	/* the HTTP client settings: Alloy's rules, then the transport's */
	np_http_client_config_init(&http);
	cfg.http = &http;
	http.bearer_token = "t";
	http.bearer_token_file = "/f";
	cfg.host = "http://127.0.0.1:2375";
	EXPECT_INVALID("at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file");
	http.bearer_token_file = NULL;
	assert_int_equal(np_docker_config_validate(&cfg, &err), 0);
	/* on a unix socket Prometheus (so Alloy) ignores it: the configuration stays valid,
	 * check warns (np_docker_check_http_client) and the request leaves it out */
	cfg.host = "unix:///run/docker.sock";
	assert_int_equal(np_docker_config_validate(&cfg, &err), 0);
	http.bearer_token = NULL;
	http.oauth2 = np_oauth2_config_new();
	assert_non_null(http.oauth2);
	http.oauth2->client_id = strdup("id");
	http.oauth2->client_secret = strdup("s");
	http.oauth2->token_url = strdup("http://idp/token");
	cfg.host = "https://docker.example:2376";
	EXPECT_INVALID("no token source");
	np_oauth2_config_free(http.oauth2);
	http.oauth2 = NULL;
#undef EXPECT_INVALID
}

/* What Prometheus' docker SD leaves out for unix:// and tcp:// hosts is refused there,
 * named by the argument to remove; the rest applies to every host. */
static void settings_per_transport(void **state)
{
	static const char *const hosts[] = { "unix:///run/docker.sock", "tcp://10.0.0.1:2375", "http://10.0.0.1:2375",
					     "https://10.0.0.1:2376" };
	static const char *const settings[] = { "bearer_token",	     "bearer_token_file", "basic_auth",
						"authorization",     "oauth2",		  "tls_config",
						"proxy_url",	     "no_proxy",	  "proxy_from_environment",
						"proxy_connect_header" };
	struct np_err err;

	for (size_t h = 0; h < sizeof(hosts) / sizeof(hosts[0]); h++) {
		int direct = h < 2;
		for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
			struct np_http_client_config hc;
			const char *setting = "x";
			int rc;

			np_http_client_config_init(&hc);
			switch (i) {
			case 0: hc.bearer_token = strdup("t"); break;
			case 1: hc.bearer_token_file = strdup("/t"); break;
			case 2: hc.basic_auth.set = 1; break;
			case 3: hc.authorization.set = 1; break;
			case 4: hc.oauth2 = np_oauth2_config_new(); break;
			case 5: hc.tls.insecure_skip_verify = 1; break;
			case 6: hc.proxy_url = strdup("http://proxy:3128"); break;
			case 7: hc.no_proxy = strdup("localhost"); break;
			case 8: hc.proxy_from_environment = 1; break;
			default: assert_int_equal(np_http_headers_add(&hc.proxy_connect_headers, "X-A", "b", &err), 0);
			}
			rc = np_docker_check_http_client(hosts[h], &hc, &setting, &err);
			if (direct) {
				assert_int_equal(rc, -1);
				assert_string_equal(setting, settings[i]);
				assert_non_null(strstr(err.msg, " is ignored: Prometheus' docker SD"));
				/* secrets never appear in messages */
				assert_null(strstr(err.msg, "\"t\""));
				assert_non_null(strstr(err.msg, hosts[h][0] == 'u' ? "unix://" : "tcp://"));
			} else {
				assert_int_equal(rc, 0);
				assert_null(setting);
			}
			np_http_client_config_free(&hc);
		}
		/* headers go with every request; redirects and HTTP/1.1 mean the same everywhere */
		{
			struct np_http_client_config hc;
			const char *setting = "x";

			np_http_client_config_init(&hc);
			hc.follow_redirects = 0;
			hc.enable_http2 = 0;
			assert_int_equal(np_http_headers_add(&hc.http_headers, "foo", "foobar", &err), 0);
			hc.tls.min_version = NULL;
			assert_int_equal(np_docker_check_http_client(hosts[h], &hc, &setting, &err), 0);
			assert_null(setting);
			np_http_client_config_free(&hc);
		}
	}
}

static void unreachable_engine(void **state)
{
	struct np_docker_config cfg;
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;

	np_docker_config_init(&cfg);
	cfg.host = "unix:///nonexistent/docker.sock";
	assert_int_equal(np_docker_discover_once(&cfg, &out, &err), -1);
	assert_non_null(strstr(err.msg, "discovery.docker unix:///nonexistent/docker.sock"));
	assert_non_null(strstr(err.msg, "/_ping"));
	assert_int_equal(out.n, 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(sanitize_like_prometheus),
		cmocka_unit_test(ports_and_fallback),
		cmocka_unit_test(networks_first_or_all),
		cmocka_unit_test(shared_network_stack_and_host_mode),
		cmocka_unit_test(skipped_and_empty),
		cmocka_unit_test(type_errors_fail_the_refresh),
		cmocka_unit_test(config_validation),
		cmocka_unit_test(settings_per_transport),
		cmocka_unit_test(unreachable_engine),
	};

	return cmocka_run_group_tests_name("docker", tests, NULL, NULL);
}
