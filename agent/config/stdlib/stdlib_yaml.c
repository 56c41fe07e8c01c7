/* encoding.from_yaml (and its deprecated alias yaml_decode): YAML to Alloy values
 * with the semantics Alloy gets from gopkg.in/yaml.v3 v3.0.1 (Unmarshal into an
 * interface{}):
 *  - only the first document is decoded (later ones are not even parsed); empty
 *    input is null;
 *  - plain scalars resolve as YAML 1.2 core schema does in yaml.v3: null, bools
 *    (true/True/TRUE...), ints (0x, 0o, 0b, legacy 0777 octal, `_` separators; int64,
 *    then uint64, then float), floats (.inf, .nan), timestamps (written back as
 *    RFC 3339 text, as Alloy prints a time.Time), everything else a string; explicit
 *    tags (!!int, !!str, !!binary, ...) are honoured or refused with yaml.v3's text;
 *  - mappings whose keys are all strings become objects; any other mapping becomes
 *    an opaque capsule("map[interface {}]interface {}"), as in Alloy;
 *  - anchors, aliases and `<<` merge keys, with yaml.v3's checks (unknown anchor,
 *    an anchor that contains itself, excessive aliasing, duplicate keys).
 * Errors are yaml.v3's messages ("yaml: line 2: ..."). The tree is built from
 * libyaml's events (the parser yaml.v3 itself is a port of), then decoded. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
#include "lib/grow.h"
#include "lib/gostr.h"

#define LONG_TAG_PREFIX "tag:yaml.org,2002:"
#define GENERAL_MAP_TYPE "map[interface {}]interface {}"
#define MAX_TYPE_ERRORS 100

enum ykind { Y_SCALAR, Y_SEQ, Y_MAP, Y_ALIAS };

struct ynode {
	enum ykind kind;
	char *tag;	   /* short form ("!!int", "!foo") as yaml.v3's parser sets it; NULL for aliases */
	char *value;	   /* scalar text, or the anchor an alias names (owned) */
	size_t len;
	int line;	   /* 1-based */
	size_t seq;	   /* creation order, for stable sorting */
	struct ynode **kids; /* sequence items; mapping keys and values alternating (borrowed) */
	size_t n, cap;
	struct ynode *target; /* of an alias */
	int expanding;	      /* an alias being decoded: meeting it again is a cycle */
};

struct anchor {
	char *name; /* owned */
	struct ynode *node;
};

/* Owns every node of one document. */
struct ydoc {
	struct ynode **all;
	size_t n, cap;
	struct anchor *anchors;
	size_t n_anchors, anchors_cap;
};

static void ydoc_free(struct ydoc *doc)
{
	for (size_t i = 0; i < doc->n; i++) {
		free(doc->all[i]->tag);
		free(doc->all[i]->value);
		free(doc->all[i]->kids);
		free(doc->all[i]);
	}
	for (size_t i = 0; i < doc->n_anchors; i++)
		free(doc->anchors[i].name);
	free(doc->all);
	free(doc->anchors);
}

/* ---- scalar resolution (yaml.v3 resolve.go) ---- */

enum rkind { R_NULL, R_BOOL, R_INT, R_UINT, R_FLOAT, R_STR, R_TIME };

struct yres {
	enum rkind kind;
	const char *tag; /* short tag the value resolved to */
	int b;
	int64_t i;
	uint64_t u;
	double f;
	char time[48]; /* R_TIME: RFC 3339 text */
};

static char *short_tag(const char *tag)
{
	size_t p = strlen(LONG_TAG_PREFIX);
	char *s;

	if (strncmp(tag, LONG_TAG_PREFIX, p) != 0)
		return strdup(tag);
	s = malloc(strlen(tag) - p + 3);
	if (s)
		sprintf(s, "!!%s", tag + p);
	return s;
}

static int tag_is(const char *tag, const char *name)
{
	return tag && strcmp(tag, name) == 0;
}

/* strconv.ParseUint(s, base, 64); base 0 takes the base from a 0b/0o/0x/0 prefix.
 * The text has no underscores (yaml.v3 removed them). 0, or -1 (syntax or range). */
static int go_parse_uint(const char *s, size_t n, int base, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -1;
	if (base == 0) {
		base = 10;
		if (s[0] == '0') {
			char p = (char)(n >= 3 ? s[1] | 0x20 : 0);
			base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 8;
			s += p == 'b' || p == 'o' || p == 'x' ? 2 : 1;
			n -= p == 'b' || p == 'o' || p == 'x' ? 2 : 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		char ch = s[i], lc = (char)(ch | 0x20);
		unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0') : lc >= 'a' && lc <= 'z' ? (unsigned)(lc - 'a' + 10) : 99;
		if (d >= (unsigned)base || v > (UINT64_MAX - d) / (unsigned)base)
			return -1;
		v = v * (unsigned)base + d;
	}
	*out = v;
	return 0;
}

/* strconv.ParseInt(s, base, 64): an optional sign, then as go_parse_uint. */
static int go_parse_int(const char *s, size_t n, int base, int64_t *out)
{
	uint64_t u;
	int neg = n > 0 && s[0] == '-';

	if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		s++;
		n--;
	}
	if (go_parse_uint(s, n, base, &u) || u > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
		return -1;
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	return 0;
}

/* yaml.v3's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int yaml_style_float(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	} else {
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
		if (i < n && s[i] == '.')
			for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
				;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	return i == n;
}

/* strconv.ParseFloat on text yaml_style_float accepted: fails only on overflow. */
static int parse_float(const char *s, double *out)
{
	errno = 0;
	*out = strtod(s, NULL);
	return errno == ERANGE && isinf(*out) ? -1 : 0;
}

/* 1 or 2 digits at s[*i] (Go's getnum with fixed = false). */
static int get_num(const char *s, size_t n, size_t *i, int *out)
{
	if (*i >= n || s[*i] < '0' || s[*i] > '9')
		return -1;
	*out = s[(*i)++] - '0';
	if (*i < n && s[*i] >= '0' && s[*i] <= '9')
		*out = *out * 10 + (s[(*i)++] - '0');
	return 0;
}

static int days_in(int month, int year)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return month == 2 && leap ? 29 : days[month - 1];
}

