/* discovery.docker label building: Engine API JSON -> targets, as Prometheus'
 * discovery/moby/docker.go refresh() does it (see docker.h for the labels). Field
 * types are checked the way Go's encoding/json would: null and missing fields are
 * zero values, a wrongly typed field fails the refresh. */
#include "agent/discovery/docker.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sorted.h"
#include "lib/strbuf.h"
#include "lib/targets_json.h"

#define L_CONTAINER "__meta_docker_container_"
#define L_NETWORK "__meta_docker_network_"
#define L_PORT "__meta_docker_port_"

/* ---- typed field access ---- */

struct ctx {
	const char *what; /* "container" or "network" */
	size_t index;
	struct np_err *err;
};

static int type_error(const struct ctx *cx, const char *field, const char *want)
{
	return np_errf(cx->err, "%s %zu: field %s must be %s", cx->what, cx->index, field, want);
}

#define TYPE(t) (1u << (t))

/* A field whose JSON type is one of types (a TYPE() mask): *out = the value, NULL when
 * missing or null (the zero value); an error naming want when of another type. */
static int get_field(const struct ctx *cx, const json_t *obj, const char *field, unsigned types, const char *want,
		     const json_t **out)
{
	const json_t *v = json_object_get(obj, field);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!(types & TYPE(json_typeof(v))))
		return type_error(cx, field, want);
	*out = v;
	return 0;
}

/* A string field: "" when missing or null. */
static int get_str(const struct ctx *cx, const json_t *obj, const char *field, const char **out)
{
	const json_t *v;
	int rc = get_field(cx, obj, field, TYPE(JSON_STRING), "a string", &v);

	*out = v ? json_string_value(v) : "";
	return rc;
}

/* An object field: NULL when missing or null. */
static int get_obj(const struct ctx *cx, const json_t *obj, const char *field, const json_t **out)
{
	return get_field(cx, obj, field, TYPE(JSON_OBJECT), "an object", out);
}

static int get_bool(const struct ctx *cx, const json_t *obj, const char *field, int *out)
{
	const json_t *v;
	int rc = get_field(cx, obj, field, TYPE(JSON_TRUE) | TYPE(JSON_FALSE), "a boolean", &v);

	*out = v && json_is_true(v);
	return rc;
}

static int get_u16(const struct ctx *cx, const json_t *obj, const char *field, unsigned *out)
{
	static const char want[] = "an integer from 0 to 65535";
	const json_t *v;

	*out = 0;
	if (get_field(cx, obj, field, TYPE(JSON_INTEGER), want, &v) != 0)
		return -1;
	if (v && (json_integer_value(v) < 0 || json_integer_value(v) > 65535))
		return type_error(cx, field, want);
	*out = v ? (unsigned)json_integer_value(v) : 0;
	return 0;
}

/* A map of strings (Labels): NULL when missing or null; every value must be a string. */
static int get_str_map(const struct ctx *cx, const json_t *obj, const char *field, const json_t **out)
{
	const char *k;
	const json_t *v;

	if (get_obj(cx, obj, field, out) != 0)
		return -1;
	if (*out)
		json_object_foreach((json_t *)*out, k, v)
			if (!json_is_string(v) && !json_is_null(v))
				return np_errf(cx->err, "%s %zu: %s[\"%s\"] must be a string", cx->what, cx->index,
					       field, k);
	return 0;
}

/* ---- parsed input ---- */

struct container {
	size_t index;
	const char *id, *name, *network_mode;
	int has_name;
	const json_t *labels, *networks, *ports;
};

struct network {
	const char *id;
	struct np_labels labels; /* owned: __meta_docker_network_* */
};

