/* Independent pprof decoder for unit tests: see pprof_decode.h. */
#include "pprof_decode.h"

#include <stdlib.h>
#include <string.h>

struct rd {
	const uint8_t *p;
	size_t len, pos;
};

static int varint(struct rd *r, uint64_t *v)
{
	uint64_t x = 0;

	for (int s = 0; s < 70; s += 7) {
		if (r->pos >= r->len)
			return -1;
		uint8_t b = r->p[r->pos++];
		x |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* Reads one field header; for length-delimited fields returns a sub-reader. */
static int field(struct rd *r, uint32_t *num, int *wire, uint64_t *v, struct rd *sub)
{
	uint64_t key;

	if (varint(r, &key))
		return -1;
	*num = (uint32_t)(key >> 3);
	*wire = (int)(key & 7);
	if (*wire == 0)
		return varint(r, v);
	if (*wire == 2) {
		if (varint(r, v) || *v > r->len - r->pos)
			return -1;
		sub->p = r->p + r->pos;
		sub->len = (size_t)*v;
		sub->pos = 0;
		r->pos += (size_t)*v;
		return 0;
	}
	return -1;
}

/* A repeated scalar: packed (wire 2) or not (wire 0). */
static int repeated(int wire, uint64_t v, struct rd *sub, uint64_t *out, size_t *n, size_t max)
{
	if (wire == 0) {
		if (*n >= max)
			return -1;
		out[(*n)++] = v;
		return 0;
	}
	while (sub->pos < sub->len) {
		uint64_t x;
		if (varint(sub, &x) || *n >= max)
			return -1;
		out[(*n)++] = x;
	}
	return 0;
}

static int value_type(struct rd *r, int64_t out[2])
{
	uint32_t num;
	int wire;
	uint64_t v;
	struct rd sub;

	while (r->pos < r->len) {
		if (field(r, &num, &wire, &v, &sub))
			return -1;
		if (num == 1 || num == 2)
			out[num - 1] = (int64_t)v;
	}
	return 0;
}

int dec_profile(const uint8_t *p, size_t len, struct dec_profile *d)
{
	struct rd r = { p, len, 0 };
	size_t cap = 0;

	memset(d, 0, sizeof(*d));
	while (r.pos < r.len) {
		uint32_t num;
		int wire;
		uint64_t v;
		struct rd sub;
		if (field(&r, &num, &wire, &v, &sub))
			return -1;
		switch (num) {
		case 1:
			if (value_type(&sub, d->sample_type))
				return -1;
			d->n_sample_types++;
			break;
		case 2: {
			if (d->nsamples == cap) {
				cap = cap ? cap * 2 : 64;
				d->samples = realloc(d->samples, cap * sizeof(*d->samples));
			}
			struct dec_sample *s = &d->samples[d->nsamples++];
			memset(s, 0, sizeof(*s));
			while (sub.pos < sub.len) {
				uint32_t n2;
				int w2;
				uint64_t v2;
				struct rd s2;
				if (field(&sub, &n2, &w2, &v2, &s2))
					return -1;
				if (n2 == 1 && repeated(w2, v2, &s2, s->loc, &s->nloc, 300))
					return -1;
				if (n2 == 2 && repeated(w2, v2, &s2, (uint64_t *)s->value, &s->nvalue, 4))
					return -1;
			}
			break;
		}
		case 3: {
			if (d->nmappings >= 512)
				return -1;
			typeof(d->mappings[0]) *m = &d->mappings[d->nmappings++];
			while (sub.pos < sub.len) {
				uint32_t n2;
				int w2;
				uint64_t v2;
				struct rd s2;
				if (field(&sub, &n2, &w2, &v2, &s2))
					return -1;
				if (n2 == 1) m->id = v2;
				if (n2 == 2) m->start = v2;
				if (n2 == 3) m->limit = v2;
				if (n2 == 4) m->offset = v2;
				if (n2 == 5) m->file = (int64_t)v2;
				if (n2 == 6) m->build_id = (int64_t)v2;
				if (n2 == 7) m->has_functions = (int)v2;
			}
			break;
		}
		case 4: {
			if (d->nlocations >= 4096)
				return -1;
			typeof(d->locations[0]) *l = &d->locations[d->nlocations++];
			while (sub.pos < sub.len) {
				uint32_t n2;
				int w2;
				uint64_t v2;
				struct rd s2;
				if (field(&sub, &n2, &w2, &v2, &s2))
					return -1;
				if (n2 == 1) l->id = v2;
				if (n2 == 2) l->mapping = v2;
				if (n2 == 4) {
					while (s2.pos < s2.len) {
						uint32_t n3;
						int w3;
						uint64_t v3;
						struct rd s3;
						if (field(&s2, &n3, &w3, &v3, &s3))
							return -1;
						if (n3 == 1) l->function = v3;
					}
				}
			}
			break;
		}
		case 5: {
			if (d->nfunctions >= 4096)
				return -1;
			typeof(d->functions[0]) *f = &d->functions[d->nfunctions++];
			while (sub.pos < sub.len) {
				uint32_t n2;
				int w2;
				uint64_t v2;
				struct rd s2;
				if (field(&sub, &n2, &w2, &v2, &s2))
					return -1;
				if (n2 == 1) f->id = v2;
				if (n2 == 2) f->name = (int64_t)v2;
				if (n2 == 3) f->system_name = (int64_t)v2;
			}
			break;
		}
		case 6:
			if (wire != 2 || d->nstrings >= 4096)
				return -1;
			d->strings[d->nstrings++] = strndup((const char *)sub.p, sub.len);
			break;
		case 9: d->time_nanos = (int64_t)v; break;
		case 10: d->duration_nanos = (int64_t)v; break;
		case 11:
			if (value_type(&sub, d->period_type))
				return -1;
			break;
		case 12: d->period = (int64_t)v; break;
		default: break;
		}
	}
	return 0;
}

void dec_profile_free(struct dec_profile *d)
{
	for (size_t i = 0; i < d->nstrings; i++)
		free(d->strings[i]);
	free(d->samples);
}

const char *dec_location_name(const struct dec_profile *d, uint64_t loc)
{
	for (size_t i = 0; i < d->nlocations; i++) {
		if (d->locations[i].id != loc)
			continue;
		for (size_t j = 0; j < d->nfunctions; j++)
			if (d->functions[j].id == d->locations[i].function && d->functions[j].name >= 0 &&
			    (size_t)d->functions[j].name < d->nstrings)
				return d->strings[d->functions[j].name];
	}
	return NULL;
}
