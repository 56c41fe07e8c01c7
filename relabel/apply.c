/* Applying compiled relabel rules (docs/specs/relabel.md §1, §3, §5, §6).
 *
 * Hot path: discovery relabels thousands of targets at once. Per-call state (PCRE2
 * match data, the joined source value, expansion buffers, the labelmap snapshot)
 * lives in a per-thread scratch that is reused, so after warm-up the only
 * allocations are the strings the resulting label sets own. relabel_targets also
 * runs leading filter rules (drop/keep/...) on the input before copying it, so a
 * dropped target costs no allocation at all. */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/labels.h"
#include "lib/log.h"
#include "lib/gostr.h"
#include "relabel/rules.h"

/* Buffers that grew beyond this for one huge value are released afterwards. */
#define SCRATCH_KEEP_MAX (1u << 20)

struct scratch {
	struct rx_scratch rx;
	struct np_buf val, a, b;
	struct np_label *snap; /* labelmap's snapshot of the label set */
	size_t snap_cap;
	char **grave; /* values replaced during labelmap, freed when the rule ends */
	size_t ngrave, grave_cap;
	EVP_MD_CTX *md5;
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static __thread struct scratch *tls_scratch;

static void scratch_destroy(void *p)
{
	struct scratch *s = p;

	if (!s)
		return;
	rx_scratch_free(&s->rx);
	np_buf_free(&s->val);
	np_buf_free(&s->a);
	np_buf_free(&s->b);
	free(s->snap);
	free(s->grave);
	EVP_MD_CTX_free(s->md5);
	free(s);
}

static void scratch_key_init(void)
{
	(void)pthread_key_create(&scratch_key, scratch_destroy);
}

static struct scratch *scratch_get(struct np_err *err)
{
	if (tls_scratch)
		return tls_scratch;
	pthread_once(&scratch_once, scratch_key_init);
	tls_scratch = calloc(1, sizeof(*tls_scratch));
	if (!tls_scratch) {
		np_errf(err, "out of memory");
		err->code = ENOMEM;
		return NULL;
	}
	(void)pthread_setspecific(scratch_key, tls_scratch);
	return tls_scratch;
}

static void scratch_trim(struct scratch *s)
{
	if (s->val.cap > SCRATCH_KEEP_MAX || s->a.cap > SCRATCH_KEEP_MAX || s->b.cap > SCRATCH_KEEP_MAX ||
	    s->rx.tbuf_cap > 3 * SCRATCH_KEEP_MAX) {
		np_buf_free(&s->val);
		np_buf_free(&s->a);
		np_buf_free(&s->b);
		free(s->rx.tbuf);
		free(s->rx.tmap);
		s->rx.tbuf = NULL;
		s->rx.tmap = NULL;
		s->rx.tbuf_cap = s->rx.tmap_cap = 0;
	}
}

static int oom(struct np_err *err)
{
	np_errf(err, "out of memory relabeling");
	err->code = ENOMEM;
	return -1;
}

/* ---- label set access with Prometheus' builder semantics ("" = absent) ---- */

static const char *get(const struct np_labels *ls, const char *name)
{
	int found;
	size_t i = np_labels_find(ls, name, &found);

	return found && ls->v[i].value[0] ? ls->v[i].value : NULL;
}

static int grave_push(struct scratch *s, char *p)
{
	if (np_grow((void **)&s->grave, &s->grave_cap, s->ngrave + 1, sizeof(s->grave[0])) != 0)
		return -1;
	s->grave[s->ngrave++] = p;
	return 0;
}

/* Set(name, value): an empty value deletes. With keep_old (labelmap), replaced values
 * stay allocated until the rule ends because the snapshot still points at them. */
static int set(struct np_labels *ls, const char *name, const char *value, size_t len, struct scratch *s,
	       int keep_old, struct np_err *err)
{
	int found;
	size_t i;
	char *v;

	if (len == 0) {
		np_labels_del(ls, name);
		return 0;
	}
	i = np_labels_find(ls, name, &found);
	if (found) {
		char *old = ls->v[i].value;
		size_t old_len = strlen(old);
		if (old_len == len && memcmp(old, value, len) == 0)
			return 0;
		if (!keep_old && old_len >= len) {
			/* The old allocation is big enough: no malloc for a rewrite. */
			memmove(old, value, len);
			old[len] = '\0';
			return 0;
		}
		if (!(v = malloc(len + 1)))
			return oom(err);
		memcpy(v, value, len);
		v[len] = '\0';
		if (keep_old) {
			if (grave_push(s, old) < 0) {
				free(v);
				return oom(err);
			}
		} else {
			free(old);
		}
		ls->v[i].value = v;
		return 0;
	}
	if (np_grow((void **)&ls->v, &ls->cap, ls->n + 1, sizeof(ls->v[0])) != 0)
		return oom(err);
	char *n = strdup(name);
	if (!n || !(v = malloc(len + 1))) {
		free(n);
		return oom(err);
	}
	memcpy(v, value, len);
	v[len] = '\0';
	memmove(&ls->v[i + 1], &ls->v[i], (ls->n - i) * sizeof(ls->v[0]));
	ls->v[i].name = n;
	ls->v[i].value = v;
	ls->n++;
	return 0;
}

/* ---- the actions ---- */

/* The joined source value; points into the label set for a single source label. */
static int source_value(const struct rl_rule *r, const struct np_labels *ls, struct scratch *s, const char **val,
			size_t *len, struct np_err *err)
{
	/* Zero source labels join to "" (docs/specs/relabel.md §3). */
	if (r->nsource <= 1) {
		const char *v = r->nsource ? get(ls, r->source[0]) : NULL;
		*val = v ? v : "";
		*len = v ? strlen(v) : 0;
		return 0;
	}
	np_buf_reset(&s->val);
	for (size_t i = 0; i < r->nsource; i++) {
		const char *v = get(ls, r->source[i]);
		if (i)
			np_buf_append(&s->val, r->separator, r->separator_len);
		if (v)
			np_buf_puts(&s->val, v);
	}
	if (np_buf_reserve(&s->val, 0) < 0)
		return oom(err);
	*val = s->val.p;
	*len = s->val.len;
	return 0;
}

static int matches(const struct rl_rule *r, const char *v, size_t n, struct scratch *s, struct np_err *err)
{
	struct rx_subject subj;
	size_t a, b;

	if (!rx_can_match(r->re, v, n))
		return 0;
	if (rx_subject_init(&subj, v, n, &s->rx, err) < 0)
		return -1;
	return rx_exec(r->re, &subj, 0, 0, &s->rx, &a, &b, err);
}

static int valid_target(const struct rl_rule *r, const char *s, size_t n)
{
	return r->legacy_names ? np_label_name_legacy(s, n) : np_label_name_utf8(s, n);
}

static int do_replace(const struct rl_rule *r, struct np_labels *ls, const char *val, size_t len,
		      struct scratch *s, struct np_err *err)
{
	struct rx_subject subj;
	size_t a, b;
	int rc;