/* yaml.v3's parseTimestamp (time.Parse with "2006-1-2T15:4:5.999999999Z07:00", the
 * same with a lower-case t, "2006-1-2 15:4:5.999999999" and "2006-1-2"), written as
 * time.Time's MarshalText writes it. 1 when s is a timestamp. */
static int parse_timestamp(const char *s, size_t n, char *out, size_t cap)
{
	int year = 0, mon, day, hh = 0, mm = 0, ss = 0, off = 0;
	long nsec = 0;
	size_t i = 0;

	for (; i < 4; i++) {
		if (i >= n || s[i] < '0' || s[i] > '9')
			return 0;
		year = year * 10 + (s[i] - '0');
	}
	if (i >= n || s[i++] != '-' || get_num(s, n, &i, &mon) || mon < 1 || mon > 12 || i >= n || s[i++] != '-' ||
	    get_num(s, n, &i, &day) || day < 1 || day > days_in(mon, year))
		return 0;
	if (i < n) {
		char sep = s[i++];
		if ((sep != 'T' && sep != 't' && sep != ' ') || get_num(s, n, &i, &hh) || hh > 23 || i >= n ||
		    s[i++] != ':' || get_num(s, n, &i, &mm) || mm > 59 || i >= n || s[i++] != ':' ||
		    get_num(s, n, &i, &ss) || ss > 59)
			return 0;
		if (i + 1 < n && (s[i] == '.' || s[i] == ',') && s[i + 1] >= '0' && s[i + 1] <= '9') {
			int digits = 0;
			for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
				if (digits < 9)
					nsec = nsec * 10 + (s[i] - '0');
			for (; digits < 9; digits++)
				nsec *= 10;
		}
		if (sep != ' ') {
			if (i < n && s[i] == 'Z') {
				i++;
			} else {
				/* Z07:00 takes exactly "Z" or ±hh:mm. */
				const char *z = s + i;
				if (i + 6 > n || (z[0] != '+' && z[0] != '-') || z[3] != ':')
					return 0;
				for (int k = 1; k < 6; k++)
					if (k != 3 && (z[k] < '0' || z[k] > '9'))
						return 0;
				int oh = (z[1] - '0') * 10 + (z[2] - '0'), om = (z[4] - '0') * 10 + (z[5] - '0');
				if (oh > 24 || om > 60)
					return 0;
				off = (s[i] == '-' ? -1 : 1) * (oh * 60 + om);
				i += 6;
			}
		}
	}
	if (i != n)
		return 0;
	int len = snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d", year, mon, day, hh, mm, ss);
	if (nsec) {
		char frac[24];
		snprintf(frac, sizeof(frac), ".%09ld", nsec);
		size_t fl = strlen(frac);
		while (frac[fl - 1] == '0')
			frac[--fl] = '\0';
		len += snprintf(out + len, cap - (size_t)len, "%s", frac);
	}
	if (off == 0)
		snprintf(out + len, cap - (size_t)len, "Z");
	else
		snprintf(out + len, cap - (size_t)len, "%c%02d:%02d", off < 0 ? '-' : '+', abs(off) / 60, abs(off) % 60);
	return 1;
}

/* The tag and value a scalar without an explicit tag resolves to (timestamps only
 * when try_time). in is NUL-terminated. -1 on allocation failure. */
