/* Configuration values: see value.h. */
#include "agent/config/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/schema.h"
#include "agent/config/stdlib/stdlib.h"

static struct cfg_value null_value = { .kind = CFG_V_NULL, .refs = -1 };
static struct cfg_value true_value = { .kind = CFG_V_BOOL, .refs = -1, .u.b = 1 };
static struct cfg_value false_value = { .kind = CFG_V_BOOL, .refs = -1, .u.b = 0 };

struct cfg_value *cfg_ref(struct cfg_value *v)
{
	if (v && __atomic_load_n(&v->refs, __ATOMIC_RELAXED) >= 0)
		__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
	return v;
}

static void destroy(struct cfg_value *v)
{
	switch (v->kind) {
	case CFG_V_STRING:
		free(v->u.str.s);
		break;
	case CFG_V_SECRET:
		if (v->u.str.s)
			explicit_bzero(v->u.str.s, v->u.str.len);
		free(v->u.str.s);
		break;
	case CFG_V_ARRAY:
		for (size_t i = 0; i < v->u.arr.n; i++)
			cfg_unref(v->u.arr.v[i]);
		free(v->u.arr.v);
		break;
	case CFG_V_OBJECT:
		for (size_t i = 0; i < v->u.obj.n; i++) {
			free(v->u.obj.v[i].key);
			cfg_unref(v->u.obj.v[i].val);
		}
		free(v->u.obj.v);
		break;
	case CFG_V_CAPSULE:
		if (v->u.cap.release)
			v->u.cap.release(v->u.cap.ptr);
		break;
	case CFG_V_TARGETS:
		np_targets_free(&v->u.targets);
		break;
	default:
		break;
	}
	free(v);
}

void cfg_unref(struct cfg_value *v)
{
	if (!v || __atomic_load_n(&v->refs, __ATOMIC_RELAXED) < 0)
		return;
	if (__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0)
		destroy(v);
}

static struct cfg_value *new_value(enum cfg_vkind kind)
{
	struct cfg_value *v = calloc(1, sizeof(*v));

	if (v) {
		v->kind = kind;
		v->refs = 1;
	}
	return v;
}

struct cfg_value *cfg_null(void)
{
	return &null_value;
}

struct cfg_value *cfg_bool(int b)
{
	return b ? &true_value : &false_value;
}

struct cfg_value *cfg_number(struct cfg_number n)
{
	struct cfg_value *v = new_value(CFG_V_NUMBER);

	if (v)
		v->u.num = n;
	return v;
}

struct cfg_value *cfg_int(int64_t i)
{
	return cfg_number((struct cfg_number){ .kind = CFG_NUM_INT, .v.i = i });
}

struct cfg_value *cfg_uint(uint64_t u)
{
	return cfg_number((struct cfg_number){ .kind = CFG_NUM_UINT, .v.u = u });
}

struct cfg_value *cfg_float(double f)
{
	return cfg_number((struct cfg_number){ .kind = CFG_NUM_FLOAT, .v.f = f });
}

struct cfg_value *cfg_string_take(char *s, size_t len)
{
	struct cfg_value *v;

	if (!s)
		return NULL;
	v = new_value(CFG_V_STRING);
	if (!v) {
		free(s);
		return NULL;
	}
	v->u.str.s = s;
	v->u.str.len = len;
	return v;
}

struct cfg_value *cfg_string(const char *s, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return NULL;
	if (len)
		memcpy(copy, s, len);
	copy[len] = '\0';
	return cfg_string_take(copy, len);
}

struct cfg_value *cfg_cstring(const char *s)
{
	return cfg_string(s, strlen(s));
}

struct cfg_value *cfg_secret(const char *s, size_t len)
{
	struct cfg_value *v = cfg_string(s, len);

	if (v)
		v->kind = CFG_V_SECRET;
	return v;
}

struct cfg_value *cfg_function(const struct cfg_builtin *fn)
{
	struct cfg_value *v = new_value(CFG_V_FUNCTION);

	if (v)
		v->u.fn = fn;
	return v;
}

struct cfg_value *cfg_capsule(const char *type, void *ptr, void (*release)(void *ptr))
{
	struct cfg_value *v = new_value(CFG_V_CAPSULE);

	if (!v) {
		if (release)
			release(ptr);
		return NULL;
	}
	v->u.cap.type = type;
	v->u.cap.ptr = ptr;
	v->u.cap.release = release;
	return v;
}

struct cfg_value *cfg_unknown(const struct cfg_type *type)
{
	struct cfg_value *v = new_value(CFG_V_UNKNOWN);