	/* Prometheus' fast path; same result as the general one, minus the match. */
	if (len == 0 && r->default_regex && !r->target.has_dollar && !r->replacement.has_dollar)
		return set(ls, r->target.text, r->replacement.text, r->replacement.len, s, 0, err);
	if (!rx_can_match(r->re, val, len))
		return 0;
	if (rx_subject_init(&subj, val, len, &s->rx, err) < 0)
		return -1;
	rc = rx_exec(r->re, &subj, 0, 1, &s->rx, &a, &b, err);
	if (rc <= 0)
		return rc;
	np_buf_reset(&s->a);
	tmpl_expand(&r->target, r->re, val, s->rx.caps, &s->a);
	np_buf_reset(&s->b);
	tmpl_expand(&r->replacement, r->re, val, s->rx.caps, &s->b);
	if (np_buf_reserve(&s->a, 0) < 0 || np_buf_reserve(&s->b, 0) < 0)
		return oom(err);
	/* An expanded target that is not a label name makes the rule a no-op. */
	if (!valid_target(r, s->a.p, s->a.len))
		return 0;
	return set(ls, s->a.p, s->b.p, s->b.len, s, 0, err);
}

static int do_hashmod(const struct rl_rule *r, struct np_labels *ls, const char *val, size_t len,
		      struct scratch *s, struct np_err *err)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	uint64_t h = 0;
	char out[24];

	if (!s->md5 && !(s->md5 = EVP_MD_CTX_new()))
		return oom(err);
	if (!EVP_DigestInit_ex2(s->md5, rl_md5(), NULL) || !EVP_DigestUpdate(s->md5, val, len) ||
	    !EVP_DigestFinal_ex(s->md5, d, &dlen) || dlen != 16)
		return np_errf(err, "MD5 failed");
	/* Big-endian uint64 of the last 8 digest bytes. */
	for (int i = 8; i < 16; i++)
		h = (h << 8) | d[i];
	int n = snprintf(out, sizeof(out), "%" PRIu64, h % r->modulus);
	return set(ls, r->target.text, out, (size_t)n, s, 0, err);
}

/* A non-ASCII value needs ICU, loaded here on first use rather than when the rule is
 * compiled: lower/uppercase rules mostly see ASCII (Kubernetes names and label values
 * are), and loading it for them would cost every such agent the memory icu.h is about.
 * If the library is missing (a broken install), the target cannot be relabeled
 * correctly: the error goes up (relabel_targets leaves the
 * target out and says why) instead of an unmapped value passing as a mapped one. */