static int resolve_plain(const char *in, size_t n, int try_time, struct yres *r)
{
	static const struct {
		const char *text;
		enum rkind kind;
		double f;
		int b;
	} table[] = {
		{ "true", R_BOOL, 0, 1 },     { "True", R_BOOL, 0, 1 },	      { "TRUE", R_BOOL, 0, 1 },
		{ "false", R_BOOL, 0, 0 },    { "False", R_BOOL, 0, 0 },      { "FALSE", R_BOOL, 0, 0 },
		{ "", R_NULL, 0, 0 },	      { "~", R_NULL, 0, 0 },	      { "null", R_NULL, 0, 0 },
		{ "Null", R_NULL, 0, 0 },     { "NULL", R_NULL, 0, 0 },	      { ".nan", R_FLOAT, NAN, 0 },
		{ ".NaN", R_FLOAT, NAN, 0 },  { ".NAN", R_FLOAT, NAN, 0 },    { ".inf", R_FLOAT, INFINITY, 0 },
		{ ".Inf", R_FLOAT, INFINITY, 0 }, { ".INF", R_FLOAT, INFINITY, 0 }, { "+.inf", R_FLOAT, INFINITY, 0 },
		{ "+.Inf", R_FLOAT, INFINITY, 0 }, { "+.INF", R_FLOAT, INFINITY, 0 }, { "-.inf", R_FLOAT, -INFINITY, 0 },
		{ "-.Inf", R_FLOAT, -INFINITY, 0 }, { "-.INF", R_FLOAT, -INFINITY, 0 },
	};
	unsigned char c = n ? (unsigned char)in[0] : 'N';
	char hint = c == '+' || c == '-' ? 'S' : c >= '0' && c <= '9' ? 'D' : c == '.' ? '.' : strchr("yYnNtTfFoO~", c) && c ? 'M' : 0;

	r->kind = R_STR;
	r->tag = "!!str";
	if (!hint)
		return 0;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strlen(table[i].text) == n && memcmp(table[i].text, in, n) == 0) {
			r->kind = table[i].kind;
			r->tag = r->kind == R_BOOL ? "!!bool" : r->kind == R_NULL ? "!!null" : "!!float";
			r->f = table[i].f;
			r->b = table[i].b;
			return 0;
		}
	}
	if (hint == '.') {
		if (yaml_style_float(in, n) && parse_float(in, &r->f) == 0) {
			r->kind = R_FLOAT;
			r->tag = "!!float";
		}
		return 0;
	}
	if (hint != 'D' && hint != 'S')
		return 0;
	if (try_time && parse_timestamp(in, n, r->time, sizeof(r->time))) {
		r->kind = R_TIME;
		r->tag = "!!timestamp";
		return 0;
	}
	char *plain = malloc(n + 1);
	size_t pn = 0;
	if (!plain)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (in[i] != '_')
			plain[pn++] = in[i];
	plain[pn] = '\0';
	r->tag = "!!int";
	if (go_parse_int(plain, pn, 0, &r->i) == 0) {
		r->kind = R_INT;
	} else if (go_parse_uint(plain, pn, 0, &r->u) == 0) {
		r->kind = R_UINT;
	} else if (yaml_style_float(plain, pn) && parse_float(plain, &r->f) == 0) {
		r->kind = R_FLOAT;
		r->tag = "!!float";
	} else if (pn >= 2 && plain[0] == '0' && (plain[1] == 'b' || plain[1] == 'o')) {
		/* What ParseInt(s, 0, 64) refused: yaml.v3 retries the digits after the prefix
		 * in that base, signs included. */
		int base = plain[1] == 'b' ? 2 : 8;
		if (go_parse_int(plain + 2, pn - 2, base, &r->i) == 0)
			r->kind = R_INT;
		else if (go_parse_uint(plain + 2, pn - 2, base, &r->u) == 0)
			r->kind = R_UINT;
	} else if (pn >= 3 && plain[0] == '-' && plain[1] == '0' && (plain[2] == 'b' || plain[2] == 'o')) {
		int base = plain[2] == 'b' ? 2 : 8;
		plain[2] = '-';
		if (go_parse_int(plain + 2, pn - 2, base, &r->i) == 0)
			r->kind = R_INT;
	}
	if (r->kind == R_STR)
		r->tag = "!!str";
	free(plain);
	return 0;
}

/* resolve(tag, in) of yaml.v3: err receives the message when an explicit tag does
 * not fit the text. -1 on error. */
static int resolve(const char *tag, const char *in, size_t n, struct yres *r, struct np_buf *err)
{
	int resolvable = tag_is(tag, "") || tag_is(tag, "!!str") || tag_is(tag, "!!bool") || tag_is(tag, "!!int") ||
			 tag_is(tag, "!!float") || tag_is(tag, "!!null") || tag_is(tag, "!!timestamp");

	if (!resolvable || tag_is(tag, "!!str")) {
		r->kind = R_STR;
		r->tag = tag;
		return 0;
	}
	if (resolve_plain(in, n, tag_is(tag, "") || tag_is(tag, "!!timestamp"), r)) {
		np_buf_puts(err, "out of memory");
		return -1;
	}
	if (tag_is(tag, "") || strcmp(tag, r->tag) == 0)
		return 0;
	if (tag_is(tag, "!!float") && r->kind == R_INT) {
		r->kind = R_FLOAT;
		r->f = (double)r->i;
		return 0;
	}
	np_buf_printf(err, "yaml: cannot decode %s `%.*s` as a %s", r->tag, (int)n, in, tag);
	return -1;
}

/* ---- the node tree (yaml.v3's parser) ---- */

struct yparse {
	yaml_parser_t parser;
	yaml_event_t event;
	int have_event;
	struct ydoc *doc;
	struct np_buf *err;
};

/* yaml.v3's parser.fail: the line of the context mark (or of the problem), 0-based
 * for parser errors and 1-based for scanner errors, as yaml.v3 reports them. */
static int parse_fail(struct yparse *p)
{
	size_t line = 0;

	if (p->parser.context_mark.line != 0)
		line = p->parser.context_mark.line;
	else if (p->parser.problem_mark.line != 0)
		line = p->parser.problem_mark.line;
	if (line != 0 && p->parser.error == YAML_SCANNER_ERROR)
		line++;
	np_buf_puts(p->err, "yaml: ");
	if (line != 0)
		np_buf_printf(p->err, "line %zu: ", line);
	np_buf_puts(p->err, p->parser.problem ? p->parser.problem : "unknown problem parsing YAML content");
	return -1;
}

static int next_event(struct yparse *p)
{
	if (p->have_event) {
		yaml_event_delete(&p->event);
		p->have_event = 0;
	}
	if (!yaml_parser_parse(&p->parser, &p->event) || p->parser.error != YAML_NO_ERROR)
		return parse_fail(p);
	p->have_event = 1;
	return 0;
}

static struct ynode *new_node(struct yparse *p, enum ykind kind, const char *value, size_t len)
{
	struct ynode *n = calloc(1, sizeof(*n));