	if (v)
		v->u.unknown = type;
	return v;
}

struct cfg_value *cfg_targets(struct np_targets *ts)
{
	struct cfg_value *v = new_value(CFG_V_TARGETS);

	if (!v) {
		np_targets_free(ts);
		return NULL;
	}
	v->u.targets = *ts;
	*ts = (struct np_targets)NP_TARGETS_INIT;
	return v;
}

struct cfg_value *cfg_array_new(size_t n)
{
	struct cfg_value *v = new_value(CFG_V_ARRAY);

	if (!v)
		return NULL;
	if (n) {
		v->u.arr.v = calloc(n, sizeof(*v->u.arr.v));
		if (!v->u.arr.v) {
			free(v);
			return NULL;
		}
	}
	v->u.arr.n = n;
	return v;
}

struct cfg_value *cfg_object_new(size_t cap_hint)
{
	struct cfg_value *v = new_value(CFG_V_OBJECT);
	size_t cap = cap_hint ? cap_hint : 4;

	if (!v)
		return NULL;
	v->u.obj.v = malloc(cap * sizeof(struct cfg_kv));
	if (!v->u.obj.v) {
		free(v);
		return NULL;
	}
	v->u.obj.cap = cap;
	return v;
}

int cfg_object_put(struct cfg_value *obj, const char *key, struct cfg_value *val)
{
	size_t n = obj->u.obj.n;

	if (!val)
		return -1;
	if (n == obj->u.obj.cap) {
		struct cfg_kv *nv = realloc(obj->u.obj.v, 2 * n * sizeof(*nv));
		if (!nv) {
			cfg_unref(val);
			return -1;
		}
		obj->u.obj.v = nv;
		obj->u.obj.cap = 2 * n;
	}
	char *k = strdup(key);
	if (!k) {
		cfg_unref(val);
		return -1;
	}
	obj->u.obj.v[n].key = k;
	obj->u.obj.v[n].val = val;
	obj->u.obj.n = n + 1;
	return 0;
}

/* Stable merge sort by key, so that among equal keys the last put is last. */
static void sort_kv(struct cfg_kv *v, struct cfg_kv *tmp, size_t n)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	sort_kv(v, tmp, h);
	sort_kv(v + h, tmp, n - h);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = strcmp(v[j].key, v[i].key) < 0 ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof(*v));
}

void cfg_object_done(struct cfg_value *obj)
{
	size_t n = obj->u.obj.n, out = 0;
	int sorted = 1;

	for (size_t i = 1; i < n && sorted; i++)
		if (strcmp(obj->u.obj.v[i - 1].key, obj->u.obj.v[i].key) >= 0)
			sorted = 0;
	if (sorted)
		return;
	struct cfg_kv *tmp = malloc(n * sizeof(*tmp));
	if (tmp) {
		sort_kv(obj->u.obj.v, tmp, n);
		free(tmp);
	} else {
		/* Insertion sort needs no memory; only reached when memory is short. */
		for (size_t i = 1; i < n; i++) {
			struct cfg_kv x = obj->u.obj.v[i];
			size_t j = i;
			while (j > 0 && strcmp(obj->u.obj.v[j - 1].key, x.key) > 0) {
				obj->u.obj.v[j] = obj->u.obj.v[j - 1];
				j--;
			}
			obj->u.obj.v[j] = x;
		}
	}
	/* A repeated key keeps its last value, as Alloy's object literals do. */
	for (size_t i = 0; i < n; i++) {
		if (out && strcmp(obj->u.obj.v[out - 1].key, obj->u.obj.v[i].key) == 0) {
			free(obj->u.obj.v[out - 1].key);
			cfg_unref(obj->u.obj.v[out - 1].val);
			obj->u.obj.v[out - 1] = obj->u.obj.v[i];
			continue;
		}
		obj->u.obj.v[out++] = obj->u.obj.v[i];
	}
	obj->u.obj.n = out;
}

const char *cfg_kind_name(enum cfg_vkind k)
{
	switch (k) {
	case CFG_V_NULL: return "null";
	case CFG_V_NUMBER: return "number";
	case CFG_V_STRING: return "string";
	case CFG_V_BOOL: return "bool";
	case CFG_V_ARRAY: return "array";
	case CFG_V_OBJECT: return "object";
	case CFG_V_FUNCTION: return "function";
	case CFG_V_CAPSULE: return "capsule";
	case CFG_V_SECRET: return "secret";
	case CFG_V_TARGETS: return "array";
	case CFG_V_UNKNOWN: return "unknown";
	}
	return "?";
}