static int do_case(const struct rl_rule *r, struct np_labels *ls, const char *val, size_t len, struct scratch *s,
		   struct np_err *err)
{
	int rc;

	np_buf_reset(&s->a);
	if (r->action == RL_LOWERCASE)
		rc = np_go_to_lower(&s->a, val, len, err);
	else
		rc = np_go_to_upper(&s->a, val, len, err);
	if (rc < 0)
		return -1;
	if (np_buf_reserve(&s->a, 0) < 0)
		return oom(err);
	return set(ls, r->target.text, s->a.p, s->a.len, s, 0, err);
}

static int do_labelmap(const struct rl_rule *r, struct np_labels *ls, struct scratch *s, struct np_err *err)
{
	size_t n = ls->n;
	int rc = 0;

	if (np_grow((void **)&s->snap, &s->snap_cap, n, sizeof(*s->snap)) != 0)
		return oom(err);
	if (n)
		memcpy(s->snap, ls->v, n * sizeof(*ls->v));
	s->ngrave = 0;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		const char *name = s->snap[i].name;
		size_t name_len = strlen(name);
		struct rx_subject subj;
		size_t a0, a1;

		if (!rx_can_match(r->re, name, name_len))
			continue;
		if (rx_subject_init(&subj, name, name_len, &s->rx, err) < 0) {
			rc = -1;
			break;
		}
		rc = rx_exec(r->re, &subj, 0, 1, &s->rx, &a0, &a1, err);
		if (rc <= 0)
			continue;
		np_buf_reset(&s->b);
		if ((rc = tmpl_replace_all(&r->replacement, r->re, &subj, a0, a1, &s->rx, &s->b, err)) < 0)
			break;
		if (np_buf_reserve(&s->b, 0) < 0) {
			rc = oom(err);
			break;
		}
		/* The new name is not validated (Prometheus does not either). */
		rc = set(ls, s->b.p, s->snap[i].value, strlen(s->snap[i].value), s, 1, err);
	}
	for (size_t i = 0; i < s->ngrave; i++)
		free(s->grave[i]);
	s->ngrave = 0;
	return rc < 0 ? -1 : 0;
}

/* labeldrop / labelkeep: delete by name in one pass. */
static int do_labelfilter(const struct rl_rule *r, struct np_labels *ls, struct scratch *s, struct np_err *err)
{
	size_t w = 0;
	int rc = 0;

	for (size_t i = 0; i < ls->n; i++) {
		struct np_label l = ls->v[i];
		int m = rc < 0 ? 0 : matches(r, l.name, strlen(l.name), s, err);
		if (m < 0)
			rc = -1;
		if (rc == 0 && (m == 1) == (r->action == RL_LABELDROP)) {
			free(l.name);
			free(l.value);
			continue;
		}
		ls->v[w++] = l;
	}
	ls->n = w;
	return rc;
}

/* keepequal/dropequal: the target label's value equals the joined source value.
 * val is defined for len bytes; it is not read as a C string. */
static int target_equals(const struct rl_rule *r, const struct np_labels *ls, const char *val, size_t len)
{
	const char *t = get(ls, r->target.text);
	size_t tlen = t ? strlen(t) : 0;

	return tlen == len && (len == 0 || memcmp(t, val, len) == 0);
}

/* Returns 1 to keep the target, 0 to drop it, -1 on error. Filters only read ls. */
static int apply_rule(const struct rl_rule *r, struct np_labels *ls, struct scratch *s, struct np_err *err)
{
	const char *val = "";
	size_t len = 0;
	int rc;

	if (r->action != RL_LABELMAP && r->action != RL_LABELDROP && r->action != RL_LABELKEEP &&
	    source_value(r, ls, s, &val, &len, err) < 0)
		return -1;
	switch (r->action) {
	case RL_DROP:
		rc = matches(r, val, len, s, err);
		return rc < 0 ? -1 : !rc;
	case RL_KEEP:
		rc = matches(r, val, len, s, err);
		return rc < 0 ? -1 : rc;
	case RL_DROPEQUAL:
		return !target_equals(r, ls, val, len);
	case RL_KEEPEQUAL:
		return target_equals(r, ls, val, len);
	case RL_REPLACE:
		return do_replace(r, ls, val, len, s, err) < 0 ? -1 : 1;
	case RL_LOWERCASE:
	case RL_UPPERCASE:
		return do_case(r, ls, val, len, s, err) < 0 ? -1 : 1;
	case RL_HASHMOD:
		return do_hashmod(r, ls, val, len, s, err) < 0 ? -1 : 1;
	case RL_LABELMAP:
		return do_labelmap(r, ls, s, err) < 0 ? -1 : 1;
	case RL_LABELDROP:
	case RL_LABELKEEP:
		return do_labelfilter(r, ls, s, err) < 0 ? -1 : 1;
	}
	return 1;
}