static int parse_container(const json_t *c, size_t index, struct container *out, struct np_err *err)
{
	struct ctx cx = { "container", index, err };
	const json_t *names, *host_config, *settings;
	const char *k;
	const json_t *v;

	memset(out, 0, sizeof(*out));
	out->index = index;
	out->id = out->name = out->network_mode = "";
	if (json_is_null(c))
		return 0;
	if (!json_is_object(c))
		return np_errf(err, "container %zu: not an object", index);
	if (get_str(&cx, c, "Id", &out->id) != 0 || get_str_map(&cx, c, "Labels", &out->labels) != 0 ||
	    get_obj(&cx, c, "HostConfig", &host_config) != 0 || get_obj(&cx, c, "NetworkSettings", &settings) != 0)
		return -1;
	names = json_object_get(c, "Names");
	if (names && !json_is_null(names)) {
		if (!json_is_array(names))
			return type_error(&cx, "Names", "an array of strings");
		for (size_t i = 0; i < json_array_size(names); i++)
			if (!json_is_string(json_array_get(names, i)) && !json_is_null(json_array_get(names, i)))
				return type_error(&cx, "Names", "an array of strings");
		if (json_array_size(names) > 0) {
			const json_t *first = json_array_get(names, 0);
			out->has_name = 1;
			out->name = json_is_string(first) ? json_string_value(first) : "";
		}
	}
	if (host_config && get_str(&cx, host_config, "NetworkMode", &out->network_mode) != 0)
		return -1;
	if (settings && get_obj(&cx, settings, "Networks", &out->networks) != 0)
		return -1;
	if (out->networks) {
		json_object_foreach((json_t *)out->networks, k, v) {
			const char *s;
			if (json_is_null(v))
				continue;
			if (!json_is_object(v))
				return np_errf(err, "container %zu: network \"%s\" must be an object", index, k);
			if (get_str(&cx, v, "NetworkID", &s) != 0 || get_str(&cx, v, "IPAddress", &s) != 0)
				return -1;
		}
	}
	out->ports = json_object_get(c, "Ports");
	if (out->ports && json_is_null(out->ports))
		out->ports = NULL;
	if (out->ports) {
		if (!json_is_array(out->ports))
			return type_error(&cx, "Ports", "an array");
		for (size_t i = 0; i < json_array_size(out->ports); i++) {
			const json_t *p = json_array_get(out->ports, i);
			const char *s;
			unsigned u;
			if (json_is_null(p))
				continue;
			if (!json_is_object(p))
				return type_error(&cx, "Ports", "an array of objects");
			if (get_str(&cx, p, "IP", &s) != 0 || get_str(&cx, p, "Type", &s) != 0 ||
			    get_u16(&cx, p, "PrivatePort", &u) != 0 || get_u16(&cx, p, "PublicPort", &u) != 0)
				return -1;
		}
	}
	return 0;
}

static int parse_network(const json_t *n, size_t index, struct network *out, struct np_err *err)
{
	struct ctx cx = { "network", index, err };
	const char *name, *scope;
	int internal, ingress;
	const json_t *labels;

	out->id = "";
	if (json_is_null(n))
		return 0;
	if (!json_is_object(n))
		return np_errf(err, "network %zu: not an object", index);
	if (get_str(&cx, n, "Id", &out->id) != 0 || get_str(&cx, n, "Name", &name) != 0 ||
	    get_str(&cx, n, "Scope", &scope) != 0 || get_bool(&cx, n, "Internal", &internal) != 0 ||
	    get_bool(&cx, n, "Ingress", &ingress) != 0 || get_str_map(&cx, n, "Labels", &labels) != 0)
		return -1;
	if (np_labels_set(&out->labels, L_NETWORK "id", out->id, err) != 0 ||
	    np_labels_set(&out->labels, L_NETWORK "name", name, err) != 0 ||
	    np_labels_set(&out->labels, L_NETWORK "scope", scope, err) != 0 ||
	    np_labels_set(&out->labels, L_NETWORK "internal", internal ? "true" : "false", err) != 0 ||
	    np_labels_set(&out->labels, L_NETWORK "ingress", ingress ? "true" : "false", err) != 0)
		return -1;
	return np_labels_set_json_map(&out->labels, labels, L_NETWORK "label_", NULL, err);
}

/* Sorted views for lookups by ID; among equal IDs the last in input order wins, as a
 * Go map assignment in input order would: it sorts first. */
static int cmp_container_id(const void *a, const void *b)
{
	const struct container *x = *(const struct container *const *)a, *y = *(const struct container *const *)b;
	int c = strcmp(x->id, y->id);

	return c ? c : (x->index > y->index ? -1 : x->index < y->index);
}

static int cmp_id(const void *id, const void *container)
{
	return strcmp(id, (*(const struct container *const *)container)->id);
}

static const struct container *find_container(struct container *const *sorted, size_t n, const char *id)
{
	int found;
	size_t i = np_sorted_find(sorted, n, sizeof(sorted[0]), id, cmp_id, &found);

	return found ? sorted[i] : NULL;
}

static const struct np_labels *find_network_labels(const struct network *nets, size_t n, const char *id)
{
	const struct np_labels *found = NULL;

	/* Few networks per host: a linear scan, last match wins. */
	for (size_t i = 0; i < n; i++)
		if (strcmp(nets[i].id, id) == 0)
			found = &nets[i].labels;
	return found;
}

