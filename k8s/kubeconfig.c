/* kubeconfig reading with libyaml's document API: see kubeconfig.h. */
#include "k8s/kubeconfig.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lib/file.h"

#define MAX_KUBECONFIG_BYTES (16u << 20)

void k8s_kubeconfig_free(struct k8s_kubeconfig *kc)
{
	char **strs[] = { &kc->server,    &kc->ca_file,  &kc->ca_pem,          &kc->cert_file, &kc->cert_pem,
			  &kc->key_file,  &kc->key_pem,  &kc->tls_server_name, &kc->token,     &kc->token_file,
			  &kc->username,  &kc->password, &kc->proxy_url };

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		if (*strs[i] && (strs[i] == &kc->key_pem || strs[i] == &kc->token || strs[i] == &kc->password))
			memset(*strs[i], 0, strlen(*strs[i]));
		free(*strs[i]);
	}
	memset(kc, 0, sizeof(*kc));
}

static yaml_node_t *node(yaml_document_t *doc, int id)
{
	return id ? yaml_document_get_node(doc, id) : NULL;
}

/* The value of key in a mapping node, or NULL. */
static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(doc, p->key);
		if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
		    memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
			return node(doc, p->value);
	}
	return NULL;
}

/* A scalar's text (NUL-terminated by libyaml), or NULL for other node kinds / null. */
static const char *scalar(yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE)
		return NULL;
	const char *s = (const char *)n->data.scalar.value;
	if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && (strcmp(s, "null") == 0 || strcmp(s, "~") == 0))
		return NULL;
	return s;
}

static int yaml_true(yaml_node_t *n)
{
	const char *s = scalar(n);
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y" };

	if (!s)
		return 0;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcmp(s, yes[i]) == 0)
			return 1;
	return 0;
}

/* Finds the entry named name in a list of {name: ..., <field>: {...}} and returns its field. */
static yaml_node_t *named(yaml_document_t *doc, yaml_node_t *root, const char *list, const char *field,
			  const char *name)
{
	yaml_node_t *seq = map_get(doc, root, list);

	if (!seq || seq->type != YAML_SEQUENCE_NODE)
		return NULL;
	for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *e = node(doc, *it);
		const char *n = scalar(map_get(doc, e, "name"));
		if (n && strcmp(n, name) == 0)
			return map_get(doc, e, field);
	}
	return NULL;
}