const char *cfg_value_type_name(const struct cfg_value *v)
{
	if (v->kind == CFG_V_UNKNOWN && v->u.unknown)
		return cfg_type_name(v->u.unknown);
	return cfg_kind_name(v->kind);
}

int cfg_is_array(const struct cfg_value *v)
{
	return v->kind == CFG_V_ARRAY || v->kind == CFG_V_TARGETS;
}

size_t cfg_array_len(const struct cfg_value *v)
{
	if (v->kind == CFG_V_ARRAY)
		return v->u.arr.n;
	if (v->kind == CFG_V_TARGETS)
		return v->u.targets.n;
	return 0;
}

static struct cfg_value *labels_to_object(const struct np_labels *ls)
{
	struct cfg_value *obj = cfg_object_new(ls->n);

	if (!obj)
		return NULL;
	/* Label sets are sorted and unique already: append directly. */
	for (size_t i = 0; i < ls->n; i++) {
		struct cfg_value *s = cfg_cstring(ls->v[i].value);
		if (!s || cfg_object_put(obj, ls->v[i].name, s)) {
			cfg_unref(obj);
			return NULL;
		}
	}
	cfg_object_done(obj);
	return obj;
}

struct cfg_value *cfg_array_get(const struct cfg_value *v, size_t i)
{
	if (v->kind == CFG_V_ARRAY && i < v->u.arr.n)
		return cfg_ref(v->u.arr.v[i]);
	if (v->kind == CFG_V_TARGETS && i < v->u.targets.n)
		return labels_to_object(&v->u.targets.v[i]);
	return NULL;
}

struct cfg_value *cfg_object_get(const struct cfg_value *v, const char *key)
{
	size_t lo = 0, hi;