/* net.JoinHostPort: IPv6 literals in brackets. */
static void join_host_port(struct np_buf *b, const char *host, unsigned port)
{
	np_buf_reset(b);
	if (strchr(host, ':'))
		np_buf_printf(b, "[%s]:%u", host, port);
	else
		np_buf_printf(b, "%s:%u", host, port);
}

static int merge(struct np_labels *dst, const struct np_labels *src, struct np_err *err)
{
	for (size_t i = 0; src && i < src->n; i++)
		if (np_labels_set(dst, src->v[i].name, src->v[i].value, err) != 0)
			return -1;
	return 0;
}

struct build {
	const struct np_docker_config *cfg;
	const struct network *nets;
	size_t n_nets;
	struct np_targets *out;
	struct np_buf addr;
	struct np_err *err;
};

/* One target: the given per-target labels + common + network labels + __address__. */
static int emit(struct build *b, struct np_labels *ls, const struct np_labels *common, const char *network_id)
{
	if (merge(ls, common, b->err) != 0 ||
	    merge(ls, find_network_labels(b->nets, b->n_nets, network_id), b->err) != 0)
		return -1;
	if (b->addr.failed)
		return np_errf(b->err, "out of memory building docker labels");
	if (np_labels_set(ls, "__address__", b->addr.p ? b->addr.p : "", b->err) != 0)
		return -1;
	if (np_targets_push(b->out, ls, b->err) != 0)
		return -1;
	return 0;
}

static int emit_network(struct build *b, const struct container *c, const struct np_labels *common,
			const json_t *net)
{
	const char *ip = json_string_value(json_object_get(net, "IPAddress"));
	const char *net_id = json_string_value(json_object_get(net, "NetworkID"));
	int added = 0;

	ip = ip ? ip : "";
	net_id = net_id ? net_id : "";
	for (size_t i = 0; c->ports && i < json_array_size(c->ports); i++) {
		const json_t *p = json_array_get(c->ports, i);
		const char *type = json_string_value(json_object_get(p, "Type"));
		const char *pub_ip = json_string_value(json_object_get(p, "IP"));
		unsigned priv = 0, pub = 0;
		struct np_labels ls = NP_LABELS_INIT;
		char num[16];

		if (!p || json_is_null(p) || !type || strcmp(type, "tcp") != 0)
			continue;
		if (json_is_integer(json_object_get(p, "PrivatePort")))
			priv = (unsigned)json_integer_value(json_object_get(p, "PrivatePort"));
		if (json_is_integer(json_object_get(p, "PublicPort")))
			pub = (unsigned)json_integer_value(json_object_get(p, "PublicPort"));
		snprintf(num, sizeof(num), "%u", priv);
		if (np_labels_set(&ls, L_NETWORK "ip", ip, b->err) != 0 ||
		    np_labels_set(&ls, L_PORT "private", num, b->err) != 0)
			goto fail;
		if (pub > 0) {
			snprintf(num, sizeof(num), "%u", pub);
			if (np_labels_set(&ls, L_PORT "public", num, b->err) != 0 ||
			    np_labels_set(&ls, L_PORT "public_ip", pub_ip ? pub_ip : "", b->err) != 0)
				goto fail;
		}
		join_host_port(&b->addr, ip, priv);
		if (emit(b, &ls, common, net_id) != 0)
			goto fail;
		added = 1;
		continue;
fail:
		np_labels_free(&ls);
		return -1;
	}
	if (!added) {
		/* No TCP port: the fallback port, or the configured host for host networking
		 * (such containers have no ports, so they always end up here). */
		struct np_labels ls = NP_LABELS_INIT;

		if (strcmp(c->network_mode, "host") != 0) {
			join_host_port(&b->addr, ip, (unsigned)b->cfg->port);
		} else {
			np_buf_reset(&b->addr);
			np_buf_puts(&b->addr, b->cfg->host_networking_host ? b->cfg->host_networking_host : "");
		}
		if (np_labels_set(&ls, L_NETWORK "ip", ip, b->err) != 0 || emit(b, &ls, common, net_id) != 0) {
			np_labels_free(&ls);
			return -1;
		}
	}
	return 0;
}