	if (!n || np_grow((void **)&p->doc->all, &p->doc->cap, p->doc->n + 1, sizeof(*p->doc->all))) {
		free(n);
		return NULL;
	}
	p->doc->all[p->doc->n] = n;
	n->seq = p->doc->n++;
	n->kind = kind;
	n->line = (int)p->event.start_mark.line + 1;
	n->len = len;
	n->value = malloc(len + 1);
	if (!n->value)
		return NULL;
	if (len) /* value may be NULL for an empty node */
		memcpy(n->value, value, len);
	n->value[len] = '\0';
	return n;
}

/* yaml.v3's parser.node: an explicit tag (other than "!") wins, then the default
 * tag of the kind, then what a plain scalar resolves to. */
static int set_tag(struct ynode *n, const yaml_char_t *explicit, const char *default_tag)
{
	struct yres r;

	if (explicit && strcmp((const char *)explicit, "!") != 0)
		n->tag = short_tag((const char *)explicit);
	else if (default_tag)
		n->tag = strdup(default_tag);
	else if (resolve_plain(n->value, n->len, 1, &r) == 0)
		n->tag = strdup(r.tag);
	return n->tag ? 0 : -1;
}

static int add_anchor(struct ydoc *doc, const yaml_char_t *name, struct ynode *n)
{
	if (!name)
		return 0;
	if (np_grow((void **)&doc->anchors, &doc->anchors_cap, doc->n_anchors + 1, sizeof(*doc->anchors)))
		return -1;
	doc->anchors[doc->n_anchors].name = strdup((const char *)name);
	if (!doc->anchors[doc->n_anchors].name)
		return -1;
	doc->anchors[doc->n_anchors++].node = n;
	return 0;
}

static struct ynode *find_anchor(struct ydoc *doc, const char *name)
{
	for (size_t i = doc->n_anchors; i-- > 0;)
		if (strcmp(doc->anchors[i].name, name) == 0)
			return doc->anchors[i].node;
	return NULL;
}

static int oom(struct yparse *p)
{
	np_buf_puts(p->err, "out of memory");
	return -1;
}

/* The node a scalar, alias or collection start event makes (anchored when it has an
 * anchor), or NULL after reporting. */
static struct ynode *node_of_event(struct yparse *p, yaml_event_t *e)
{
	struct ynode *n;

	switch (e->type) {
	case YAML_SCALAR_EVENT: {
		int plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		const char *v = (const char *)e->data.scalar.value;
		size_t len = e->data.scalar.length;
		n = new_node(p, Y_SCALAR, v, len);
		if (!n || set_tag(n, e->data.scalar.tag, !plain ? "!!str" : len == 2 && memcmp(v, "<<", 2) == 0 ? "!!merge" : NULL) ||
		    add_anchor(p->doc, e->data.scalar.anchor, n)) {
			oom(p);
			return NULL;
		}
		return n;
	}
	case YAML_ALIAS_EVENT: {
		const char *name = (const char *)e->data.alias.anchor;
		n = new_node(p, Y_ALIAS, name, strlen(name));
		if (!n) {
			oom(p);
			return NULL;
		}
		n->target = find_anchor(p->doc, name);
		if (!n->target) {
			np_buf_printf(p->err, "yaml: unknown anchor '%s' referenced", name);
			return NULL;
		}
		return n;
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		int seq = e->type == YAML_SEQUENCE_START_EVENT;
		n = new_node(p, seq ? Y_SEQ : Y_MAP, "", 0);
		if (!n || set_tag(n, seq ? e->data.sequence_start.tag : e->data.mapping_start.tag, seq ? "!!seq" : "!!map") ||
		    add_anchor(p->doc, seq ? e->data.sequence_start.anchor : e->data.mapping_start.anchor, n)) {
			oom(p);
			return NULL;
		}
		return n;
	}
	default:
		return NULL;
	}
}

/* The events of one node (and its children) after the current one: the tree, built
 * with an explicit stack so that nesting costs no C stack. */
static int parse_node(struct yparse *p, struct ynode **root)
{
	struct ynode **open = NULL;
	size_t depth = 0, open_cap = 0;
	int rc = -1;

	*root = NULL;
	for (;;) {
		yaml_event_t *e = &p->event;
		struct ynode *n = NULL;
		if (next_event(p))
			goto out;
		switch (e->type) {
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (!(n = node_of_event(p, e)))
				goto out;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			if (depth == 0) {
				rc = 0;
				goto out;
			}
			continue;
		default:
			np_buf_printf(p->err, "yaml: unexpected event %d", (int)e->type);
			goto out;
		}
		if (depth == 0) {
			*root = n;
		} else {
			struct ynode *parent = open[depth - 1];
			if (np_grow((void **)&parent->kids, &parent->cap, parent->n + 1, sizeof(*parent->kids))) {
				oom(p);
				goto out;
			}
			parent->kids[parent->n++] = n;
		}
		if (n->kind == Y_SEQ || n->kind == Y_MAP) {
			if (depth >= CFG_MAX_DATA_DEPTH) {
				np_buf_printf(p->err, "nesting deeper than %d levels is not supported by nodeprof",
					      CFG_MAX_DATA_DEPTH);
				goto out;
			}
			if (np_grow((void **)&open, &open_cap, depth + 1, sizeof(*open))) {
				oom(p);
				goto out;
			}
			open[depth++] = n;
		} else if (depth == 0) {
			rc = 0;
			goto out;
		}
	}
out:
	free(open);
	return rc;
}