/* Empty values are absent labels: they never survive relabeling. */
static void strip_empty(struct np_labels *ls)
{
	size_t w = 0;

	for (size_t i = 0; i < ls->n; i++) {
		if (ls->v[i].value[0] == '\0') {
			free(ls->v[i].name);
			free(ls->v[i].value);
			continue;
		}
		ls->v[w++] = ls->v[i];
	}
	ls->n = w;
}

static int run(const struct relabel_rules *rules, size_t from, struct np_labels *ls, int *keep,
	       struct scratch *s, struct np_err *err)
{
	for (size_t i = from; i < rules->n; i++) {
		int rc = apply_rule(&rules->v[i], ls, s, err);
		if (rc < 0)
			return np_err_wrap(err, "rule %zu", i + 1);
		if (rc == 0) {
			*keep = 0;
			return 0;
		}
	}
	*keep = 1;
	return 0;
}

int relabel_apply(const struct relabel_rules *rules, struct np_labels *ls, int *keep, struct np_err *err)
{
	struct scratch *s = scratch_get(err);
	int rc;

	if (!s)
		return -1;
	strip_empty(ls);
	rc = run(rules, 0, ls, keep, s, err);
	scratch_trim(s);
	return rc;
}

/* Room for the labels the rules may add: one per setting rule, and some for labelmap. */
static size_t added_labels(const struct relabel_rules *rules, size_t n)
{
	size_t add = 0;

	for (size_t i = 0; i < rules->n; i++) {
		enum rl_action a = rules->v[i].action;
		if (a == RL_REPLACE || a == RL_HASHMOD || a == RL_LOWERCASE || a == RL_UPPERCASE)
			add++;
		else if (a == RL_LABELMAP)
			add += n / 4 + 4;
	}
	return add;
}

/* Copies the non-empty labels of src, with room for the labels rules add. */
static int copy_nonempty(struct np_labels *dst, const struct np_labels *src, size_t extra, struct np_err *err)
{
	size_t cap = src->n + extra;

	dst->v = malloc(cap * sizeof(*dst->v));
	dst->n = 0;
	dst->cap = cap;
	if (!dst->v) {
		dst->cap = 0;
		return oom(err);
	}
	for (size_t i = 0; i < src->n; i++) {
		if (src->v[i].value[0] == '\0')
			continue;
		char *n = strdup(src->v[i].name), *v = strdup(src->v[i].value);
		if (!n || !v) {
			free(n);
			free(v);
			np_labels_free(dst);
			return oom(err);
		}
		dst->v[dst->n].name = n;
		dst->v[dst->n].value = v;
		dst->n++;
	}
	return 0;
}

int relabel_targets(const struct relabel_rules *rules, const struct np_targets *in, struct np_targets *out,
		    struct np_err *err)
{
	struct scratch *s = scratch_get(err);
	size_t gave_up = 0, first_filters = 0;
	char first_reason[sizeof(err->msg)] = "";

	if (!s)
		return -1;
	while (first_filters < rules->n && rl_action_is_filter(rules->v[first_filters].action))
		first_filters++;
	for (size_t t = 0; t < in->n; t++) {
		struct np_labels ls = NP_LABELS_INIT;
		int keep = 1, rc = 0;

		/* Filters at the front read the input in place: dropped targets are never copied. */
		for (size_t i = 0; i < first_filters && keep; i++) {
			rc = apply_rule(&rules->v[i], (struct np_labels *)&in->v[t], s, err);
			if (rc < 0) {
				np_err_wrap(err, "rule %zu", i + 1);
				break;
			}
			keep = rc;
		}
		if (rc >= 0 && keep) {
			if (copy_nonempty(&ls, &in->v[t], added_labels(rules, in->v[t].n), err) < 0) {
				scratch_trim(s);
				return -1;
			}
			rc = run(rules, first_filters, &ls, &keep, s, err);
		}
		if (rc < 0) {
			np_labels_free(&ls);
			if (err->code == ENOMEM) {
				scratch_trim(s);
				return -1;
			}
			/* A value needed the Unicode tables and they are unavailable (or PCRE2
			 * failed in a way other than its limits): the target cannot be relabeled
			 * correctly, so it is left out, counted and reported once per call. */
			if (gave_up++ == 0)
				snprintf(first_reason, sizeof(first_reason), "%s", err->msg);
			np_err_clear(err);
			continue;
		}
		if (!keep) {
			np_labels_free(&ls);
			continue;
		}
		if (np_targets_push(out, &ls, err) < 0) {
			np_labels_free(&ls);
			scratch_trim(s);
			return -1;
		}
	}
	if (gave_up)
		np_log(NP_WARN, "relabel", "targets left out: a rule could not be applied", "count", NP_LOG_INT(gave_up),
		       "first", first_reason, NULL);
	scratch_trim(s);
	return 0;
}