static int emit_container(struct build *b, const struct container *c, struct container *const *by_id, size_t n)
{
	struct np_labels common = NP_LABELS_INIT;
	const json_t *networks = c->networks;
	const char *mode = c->network_mode;
	const char **names = NULL;
	size_t n_names = 0, k;
	const char *key;
	const json_t *v;
	int rc = -1;

	if (np_labels_set(&common, L_CONTAINER "id", c->id, b->err) != 0 ||
	    np_labels_set(&common, L_CONTAINER "name", c->name, b->err) != 0 ||
	    np_labels_set(&common, L_CONTAINER "network_mode", c->network_mode, b->err) != 0 ||
	    np_labels_set_json_map(&common, c->labels, L_CONTAINER "label_", NULL, b->err) != 0)
		goto out;
	/* "container:<id>" shares another container's network stack: follow the chain
	 * (bounded, since a cycle would loop forever). */
	for (size_t hops = 0; (!networks || json_object_size(networks) == 0) && hops <= n; hops++) {
		const struct container *other;
		if (strncmp(mode, "container:", 10) != 0)
			break;
		other = find_container(by_id, n, mode + 10);
		if (!other)
			break;
		networks = other->networks;
		mode = other->network_mode;
	}
	n_names = networks ? json_object_size(networks) : 0;
	if (n_names) {
		names = malloc(n_names * sizeof(*names));
		if (!names) {
			np_errf(b->err, "out of memory building docker labels");
			goto out;
		}
		k = 0;
		json_object_foreach((json_t *)networks, key, v)
			names[k++] = key;
		qsort(names, n_names, sizeof(*names), np_cmp_str);
		if (b->cfg->match_first_network && n_names > 1) {
			/* the first non-null network by name, if any */
			for (k = 0; k < n_names; k++) {
				if (!json_is_null(json_object_get(networks, names[k]))) {
					names[0] = names[k];
					n_names = 1;
					break;
				}
			}
		}
	}
	for (k = 0; k < n_names; k++) {
		const json_t *net = json_object_get(networks, names[k]);
		if (json_is_null(net))
			continue;
		if (emit_network(b, c, &common, net) != 0)
			goto out;
	}
	rc = 0;
out:
	free(names);
	np_labels_free(&common);
	return rc;
}

static json_t *load(const char *what, const char *text, size_t len, struct np_err *err)
{
	json_error_t jerr;
	json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &jerr);

	if (!j) {
		np_errf(err, "%s: invalid JSON at line %d column %d: %s", what, jerr.line, jerr.column, jerr.text);
		return NULL;
	}
	if (!json_is_array(j) && !json_is_null(j)) {
		json_decref(j);
		np_errf(err, "%s: expected a JSON array", what);
		return NULL;
	}
	return j;
}

int np_docker_targets_from_json(const struct np_docker_config *cfg, const char *containers_json, size_t containers_len,
				const char *networks_json, size_t networks_len, struct np_targets *out,
				struct np_err *err)
{
	json_t *cj = load("container list", containers_json, containers_len, err), *nj = NULL;
	struct container *cs = NULL, **by_id = NULL;
	struct network *nets = NULL;
	size_t nc = 0, nn = 0;
	struct build b = { .cfg = cfg, .out = out, .err = err };
	int rc = -1;

	if (!cj)
		return -1;
	nj = load("network list", networks_json, networks_len, err);
	if (!nj)
		goto out;
	nc = json_is_array(cj) ? json_array_size(cj) : 0;
	nn = json_is_array(nj) ? json_array_size(nj) : 0;
	cs = calloc(nc ? nc : 1, sizeof(*cs));
	by_id = calloc(nc ? nc : 1, sizeof(*by_id));
	nets = calloc(nn ? nn : 1, sizeof(*nets));
	if (!cs || !by_id || !nets) {
		np_errf(err, "out of memory parsing docker containers");
		goto out;
	}
	for (size_t i = 0; i < nn; i++)
		if (parse_network(json_array_get(nj, i), i, &nets[i], err) != 0)
			goto out;
	for (size_t i = 0; i < nc; i++) {
		if (parse_container(json_array_get(cj, i), i, &cs[i], err) != 0)
			goto out;
		by_id[i] = &cs[i];
	}
	qsort(by_id, nc, sizeof(*by_id), cmp_container_id);
	b.nets = nets;
	b.n_nets = nn;
	for (size_t i = 0; i < nc; i++) {
		if (!cs[i].has_name)
			continue;
		if (emit_container(&b, &cs[i], by_id, nc) != 0) {
			np_err_wrap(err, "container %s", cs[i].name);
			goto out;
		}
	}
	rc = 0;
out:
	for (size_t i = 0; nets && i < nn; i++)
		np_labels_free(&nets[i].labels);
	free(nets);
	free(cs);
	free(by_id);
	np_buf_free(&b.addr);
	json_decref(cj);
	json_decref(nj);
	return rc;
}