/* The first document of s (NULL when there is none). 0, or -1 with err set. */
static int parse_document(const char *s, size_t len, struct ydoc *doc, struct ynode **root, struct np_buf *err)
{
	struct yparse p = { .doc = doc, .err = err };
	int rc = -1;

	*root = NULL;
	if (!yaml_parser_initialize(&p.parser)) {
		np_buf_puts(err, "out of memory");
		return -1;
	}
	/* yaml.v3 reads empty input as a newline. */
	yaml_parser_set_input_string(&p.parser, (const unsigned char *)(len ? s : "\n"), len ? len : 1);
	if (next_event(&p))
		goto out;
	if (next_event(&p))
		goto out;
	if (p.event.type == YAML_STREAM_END_EVENT) {
		rc = 0;
		goto out;
	}
	if (parse_node(&p, root) || next_event(&p))
		goto out;
	if (p.event.type != YAML_DOCUMENT_END_EVENT) {
		np_buf_puts(err, "yaml: expected DOCUMENT-END event");
		goto out;
	}
	rc = 0;
out:
	if (p.have_event)
		yaml_event_delete(&p.event);
	yaml_parser_delete(&p.parser);
	return rc;
}

/* ---- decoding (yaml.v3's decoder into an interface{}) ---- */

/* A mapping with a key that is not a string: Alloy sees it as an opaque capsule. */
struct general_map {
	struct gm_pair {
		struct cfg_value *k, *v; /* owned references */
	} *pairs;
	size_t n, cap;
};

static void general_map_free(void *ptr)
{
	struct general_map *m = ptr;

	for (size_t i = 0; i < m->n; i++) {
		cfg_unref(m->pairs[i].k);
		cfg_unref(m->pairs[i].v);
	}
	free(m->pairs);
	free(m);
}

struct ydec {
	struct np_buf *err;	/* the fatal error */
	struct np_buf terrors;	/* yaml.v3's TypeError lines, "\n  " apart */
	size_t n_terrors;
	long decode_count, alias_count;
	int alias_depth;
};

/* Keys already set, when merging (`<<`): yaml.v3's mergedFields. */
struct key_set {
	struct cfg_value **v; /* owned references */
	size_t n, cap;
};

/* Go map-key equality of decoded keys: same type and value (1 and 1.0 differ). */
static int key_equal(const struct cfg_value *a, const struct cfg_value *b)
{
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case CFG_V_NULL: return 1;
	case CFG_V_BOOL: return a->u.b == b->u.b;
	case CFG_V_STRING: return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
	case CFG_V_NUMBER:
		if (a->u.num.kind != b->u.num.kind)
			return 0;
		return a->u.num.kind == CFG_NUM_FLOAT ? a->u.num.v.f == b->u.num.v.f
		       : a->u.num.kind == CFG_NUM_INT ? a->u.num.v.i == b->u.num.v.i
						      : a->u.num.v.u == b->u.num.v.u;
	default: return 0;
	}
}

static int key_set_has(const struct key_set *s, const struct cfg_value *k)
{
	for (size_t i = 0; i < s->n; i++)
		if (key_equal(s->v[i], k))
			return 1;
	return 0;
}