static int dup_into(char **dst, const char *src, struct np_err *err)
{
	if (!src || !*src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : np_errf(err, "out of memory");
}

/* A file path from the kubeconfig, made absolute against base_dir. */
static int path_into(char **dst, const char *src, const char *base_dir, struct np_err *err)
{
	if (!src || !*src)
		return 0;
	if (src[0] == '/' || !base_dir)
		return dup_into(dst, src, err);
	if (asprintf(dst, "%s/%s", base_dir, src) < 0) {
		*dst = NULL;
		return np_errf(err, "out of memory");
	}
	return 0;
}

/* Base64 (as Go's encoding/base64 StdEncoding in kubeconfig *-data fields) into a string. */
static int b64_into(char **dst, const char *src, const char *field, struct np_err *err)
{
	size_t n;
	EVP_ENCODE_CTX *ctx;
	unsigned char *out;
	int len = 0, fin = 0;

	if (!src || !*src)
		return 0;
	n = strlen(src);
	if (n > MAX_KUBECONFIG_BYTES)
		return np_errf(err, "%s is too long", field);
	out = malloc(n / 4 * 3 + 8);
	ctx = EVP_ENCODE_CTX_new();
	if (!out || !ctx) {
		free(out);
		EVP_ENCODE_CTX_free(ctx);
		return np_errf(err, "out of memory");
	}
	EVP_DecodeInit(ctx);
	if (EVP_DecodeUpdate(ctx, out, &len, (const unsigned char *)src, (int)n) < 0 ||
	    EVP_DecodeFinal(ctx, out + len, &fin) < 0) {
		free(out);
		EVP_ENCODE_CTX_free(ctx);
		return np_errf(err, "%s is not valid base64", field);
	}
	EVP_ENCODE_CTX_free(ctx);
	out[len + fin] = '\0';
	*dst = (char *)out;
	return 0;
}

static int unsupported(yaml_document_t *doc, yaml_node_t *user, const char *user_name, struct np_err *err)
{
	static const char *const keys[] = { "exec", "auth-provider", "as", "as-uid", "as-groups", "as-user-extra" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		yaml_node_t *v = map_get(doc, user, keys[i]);
		if (v && !(v->type == YAML_SCALAR_NODE && !scalar(v)))
			return np_errf(err, "user \"%s\": \"%s\" is not supported yet (use a token, tokenFile or a "
					    "client certificate)",
				       user_name, keys[i]);
	}
	return 0;
}

/* The current context's cluster and user (user NULL when the context names none). */
struct chosen {
	yaml_node_t *cluster, *user;
	const char *cluster_name, *user_name;
};

static int choose_context(yaml_document_t *doc, yaml_node_t *root, struct chosen *c, struct np_err *err)
{
	const char *cur = scalar(map_get(doc, root, "current-context"));
	yaml_node_t *ctx;

	if (!cur || !*cur)
		return np_errf(err, "no current-context is set");
	ctx = named(doc, root, "contexts", "context", cur);
	if (!ctx)
		return np_errf(err, "context \"%s\" (current-context) is not defined", cur);
	c->cluster_name = scalar(map_get(doc, ctx, "cluster"));
	c->user_name = scalar(map_get(doc, ctx, "user"));
	c->cluster = c->cluster_name ? named(doc, root, "clusters", "cluster", c->cluster_name) : NULL;
	c->user = NULL;
	if (!c->cluster)
		return np_errf(err, "context \"%s\": cluster \"%s\" is not defined", cur,
			       c->cluster_name ? c->cluster_name : "");
	if (c->user_name && *c->user_name) {
		c->user = named(doc, root, "users", "user", c->user_name);
		if (!c->user)
			return np_errf(err, "context \"%s\": user \"%s\" is not defined", cur, c->user_name);
		if (unsupported(doc, c->user, c->user_name, err))
			return -1;
	}
	return 0;
}

/* The chosen cluster's and user's settings into kc, checked as client-go checks them. */
static int read_chosen(yaml_document_t *doc, const struct chosen *c, const char *base_dir, struct k8s_kubeconfig *kc,
		       struct np_err *err)
{
	yaml_node_t *cluster = c->cluster, *user = c->user;

	if (dup_into(&kc->server, scalar(map_get(doc, cluster, "server")), err) ||
	    path_into(&kc->ca_file, scalar(map_get(doc, cluster, "certificate-authority")), base_dir, err) ||
	    b64_into(&kc->ca_pem, scalar(map_get(doc, cluster, "certificate-authority-data")),
		     "certificate-authority-data", err) ||
	    dup_into(&kc->tls_server_name, scalar(map_get(doc, cluster, "tls-server-name")), err) ||
	    dup_into(&kc->proxy_url, scalar(map_get(doc, cluster, "proxy-url")), err) ||
	    path_into(&kc->cert_file, scalar(map_get(doc, user, "client-certificate")), base_dir, err) ||
	    b64_into(&kc->cert_pem, scalar(map_get(doc, user, "client-certificate-data")), "client-certificate-data",
		     err) ||
	    path_into(&kc->key_file, scalar(map_get(doc, user, "client-key")), base_dir, err) ||
	    b64_into(&kc->key_pem, scalar(map_get(doc, user, "client-key-data")), "client-key-data", err) ||
	    dup_into(&kc->token, scalar(map_get(doc, user, "token")), err) ||
	    path_into(&kc->token_file, scalar(map_get(doc, user, "tokenFile")), base_dir, err) ||
	    dup_into(&kc->username, scalar(map_get(doc, user, "username")), err) ||
	    dup_into(&kc->password, scalar(map_get(doc, user, "password")), err))
		return -1;
	kc->insecure = yaml_true(map_get(doc, cluster, "insecure-skip-tls-verify"));
	if (!kc->server)
		return np_errf(err, "cluster \"%s\" has no server", c->cluster_name);
	if (kc->insecure && (kc->ca_file || kc->ca_pem))
		return np_errf(err,
			       "cluster \"%s\": specifying a root certificates file with the insecure flag is not allowed",
			       c->cluster_name);
	if ((kc->cert_file || kc->cert_pem) != (kc->key_file || kc->key_pem))
		return np_errf(err, "user \"%s\": a client certificate needs both a certificate and a key",
			       c->user_name ? c->user_name : "");
	return 0;
}

int k8s_kubeconfig_parse(const char *text, size_t len, const char *base_dir, struct k8s_kubeconfig *kc,
			 struct np_err *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct chosen c = { 0 };
	int rc = -1;

	memset(kc, 0, sizeof(*kc));
	if (!yaml_parser_initialize(&parser))
		return np_errf(err, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		np_errf(err, "line %zu: %s", parser.problem_mark.line + 1, parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		return -1;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		np_errf(err, "not a kubeconfig (expected a mapping with clusters, users and contexts)");
	else if (choose_context(&doc, root, &c, err) == 0 && read_chosen(&doc, &c, base_dir, kc, err) == 0)
		rc = 0;
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc)
		k8s_kubeconfig_free(kc);
	return rc;
}

int k8s_kubeconfig_load(const char *path, struct k8s_kubeconfig *kc, struct np_err *err)
{
	size_t len;
	char *text = np_read_file(path, MAX_KUBECONFIG_BYTES, &len, err);
	char *dir, *slash;
	int rc;

	memset(kc, 0, sizeof(*kc));
	if (!text)
		return np_err_wrap(err, "kubeconfig_file");
	dir = strdup(path);
	if (!dir) {
		free(text);
		return np_errf(err, "out of memory");
	}
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	rc = k8s_kubeconfig_parse(text, len, dir, kc, err);
	free(dir);
	free(text);
	if (rc)
		return np_err_wrap(err, "kubeconfig_file %s", path);
	return 0;
}