	if (v->kind != CFG_V_OBJECT)
		return NULL;
	hi = v->u.obj.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(v->u.obj.v[mid].key, key);
		if (c == 0)
			return v->u.obj.v[mid].val;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

enum cfg_numkind cfg_num_fit(enum cfg_numkind a, enum cfg_numkind b)
{
	if (a == CFG_NUM_FLOAT || b == CFG_NUM_FLOAT)
		return CFG_NUM_FLOAT;
	if (a == CFG_NUM_INT || b == CFG_NUM_INT)
		return CFG_NUM_INT;
	return CFG_NUM_UINT;
}

int64_t cfg_num_as_int(struct cfg_number n)
{
	switch (n.kind) {
	case CFG_NUM_INT:
		return n.v.i;
	case CFG_NUM_UINT:
		return (int64_t)n.v.u; /* wraps like Go's int64(u) */
	case CFG_NUM_FLOAT:
		if (n.v.f != n.v.f || n.v.f >= 9223372036854775808.0 || n.v.f < -9223372036854775808.0)
			return n.v.f < 0 ? INT64_MIN : INT64_MAX;
		return (int64_t)n.v.f;
	}
	return 0;
}

uint64_t cfg_num_as_uint(struct cfg_number n)
{
	switch (n.kind) {
	case CFG_NUM_INT:
		return (uint64_t)n.v.i;
	case CFG_NUM_UINT:
		return n.v.u;
	case CFG_NUM_FLOAT:
		if (n.v.f != n.v.f || n.v.f < 0)
			return 0;
		if (n.v.f >= 18446744073709551616.0)
			return UINT64_MAX;
		return (uint64_t)n.v.f;
	}
	return 0;
}

double cfg_num_as_float(struct cfg_number n)
{
	switch (n.kind) {
	case CFG_NUM_INT:
		return (double)n.v.i;
	case CFG_NUM_UINT:
		return (double)n.v.u;
	case CFG_NUM_FLOAT:
		return n.v.f;
	}
	return 0;
}

/* Go's strconv.FormatFloat(f, 'f', -1, 64): the shortest decimal that reads back as
 * f, written without an exponent. */
static void format_float(double f, char *buf, size_t cap)
{
	char tmp[64];
	int prec;

	if (f != f) {
		snprintf(buf, cap, "NaN");
		return;
	}
	if (isinf(f)) {
		snprintf(buf, cap, f > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	/* tmp = [-]d.ddde[+-]XX: rebuild it in positional notation. */
	char digits[32];
	size_t nd = 0;
	const char *p = tmp;
	int neg = 0;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	int exp = *p == 'e' ? atoi(p + 1) : 0;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	struct np_buf b = NP_BUF_INIT;
	if (neg)
		np_buf_putc(&b, '-');
	int point = exp + 1; /* digits before the decimal point */
	if (point <= 0) {
		np_buf_puts(&b, "0.");
		for (int i = 0; i < -point; i++)
			np_buf_putc(&b, '0');
		np_buf_append(&b, digits, nd);
	} else if ((size_t)point >= nd) {
		np_buf_append(&b, digits, nd);
		for (size_t i = nd; i < (size_t)point; i++)
			np_buf_putc(&b, '0');
	} else {
		np_buf_append(&b, digits, (size_t)point);
		np_buf_putc(&b, '.');
		np_buf_append(&b, digits + point, nd - (size_t)point);
	}
	snprintf(buf, cap, "%s", b.p ? b.p : "0");
	np_buf_free(&b);
}

void cfg_num_format(struct cfg_number n, char *buf, size_t cap)
{
	switch (n.kind) {
	case CFG_NUM_INT:
		snprintf(buf, cap, "%lld", (long long)n.v.i);
		break;
	case CFG_NUM_UINT:
		snprintf(buf, cap, "%llu", (unsigned long long)n.v.u);
		break;
	case CFG_NUM_FLOAT:
		format_float(n.v.f, buf, cap);
		break;
	}
}

static int num_equal(struct cfg_number a, struct cfg_number b)
{
	switch (cfg_num_fit(a.kind, b.kind)) {
	case CFG_NUM_UINT:
		return cfg_num_as_uint(a) == cfg_num_as_uint(b);
	case CFG_NUM_INT:
		return cfg_num_as_int(a) == cfg_num_as_int(b);
	case CFG_NUM_FLOAT:
		return cfg_num_as_float(a) == cfg_num_as_float(b);
	}
	return 0;
}

static int labels_equal_object(const struct np_labels *ls, const struct cfg_value *obj)
{
	if (obj->kind != CFG_V_OBJECT || obj->u.obj.n != ls->n)
		return 0;
	/* Both are sorted by name (strcmp order). */
	for (size_t i = 0; i < ls->n; i++) {
		const struct cfg_kv *kv = &obj->u.obj.v[i];
		if (strcmp(kv->key, ls->v[i].name) != 0 || kv->val->kind != CFG_V_STRING ||
		    strlen(ls->v[i].value) != kv->val->u.str.len || memcmp(kv->val->u.str.s, ls->v[i].value, kv->val->u.str.len))
			return 0;
	}
	return 1;
}

int cfg_value_contains_unknown(const struct cfg_value *v)
{
	if (v->kind == CFG_V_UNKNOWN)
		return 1;
	if (v->kind == CFG_V_ARRAY)
		for (size_t i = 0; i < v->u.arr.n; i++)
			if (cfg_value_contains_unknown(v->u.arr.v[i]))
				return 1;
	if (v->kind == CFG_V_OBJECT)
		for (size_t i = 0; i < v->u.obj.n; i++)
			if (cfg_value_contains_unknown(v->u.obj.v[i].val))
				return 1;
	return 0;
}

int cfg_value_equal(const struct cfg_value *a, const struct cfg_value *b)
{
	if (a == b)
		return 1;
	if (a->kind == CFG_V_TARGETS || b->kind == CFG_V_TARGETS) {
		if (a->kind == CFG_V_TARGETS && b->kind == CFG_V_TARGETS)
			return np_targets_equal(&a->u.targets, &b->u.targets);
		const struct cfg_value *t = a->kind == CFG_V_TARGETS ? a : b, *o = t == a ? b : a;
		if (o->kind != CFG_V_ARRAY || o->u.arr.n != t->u.targets.n)
			return 0;
		for (size_t i = 0; i < o->u.arr.n; i++)
			if (!labels_equal_object(&t->u.targets.v[i], o->u.arr.v[i]))
				return 0;
		return 1;
	}
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case CFG_V_NULL:
		return 1;
	case CFG_V_NUMBER:
		return num_equal(a->u.num, b->u.num);
	case CFG_V_BOOL:
		return a->u.b == b->u.b;
	case CFG_V_STRING:
	case CFG_V_SECRET:
		return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
	case CFG_V_ARRAY:
		if (a->u.arr.n != b->u.arr.n)
			return 0;
		for (size_t i = 0; i < a->u.arr.n; i++)
			if (!cfg_value_equal(a->u.arr.v[i], b->u.arr.v[i]))
				return 0;
		return 1;
	case CFG_V_OBJECT:
		if (a->u.obj.n != b->u.obj.n)
			return 0;
		for (size_t i = 0; i < a->u.obj.n; i++)
			if (strcmp(a->u.obj.v[i].key, b->u.obj.v[i].key) ||
			    !cfg_value_equal(a->u.obj.v[i].val, b->u.obj.v[i].val))
				return 0;
		return 1;
	case CFG_V_FUNCTION:
		return a->u.fn == b->u.fn;
	case CFG_V_CAPSULE:
		return a->u.cap.ptr == b->u.cap.ptr && strcmp(a->u.cap.type, b->u.cap.type) == 0;
	case CFG_V_UNKNOWN:
		return 0; /* unknown values are never known to be equal */
	case CFG_V_TARGETS:
		break;
	}
	return 0;
}

static void format_string(struct np_buf *out, const char *s, size_t len, int brief)
{
	size_t limit = brief && len > 60 ? 57 : len;

	np_buf_putc(out, '"');
	for (size_t i = 0; i < limit; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': np_buf_puts(out, "\\\""); break;
		case '\\': np_buf_puts(out, "\\\\"); break;
		case '\n': np_buf_puts(out, "\\n"); break;
		case '\t': np_buf_puts(out, "\\t"); break;
		case '\r': np_buf_puts(out, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				np_buf_printf(out, "\\x%02x", c);
			else
				np_buf_putc(out, (char)c);
		}
	}
	if (limit < len)
		np_buf_puts(out, "...");
	np_buf_putc(out, '"');
}

static void format_key(struct np_buf *out, const char *key)
{
	if (cfg_is_ident(key, strlen(key)))
		np_buf_puts(out, key);
	else
		format_string(out, key, strlen(key), 0);
}

void cfg_value_format(const struct cfg_value *v, struct np_buf *out, int brief)
{
	char num[64];

	switch (v->kind) {
	case CFG_V_NULL:
		np_buf_puts(out, "null");
		break;
	case CFG_V_NUMBER:
		cfg_num_format(v->u.num, num, sizeof(num));
		np_buf_puts(out, num);
		break;
	case CFG_V_STRING:
		format_string(out, v->u.str.s, v->u.str.len, brief);
		break;
	case CFG_V_BOOL:
		np_buf_puts(out, v->u.b ? "true" : "false");
		break;
	case CFG_V_SECRET:
		np_buf_puts(out, "(secret)");
		break;
	case CFG_V_FUNCTION:
		np_buf_printf(out, "function(%s)", v->u.fn ? cfg_builtin_name(v->u.fn) : "?");
		break;
	case CFG_V_CAPSULE:
		np_buf_printf(out, "capsule(\"%s\")", v->u.cap.type);
		break;
	case CFG_V_UNKNOWN:
		np_buf_printf(out, "(unknown %s)", v->u.unknown ? cfg_type_name(v->u.unknown) : "value");
		break;
	case CFG_V_ARRAY:
	case CFG_V_TARGETS: {
		size_t n = cfg_array_len(v);
		if (brief && n > 0) {
			np_buf_puts(out, "[...]");
			break;
		}
		np_buf_putc(out, '[');
		for (size_t i = 0; i < n; i++) {
			if (i)
				np_buf_puts(out, ", ");
			if (v->kind == CFG_V_ARRAY) {
				cfg_value_format(v->u.arr.v[i], out, brief);
			} else {
				const struct np_labels *ls = &v->u.targets.v[i];
				np_buf_putc(out, '{');
				for (size_t j = 0; j < ls->n; j++) {
					np_buf_puts(out, j ? ", " : " ");
					format_key(out, ls->v[j].name);
					np_buf_puts(out, " = ");
					format_string(out, ls->v[j].value, strlen(ls->v[j].value), brief);
				}
				np_buf_puts(out, ls->n ? " }" : "}");
			}
		}
		np_buf_putc(out, ']');
		break;
	}
	case CFG_V_OBJECT:
		if (brief && v->u.obj.n > 0) {
			np_buf_puts(out, "{...}");
			break;
		}
		np_buf_putc(out, '{');
		for (size_t i = 0; i < v->u.obj.n; i++) {
			np_buf_puts(out, i ? ", " : " ");
			format_key(out, v->u.obj.v[i].key);
			np_buf_puts(out, " = ");
			cfg_value_format(v->u.obj.v[i].val, out, brief);
		}
		np_buf_puts(out, v->u.obj.n ? " }" : "}");
		break;
	}
}

const char *cfg_value_brief(const struct cfg_value *v, char *buf, size_t cap)
{
	struct np_buf b = NP_BUF_INIT;

	cfg_value_format(v, &b, 1);
	snprintf(buf, cap, "%s", b.p && !b.failed ? b.p : "?");
	np_buf_free(&b);
	return buf;
}