static int key_set_add(struct key_set *s, struct cfg_value *k)
{
	if (np_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -1;
	s->v[s->n++] = cfg_ref(k);
	return 0;
}

static void key_set_free(struct key_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		cfg_unref(s->v[i]);
	free(s->v);
}

/* Go's %#v of a decoded value, for yaml.v3's "invalid map key" message. */
static void go_sharp_v(struct np_buf *b, const struct cfg_value *v)
{
	char num[400];

	switch (v->kind) {
	case CFG_V_NULL: np_buf_puts(b, "interface {}(nil)"); return;
	case CFG_V_BOOL: np_buf_puts(b, v->u.b ? "true" : "false"); return;
	case CFG_V_STRING: np_go_quote(b, v->u.str.s, v->u.str.len); return;
	case CFG_V_NUMBER:
		if (v->u.num.kind == CFG_NUM_UINT)
			np_buf_printf(b, "0x%llx", (unsigned long long)v->u.num.v.u);
		else {
			cfg_num_format(v->u.num, num, sizeof(num));
			np_buf_puts(b, num);
		}
		return;
	case CFG_V_ARRAY:
		np_buf_puts(b, "[]interface {}{");
		for (size_t i = 0; i < v->u.arr.n; i++) {
			np_buf_puts(b, i ? ", " : "");
			go_sharp_v(b, v->u.arr.v[i]);
		}
		np_buf_putc(b, '}');
		return;
	case CFG_V_OBJECT:
		np_buf_puts(b, "map[string]interface {}{");
		for (size_t i = 0; i < v->u.obj.n; i++) {
			np_buf_puts(b, i ? ", " : "");
			np_go_quote(b, v->u.obj.v[i].key, strlen(v->u.obj.v[i].key));
			np_buf_putc(b, ':');
			go_sharp_v(b, v->u.obj.v[i].val);
		}
		np_buf_putc(b, '}');
		return;
	case CFG_V_CAPSULE: {
		const struct general_map *m = v->u.cap.ptr;
		np_buf_puts(b, GENERAL_MAP_TYPE "{");
		for (size_t i = 0; i < m->n; i++) {
			np_buf_puts(b, i ? ", " : "");
			go_sharp_v(b, m->pairs[i].k);
			np_buf_putc(b, ':');
			go_sharp_v(b, m->pairs[i].v);
		}
		np_buf_putc(b, '}');
		return;
	}
	default: np_buf_puts(b, "?"); return;
	}
}

static const struct ynode *deref(const struct ynode *n)
{
	while (n->kind == Y_ALIAS)
		n = n->target;
	return n;
}

/* Node.ShortTag: the tag of what the node holds (quoted scalars are strings). */
static const char *node_short_tag(const struct ynode *n)
{
	return deref(n)->tag;
}

static void type_error(struct ydec *d, const struct ynode *n, const char *tag, const char *into)
{
	const char *t = n->tag ? n->tag : tag;

	if (d->n_terrors++ >= MAX_TYPE_ERRORS)
		return;
	np_buf_printf(&d->terrors, "%sline %d: cannot unmarshal %s", d->n_terrors > 1 ? "\n  " : "", n->line, t);
	if (strcmp(t, "!!seq") != 0 && strcmp(t, "!!map") != 0) {
		if (n->len > 10)
			np_buf_printf(&d->terrors, " `%.7s...`", n->value);
		else
			np_buf_printf(&d->terrors, " `%s`", n->value);
	}
	np_buf_printf(&d->terrors, " into %s", into);
}

enum { D_FATAL = -1, D_SKIP = 0, D_OK = 1 };

/* What a map is decoded into: an object (string keys) or a general map. */
struct map_target {
	struct cfg_value *obj;
	struct general_map *gm;
};

static int unmarshal(struct ydec *d, const struct ynode *n, int string_key, int depth, struct cfg_value **out);

static int fatal(struct ydec *d, const char *msg)
{
	if (d->err->len == 0)
		np_buf_puts(d->err, msg);
	return D_FATAL;
}

static int decode_scalar(struct ydec *d, const struct ynode *n, int string_key, struct cfg_value **out)
{
	struct yres r;
	int quoted = tag_is(n->tag, "!!str");

	*out = NULL;
	if (quoted) {
		r.kind = R_STR;
		r.tag = "!!str";
	} else if (resolve(n->tag, n->value, n->len, &r, d->err)) {
		return D_FATAL;
	}
	if (tag_is(r.tag, "!!binary") && !quoted) {
		struct np_buf bytes = NP_BUF_INIT;
		size_t bad;
		if (cfg_base64_decode(n->value, n->len, 0, &bytes, &bad)) {
			np_buf_free(&bytes);
			return fatal(d, "yaml: !!binary value contains invalid base64 data");
		}
		*out = bytes.failed ? NULL : cfg_string(bytes.p ? bytes.p : "", bytes.len);
		np_buf_free(&bytes);
		return *out ? D_OK : fatal(d, "out of memory");
	}
	if (string_key) {
		/* A string-keyed map takes the key's text as written (nulls are left out). */
		if (r.kind == R_NULL)
			return D_SKIP;
		*out = cfg_string(n->value, n->len);
		return *out ? D_OK : fatal(d, "out of memory");
	}
	switch (r.kind) {
	case R_NULL: *out = cfg_null(); break;
	case R_BOOL: *out = cfg_bool(r.b); break;
	case R_INT: *out = cfg_int(r.i); break;
	case R_UINT: *out = cfg_uint(r.u); break;
	case R_FLOAT: *out = cfg_float(r.f); break;
	case R_TIME: *out = cfg_cstring(r.time); break;
	case R_STR: *out = cfg_string(n->value, n->len); break;
	}
	return *out ? D_OK : fatal(d, "out of memory");
}

/* Node order for finding repeated keys: kind, then text, then position. */
static int key_node_cmp(const void *a, const void *b)
{
	const struct ynode *x = *(struct ynode *const *)a, *y = *(struct ynode *const *)b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	int c = memcmp(x->value, y->value, x->len);
	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int same_key(const struct ynode *a, const struct ynode *b)
{
	return a->kind == b->kind && a->len == b->len && memcmp(a->value, b->value, a->len) == 0;
}

/* yaml.v3 refuses a mapping that repeats a key (same kind and text): one type error
 * per repetition. 1 when there were some, -1 on allocation failure. */
static int repeated_keys(struct ydec *d, const struct ynode *map)
{
	size_t nk = map->n / 2;
	const struct ynode **keys;
	int dup = 0;

	if (nk < 2)
		return 0;
	keys = malloc(nk * sizeof(*keys));
	if (!keys)
		return -1;
	for (size_t i = 0; i < nk; i++)
		keys[i] = map->kids[2 * i];
	qsort(keys, nk, sizeof(*keys), key_node_cmp);
	for (size_t i = 1; i < nk && !dup; i++)
		dup = same_key(keys[i - 1], keys[i]);
	free(keys);
	if (!dup)
		return 0;
	for (size_t i = 0; i < map->n; i += 2) {
		for (size_t j = i + 2; j < map->n; j += 2) {
			const struct ynode *ni = map->kids[i], *nj = map->kids[j];
			if (!same_key(ni, nj) || d->n_terrors++ >= MAX_TYPE_ERRORS)
				continue;
			np_buf_printf(&d->terrors, "%sline %d: mapping key ", d->n_terrors > 1 ? "\n  " : "", nj->line);
			np_go_quote(&d->terrors, nj->value, nj->len);
			np_buf_printf(&d->terrors, " already defined at line %d", ni->line);
		}
	}
	return 1;
}

static int is_merge_key(const struct ynode *n)
{
	return n->kind == Y_SCALAR && n->len == 2 && memcmp(n->value, "<<", 2) == 0 && tag_is(n->tag, "!!merge");
}

static int is_string_map(const struct ynode *map)
{
	for (size_t i = 0; i < map->n; i += 2) {
		const char *t = node_short_tag(map->kids[i]);
		if (!tag_is(t, "!!str") && !tag_is(t, "!!merge"))
			return 0;
	}
	return 1;
}

static int target_put(struct ydec *d, struct map_target *t, struct cfg_value *k, struct cfg_value *v)
{
	if (t->obj) {
		if (memchr(k->u.str.s, '\0', k->u.str.len)) {
			cfg_unref(v);
			return fatal(d, "a mapping key with a NUL byte is not supported by nodeprof");
		}
		return cfg_object_put(t->obj, k->u.str.s, v) ? fatal(d, "out of memory") : D_OK;
	}
	for (size_t i = 0; i < t->gm->n; i++) {
		if (key_equal(t->gm->pairs[i].k, k)) {
			cfg_unref(t->gm->pairs[i].v);
			t->gm->pairs[i].v = v;
			return D_OK;
		}
	}
	if (np_grow((void **)&t->gm->pairs, &t->gm->cap, t->gm->n + 1, sizeof(*t->gm->pairs))) {
		cfg_unref(v);
		return fatal(d, "out of memory");
	}
	t->gm->pairs[t->gm->n++] = (struct gm_pair){ cfg_ref(k), v };
	return D_OK;
}

static int merge(struct ydec *d, const struct ynode *parent, const struct ynode *with, struct map_target *t,
		 struct key_set *merged, int depth);

/* yaml.v3's decoder.mapping into an existing target; merged is NULL outside merges. */
static int fill_map(struct ydec *d, const struct ynode *map, struct map_target *t, struct key_set *merged, int depth)
{
	const struct ynode *merge_node = NULL;
	int rc = repeated_keys(d, map);

	if (rc)
		return rc < 0 ? fatal(d, "out of memory") : D_SKIP;
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		struct cfg_value *k, *v;
		if (is_merge_key(map->kids[i])) {
			merge_node = map->kids[i + 1];
			continue;
		}
		rc = unmarshal(d, map->kids[i], t->obj != NULL, depth + 1, &k);
		if (rc == D_FATAL)
			return rc;
		if (rc == D_SKIP)
			continue;
		if (merged) {
			if (key_set_has(merged, k)) {
				cfg_unref(k);
				continue;
			}
			if (key_set_add(merged, k)) {
				cfg_unref(k);
				return fatal(d, "out of memory");
			}
		}
		if (k->kind == CFG_V_ARRAY || k->kind == CFG_V_OBJECT || k->kind == CFG_V_CAPSULE) {
			struct np_buf msg = NP_BUF_INIT;
			np_buf_puts(&msg, "yaml: invalid map key: ");
			go_sharp_v(&msg, k);
			np_buf_putc(&msg, '\0');
			fatal(d, msg.failed ? "out of memory" : msg.p);
			np_buf_free(&msg);
			cfg_unref(k);
			return D_FATAL;
		}
		rc = unmarshal(d, map->kids[i + 1], 0, depth + 1, &v);
		if (rc == D_OK)
			rc = target_put(d, t, k, v);
		cfg_unref(k);
		if (rc == D_FATAL)
			return rc;
	}
	if (merge_node)
		return merge(d, map, merge_node, t, merged, depth);
	return D_OK;
}

static int count_decode(struct ydec *d);
static int enter_alias(struct ydec *d, const struct ynode *n);
static void leave_alias(struct ydec *d, const struct ynode *n);

/* One mapping (or alias of one) merged into t, decoded as yaml.v3 does: counted,
 * and through the alias checks. */
static int merge_one(struct ydec *d, const struct ynode *n, struct map_target *t, struct key_set *merged, int depth)
{
	int rc = count_decode(d);

	if (rc != D_OK)
		return rc;
	if (n->kind != Y_ALIAS)
		return fill_map(d, n, t, merged, depth);
	if (enter_alias(d, n) != D_OK)
		return D_FATAL;
	rc = merge_one(d, n->target, t, merged, depth);
	leave_alias(d, n);
	return rc;
}

static int merge(struct ydec *d, const struct ynode *parent, const struct ynode *with, struct map_target *t,
		 struct key_set *merged, int depth)
{
	struct key_set own = { 0 };
	int rc = D_OK;

	if (!merged) {
		/* The parent's own keys win over merged ones. */
		merged = &own;
		for (size_t i = 0; i + 1 < parent->n && rc != D_FATAL; i += 2) {
			struct cfg_value *k;
			rc = unmarshal(d, parent->kids[i], 0, depth + 1, &k);
			if (rc == D_OK) {
				if (key_set_add(merged, k))
					rc = fatal(d, "out of memory");
				cfg_unref(k);
			}
		}
		if (rc == D_FATAL)
			goto out;
	}
	if (deref(with)->kind == Y_MAP && with->kind != Y_SEQ) {
		rc = merge_one(d, with, t, merged, depth + 1);
	} else if (with->kind == Y_SEQ) {
		for (size_t i = 0; i < with->n && rc != D_FATAL; i++) {
			if (deref(with->kids[i])->kind != Y_MAP) {
				rc = fatal(d, "yaml: map merge requires map or sequence of maps as the value");
				break;
			}
			rc = merge_one(d, with->kids[i], t, merged, depth + 1);
		}
	} else {
		rc = fatal(d, "yaml: map merge requires map or sequence of maps as the value");
	}
out:
	key_set_free(&own);
	return rc == D_FATAL ? rc : D_OK;
}

static int decode_map(struct ydec *d, const struct ynode *n, int depth, struct cfg_value **out)
{
	struct map_target t = { 0 };
	int rc;

	if (is_string_map(n)) {
		t.obj = cfg_object_new(n->n / 2);
		if (!t.obj)
			return fatal(d, "out of memory");
	} else {
		t.gm = calloc(1, sizeof(*t.gm));
		if (!t.gm)
			return fatal(d, "out of memory");
	}
	rc = fill_map(d, n, &t, NULL, depth);
	if (rc != D_OK) {
		cfg_unref(t.obj);
		if (t.gm)
			general_map_free(t.gm);
		return rc;
	}
	if (t.obj) {
		cfg_object_done(t.obj);
		*out = t.obj;
	} else {
		*out = cfg_capsule(GENERAL_MAP_TYPE, t.gm, general_map_free);
	}
	return *out ? D_OK : fatal(d, "out of memory");
}

static int decode_seq(struct ydec *d, const struct ynode *n, int depth, struct cfg_value **out)
{
	struct cfg_value **items = calloc(n->n ? n->n : 1, sizeof(*items));
	size_t k = 0;

	if (!items)
		return fatal(d, "out of memory");
	for (size_t i = 0; i < n->n; i++) {
		int rc = unmarshal(d, n->kids[i], 0, depth + 1, &items[k]);
		if (rc == D_FATAL) {
			while (k > 0)
				cfg_unref(items[--k]);
			free(items);
			return rc;
		}
		k += rc == D_OK;
	}
	*out = cfg_array_new(k);
	if (*out) {
		if (k) /* an empty sequence has no items array to copy from (memcpy of NULL is UB) */
			memcpy((*out)->u.arr.v, items, k * sizeof(*items));
	} else
		while (k > 0)
			cfg_unref(items[--k]);
	free(items);
	return *out ? D_OK : fatal(d, "out of memory");
}

/* The document's node n decoded: D_OK with *out set, D_SKIP (a type error was
 * recorded, as yaml.v3 leaves such values out) or D_FATAL with d->err set.
 * string_key: n is a key of a string-keyed map (Go decodes it into a string). */
static int count_decode(struct ydec *d)
{
	d->decode_count++;
	if (d->alias_depth > 0)
		d->alias_count++;
	if (d->alias_count > 100 && d->decode_count > 1000) {
		/* yaml.v3's guard against alias bombs: the share of decoding that comes
		 * from aliases, 99% for small documents down to 10% for large ones. */
		double allowed = d->decode_count <= 400000	  ? 0.99
				 : d->decode_count >= 4000000 ? 0.10
							      : 0.99 - 0.89 * ((double)(d->decode_count - 400000) / 3600000.0);
		if ((double)d->alias_count / (double)d->decode_count > allowed)
			return fatal(d, "yaml: document contains excessive aliasing");
	}
	return D_OK;
}

static int enter_alias(struct ydec *d, const struct ynode *n)
{
	struct ynode *self = (struct ynode *)n;
	char msg[256];

	if (self->expanding) {
		snprintf(msg, sizeof(msg), "yaml: anchor '%.200s' value contains itself", n->value);
		return fatal(d, msg);
	}
	self->expanding = 1;
	d->alias_depth++;
	return D_OK;
}

static void leave_alias(struct ydec *d, const struct ynode *n)
{
	((struct ynode *)n)->expanding = 0;
	d->alias_depth--;
}

static int unmarshal(struct ydec *d, const struct ynode *n, int string_key, int depth, struct cfg_value **out)
{
	*out = NULL;
	if (count_decode(d) != D_OK)
		return D_FATAL;
	if (depth > CFG_MAX_DATA_DEPTH) {
		char msg[96];
		snprintf(msg, sizeof(msg), "nesting deeper than %d levels is not supported by nodeprof", CFG_MAX_DATA_DEPTH);
		return fatal(d, msg);
	}
	switch (n->kind) {
	case Y_ALIAS: {
		if (enter_alias(d, n) != D_OK)
			return D_FATAL;
		int rc = unmarshal(d, n->target, string_key, depth, out);
		leave_alias(d, n);
		return rc;
	}
	case Y_SCALAR: return decode_scalar(d, n, string_key, out);
	case Y_SEQ:
	case Y_MAP:
		if (string_key) {
			type_error(d, n, n->kind == Y_SEQ ? "!!seq" : "!!map", "string");
			return D_SKIP;
		}
		return n->kind == Y_SEQ ? decode_seq(d, n, depth, out) : decode_map(d, n, depth, out);
	}
	return fatal(d, "yaml: unknown node kind");
}

struct cfg_value *cfg_fn_from_yaml(struct cfg_call *c)
{
	const char *s;
	size_t n;
	struct cfg_value *tmp, *r = NULL;
	struct ydoc doc = { 0 };
	struct ynode *root;
	struct np_buf err = NP_BUF_INIT;
	/* decode_count starts at 1: yaml.v3 counts the document node too. */
	struct ydec d = { .err = &err, .terrors = NP_BUF_INIT, .decode_count = 1 };

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	if (parse_document(s, n, &doc, &root, &err) == 0) {
		if (!root)
			r = cfg_null();
		else if (unmarshal(&d, root, 0, 0, &r) != D_FATAL && d.n_terrors) {
			cfg_unref(r);
			r = NULL;
			np_buf_puts(&err, "yaml: unmarshal errors:\n  ");
			np_buf_append(&err, d.terrors.p, d.terrors.len);
			if (d.n_terrors > MAX_TYPE_ERRORS)
				np_buf_printf(&err, "\n  (%zu more)", d.n_terrors - MAX_TYPE_ERRORS);
		}
	}
	cfg_unref(tmp);
	ydoc_free(&doc);
	np_buf_free(&d.terrors);
	if (!r) {
		np_buf_putc(&err, '\0');
		cfg_error(c->ev->d, c->arg_pos[0], "%s: %s", c->fn->name, err.failed || !err.p ? "out of memory" : err.p);
	}
	np_buf_free(&err);
	return r;
}
