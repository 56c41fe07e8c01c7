/* pprof decoder: see decode.h. Two passes over the bytes: the first counts every
 * repeated element (so each array is allocated once, at its exact size), the second
 * fills them; then ids are resolved to indices and every reference is checked. */
#include "agent/pprof/decode.h"

#include "agent/pprof/proto.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sorted.h"

#define MAX_DECODE_BYTES (1u << 30)

/* Number of varints in a packed payload, or -1 when it is malformed. */
static long count_packed(const uint8_t *p, size_t len)
{
	struct pb_reader r = { p, p + len };
	uint64_t v;
	long n = 0;

	while (r.p < r.end) {
		if (pb_reader_varint(&r, &v))
			return -1;
		n++;
	}
	return n;
}

/* Counts of a repeated scalar field: one varint, or a packed run. */
static long count_repeated(const struct pb_field *f)
{
	if (f->wire == 0)
		return 1;
	if (f->wire == 2)
		return count_packed(f->sub, f->sublen);
	return -1;
}

struct counts {
	size_t strings, string_bytes, sample_types, samples, sample_locs, values, labels, mappings, locations,
		lines, functions;
};

static int count_sample(const uint8_t *p, size_t len, struct counts *c)
{
	struct pb_reader r = { p, p + len };
	struct pb_field f;
	int rc;
	long n;

	while ((rc = pb_read_field(&r, &f)) == 1) {
		if (f.num == 1 || f.num == 2) {
			if ((n = count_repeated(&f)) < 0)
				return -1;
			if (f.num == 1)
				c->sample_locs += (size_t)n;
			else
				c->values += (size_t)n;
		} else if (f.num == 3) {
			if (f.wire != 2)
				return -1;
			c->labels++;
		}
	}
	return rc;
}

static int count_location(const uint8_t *p, size_t len, struct counts *c)
{
	struct pb_reader r = { p, p + len };
	struct pb_field f;
	int rc;

	while ((rc = pb_read_field(&r, &f)) == 1)
		if (f.num == 4) {
			if (f.wire != 2)
				return -1;
			c->lines++;
		}
	return rc;
}

static int count_all(const uint8_t *p, size_t len, struct counts *c, struct np_err *err)
{
	struct pb_reader r = { p, p + len };
	struct pb_field f;
	int rc;

	while ((rc = pb_read_field(&r, &f)) == 1) {
		if (f.num >= 1 && f.num <= 6 && f.wire != 2)
			return np_errf(err, "pprof: field %u has wire type %d, expected a message", f.num, f.wire);
		switch (f.num) {
		case 1: c->sample_types++; break;
		case 2:
			c->samples++;
			if (count_sample(f.sub, f.sublen, c))
				return np_errf(err, "pprof: sample %zu is malformed", c->samples - 1);
			break;
		case 3: c->mappings++; break;
		case 4:
			c->locations++;
			if (count_location(f.sub, f.sublen, c))
				return np_errf(err, "pprof: location %zu is malformed", c->locations - 1);
			break;
		case 5: c->functions++; break;
		case 6:
			c->strings++;
			c->string_bytes += f.sublen + 1;
			break;
		}
	}
	if (rc < 0)
		return np_errf(err, "pprof: malformed protobuf at byte %zu", (size_t)(r.p - p));
	return 0;
}

/* Checks a string index; the decoded form stores it as uint32. */
static int str_ref(const struct np_pprof_profile *prof, uint64_t v, uint32_t *out)
{
	if (v >= prof->nstrings)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* A message of scalar fields, read by a table: each field number that is a varint lands
 * at an offset of the decoded struct as a u64 (ids, addresses, int64 values: the same
 * bits), a checked string index (u32) or a bool (int). Other fields and wire types are
 * skipped, as a protobuf reader skips what it does not know. */
enum slot_kind { SLOT_U64, SLOT_STR, SLOT_BOOL };

struct slot {
	uint32_t num;
	enum slot_kind kind;
	size_t off;
};

#define SLOT(num, kind, type, member) { num, kind, offsetof(type, member) }

static const struct slot value_type_slots[] = {
	SLOT(1, SLOT_STR, struct np_pprof_value_type, type),
	SLOT(2, SLOT_STR, struct np_pprof_value_type, unit),
};

static const struct slot mapping_slots[] = {
	SLOT(1, SLOT_U64, struct np_pprof_mapping, id),
	SLOT(2, SLOT_U64, struct np_pprof_mapping, start),
	SLOT(3, SLOT_U64, struct np_pprof_mapping, limit),
	SLOT(4, SLOT_U64, struct np_pprof_mapping, offset),
	SLOT(5, SLOT_STR, struct np_pprof_mapping, filename),
	SLOT(6, SLOT_STR, struct np_pprof_mapping, build_id),
	SLOT(7, SLOT_BOOL, struct np_pprof_mapping, has_functions),
};

static const struct slot function_slots[] = {
	SLOT(1, SLOT_U64, struct np_pprof_function, id),
	SLOT(2, SLOT_STR, struct np_pprof_function, name),
	SLOT(3, SLOT_STR, struct np_pprof_function, system_name),
	SLOT(4, SLOT_STR, struct np_pprof_function, filename),
	SLOT(5, SLOT_U64, struct np_pprof_function, start_line),
};

static const struct slot label_slots[] = {
	SLOT(1, SLOT_STR, struct np_pprof_label, key),
	SLOT(2, SLOT_STR, struct np_pprof_label, str),
	SLOT(3, SLOT_U64, struct np_pprof_label, num),
	SLOT(4, SLOT_STR, struct np_pprof_label, num_unit),
};

#define NSLOTS(t) (sizeof(t) / sizeof((t)[0]))

/* Zeroes out (size bytes), then reads the message into it; -1 when malformed or a string
 * index is out of range. */
static int parse_scalars(const struct np_pprof_profile *prof, const uint8_t *p, size_t len, const struct slot *slots,
			 size_t nslots, void *out, size_t size)
{
	struct pb_reader r = { p, p + len };
	struct pb_field f;
	int rc;

	memset(out, 0, size);
	while ((rc = pb_read_field(&r, &f)) == 1) {
		if (f.wire != 0)
			continue;
		for (size_t i = 0; i < nslots; i++) {
			char *at = (char *)out + slots[i].off;
			uint32_t idx;
			int on = f.v != 0;
			if (slots[i].num != f.num)
				continue;
			if (slots[i].kind == SLOT_U64) {
				memcpy(at, &f.v, sizeof(f.v));
			} else if (slots[i].kind == SLOT_BOOL) {
				memcpy(at, &on, sizeof(on));
			} else {
				if (str_ref(prof, f.v, &idx))
					return -1;
				memcpy(at, &idx, sizeof(idx));
			}
		}
	}
	return rc;
}

#define PARSE(prof, p, len, slots, out) parse_scalars(prof, p, len, slots, NSLOTS(slots), out, sizeof(*(out)))

/* Function and mapping references hold ids here; resolve() turns them into indices. */
static int parse_location(struct np_pprof_profile *prof, const uint8_t *p, size_t len, struct np_pprof_location *loc,
			  uint64_t *mapping_id, uint64_t *line_fn_ids, size_t *nlines_total)
{
	struct pb_reader r = { p, p + len };
	struct pb_field f;
	int rc;

	memset(loc, 0, sizeof(*loc));
	*mapping_id = 0;
	loc->first_line = (uint32_t)*nlines_total;
	while ((rc = pb_read_field(&r, &f)) == 1) {
		if (f.num == 1 && f.wire == 0)
			loc->id = f.v;
		else if (f.num == 2 && f.wire == 0)
			*mapping_id = f.v;
		else if (f.num == 3 && f.wire == 0)
			loc->address = f.v;
		else if (f.num == 4 && f.wire == 2) {
			struct pb_reader lr = { f.sub, f.sub + f.sublen };
			struct pb_field lf;
			struct np_pprof_line *ln = &prof->lines[*nlines_total];
			uint64_t fid = 0;
			int lrc;

			ln->line = 0;
			while ((lrc = pb_read_field(&lr, &lf)) == 1) {
				if (lf.num == 1 && lf.wire == 0)
					fid = lf.v;
				else if (lf.num == 2 && lf.wire == 0)
					ln->line = (int64_t)lf.v;
			}
			if (lrc < 0)
				return -1;
			line_fn_ids[*nlines_total] = fid;
			(*nlines_total)++;
			loc->nlines++;
		}
	}
	return rc;
}

/* Reads the varints of a repeated field (packed or not) into out[*n...]. */
static int read_repeated(const struct pb_field *f, uint64_t *out, size_t *n)
{
	if (f->wire == 0) {
		out[(*n)++] = f->v;
		return 0;
	}
	struct pb_reader r = { f->sub, f->sub + f->sublen };
	while (r.p < r.end)
		if (pb_reader_varint(&r, &out[(*n)++]))
			return -1;
	return 0;
}

/* Id -> index lookup: a dense fast path (ids 1..n in order, what every encoder we
 * know writes) and a sorted table otherwise. */
struct id_index {
	int dense;
	size_t n;
	struct id_pair {
		uint64_t id;
		uint32_t idx;
	} *sorted;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct id_pair *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int id_index_build(struct id_index *ix, const void *elems, size_t n, size_t stride, const char *what,
			  struct np_err *err)
{
	ix->n = n;
	ix->dense = 1;
	ix->sorted = NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = *(const uint64_t *)(const void *)((const char *)elems + i * stride);
		if (id == 0)
			return np_errf(err, "pprof: %s %zu has the reserved id 0", what, i);
		if (id != i + 1)
			ix->dense = 0;
	}
	if (ix->dense || n == 0)
		return 0;
	ix->sorted = malloc(n * sizeof(*ix->sorted));
	if (!ix->sorted)
		return np_errf(err, "pprof: out of memory");
	for (size_t i = 0; i < n; i++)
		ix->sorted[i] = (struct id_pair){ *(const uint64_t *)(const void *)((const char *)elems + i * stride),
						  (uint32_t)i };
	qsort(ix->sorted, n, sizeof(*ix->sorted), cmp_pair);
	for (size_t i = 1; i < n; i++)
		if (ix->sorted[i].id == ix->sorted[i - 1].id) {
			unsigned long long dup = (unsigned long long)ix->sorted[i].id;
			free(ix->sorted);
			ix->sorted = NULL;
			return np_errf(err, "pprof: duplicate %s id %llu", what, dup);
		}
	return 0;
}

static int id_cmp(const void *key, const void *elem)
{
	uint64_t a = *(const uint64_t *)key;
	const struct id_pair *e = elem;
	return a < e->id ? -1 : a > e->id;
}

/* Index of id, or -1. */
static long id_lookup(const struct id_index *ix, uint64_t id)
{
	if (ix->dense)
		return id >= 1 && id <= ix->n ? (long)(id - 1) : -1;
	int found;
	size_t at = np_sorted_find(ix->sorted, ix->n, sizeof(*ix->sorted), &id, id_cmp, &found);
	return found ? (long)ix->sorted[at].idx : -1;
}

static void *alloc_array(struct np_pprof_profile *prof, size_t n, size_t size)
{
	/* One extra element so that empty arrays are non-NULL and the caller never special-cases them. */
	void *p = calloc(n + 1, size);
	if (p)
		prof->bytes += (n + 1) * size;
	return p;
}

void np_pprof_profile_free(struct np_pprof_profile *p)
{
	if (!p)
		return;
	free(p->strings);
	free(p->sample_types);
	free(p->samples);
	free(p->sample_locs);
	free(p->values);
	free(p->labels);
	free(p->mappings);
	free(p->locations);
	free(p->lines);
	free(p->functions);
	free(p->arena);
	free(p);
}

/* Where the second pass is: the next free element of each flat array, and the ids that
 * resolve() turns into indices. */
struct filling {
	size_t nlines, nlocs, nvalues, nlabels;
	uint64_t *loc_mapping_ids, *line_fn_ids, *sample_loc_ids;
};

/* Strings first: every other element refers to them. */
static int fill_strings(struct np_pprof_profile *prof, const uint8_t *data, size_t len, struct np_err *err)
{
	struct pb_reader r = { data, data + len };
	struct pb_field f;
	size_t arena_off = 0;
	int rc;

	while ((rc = pb_read_field(&r, &f)) == 1)
		if (f.num == 6) {
			struct np_pprof_str *s = &prof->strings[prof->nstrings++];
			memcpy(prof->arena + arena_off, f.sub, f.sublen);
			prof->arena[arena_off + f.sublen] = '\0';
			s->s = prof->arena + arena_off;
			s->len = (uint32_t)f.sublen;
			arena_off += f.sublen + 1;
		}
	if (rc < 0)
		return np_errf(err, "pprof: malformed protobuf");
	if (prof->nstrings == 0 || prof->strings[0].len != 0)
		return np_errf(err, "pprof: string_table[0] must be the empty string");
	return 0;
}

static int fill_sample(struct np_pprof_profile *prof, const struct pb_field *f, const struct counts *c,
		       struct filling *fl, struct np_err *err)
{
	struct np_pprof_sample *s = &prof->samples[prof->nsamples++];
	struct pb_reader sr = { f->sub, f->sub + f->sublen };
	struct pb_field sf;
	int src;
	uint64_t *tmpv = (uint64_t *)(void *)prof->values; /* same size as int64_t */

	s->first_loc = (uint32_t)fl->nlocs;
	s->first_value = (uint32_t)fl->nvalues;
	s->first_label = (uint32_t)fl->nlabels;
	while ((src = pb_read_field(&sr, &sf)) == 1) {
		if (sf.num == 1) {
			if (read_repeated(&sf, fl->sample_loc_ids, &fl->nlocs))
				return np_errf(err, "pprof: sample %zu: bad location_id", prof->nsamples - 1);
		} else if (sf.num == 2) {
			if (read_repeated(&sf, tmpv, &fl->nvalues))
				return np_errf(err, "pprof: sample %zu: bad value", prof->nsamples - 1);
		} else if (sf.num == 3) {
			if (PARSE(prof, sf.sub, sf.sublen, label_slots, &prof->labels[fl->nlabels++]))
				return np_errf(err, "pprof: sample %zu: bad label", prof->nsamples - 1);
		}
	}
	if (src < 0)
		return np_errf(err, "pprof: sample %zu is malformed", prof->nsamples - 1);
	s->nloc = (uint32_t)(fl->nlocs - s->first_loc);
	s->nlabels = (uint32_t)(fl->nlabels - s->first_label);
	if (fl->nvalues - s->first_value != c->sample_types)
		return np_errf(err, "pprof: sample %zu has %zu values for %zu sample types", prof->nsamples - 1,
			       fl->nvalues - s->first_value, c->sample_types);
	return 0;
}

/* One top-level field of the second pass. */
static int fill_field(struct np_pprof_profile *prof, const struct pb_field *f, const struct counts *c,
		      struct filling *fl, struct np_err *err)
{
	switch (f->num) {
	case 1:
		if (PARSE(prof, f->sub, f->sublen, value_type_slots, &prof->sample_types[prof->nsample_types++]))
			return np_errf(err, "pprof: sample_type %zu is malformed", prof->nsample_types - 1);
		break;
	case 2:
		return fill_sample(prof, f, c, fl, err);
	case 3:
		if (PARSE(prof, f->sub, f->sublen, mapping_slots, &prof->mappings[prof->nmappings++]))
			return np_errf(err, "pprof: mapping %zu is malformed", prof->nmappings - 1);
		break;
	case 4:
		if (parse_location(prof, f->sub, f->sublen, &prof->locations[prof->nlocations],
				   &fl->loc_mapping_ids[prof->nlocations], fl->line_fn_ids, &fl->nlines))
			return np_errf(err, "pprof: location %zu is malformed", prof->nlocations);
		prof->nlocations++;
		break;
	case 5:
		if (PARSE(prof, f->sub, f->sublen, function_slots, &prof->functions[prof->nfunctions++]))
			return np_errf(err, "pprof: function %zu is malformed", prof->nfunctions - 1);
		break;
	case 9:
	case 10:
	case 12:
		if (f->wire == 0)
			*(f->num == 9 ? &prof->time_nanos : f->num == 10 ? &prof->duration_nanos : &prof->period) =
				(int64_t)f->v;
		break;
	case 11:
		if (f->wire != 2 || PARSE(prof, f->sub, f->sublen, value_type_slots, &prof->period_type))
			return np_errf(err, "pprof: period_type is malformed");
		break;
	case 14:
		if (f->wire == 0 && str_ref(prof, f->v, &prof->default_sample_type))
			return np_errf(err, "pprof: default_sample_type is not a string index");
		break;
	}
	return 0;
}

/* Second pass: fills the arrays. Location and line references are still ids. */
static int fill(struct np_pprof_profile *prof, const uint8_t *data, size_t len, const struct counts *c,
		struct filling *fl, struct np_err *err)
{
	struct pb_reader r = { data, data + len };
	struct pb_field f;
	int rc;

	if (fill_strings(prof, data, len, err))
		return -1;
	while ((rc = pb_read_field(&r, &f)) == 1)
		if (fill_field(prof, &f, c, fl, err))
			return -1;
	if (rc < 0)
		return np_errf(err, "pprof: malformed protobuf");
	return 0;
}

static int resolve(struct np_pprof_profile *prof, const struct filling *fl, struct np_err *err)
{
	const uint64_t *loc_mapping_ids = fl->loc_mapping_ids, *line_fn_ids = fl->line_fn_ids,
		       *sample_loc_ids = fl->sample_loc_ids;
	size_t nsample_locs = fl->nlocs, nlines = fl->nlines;

	struct id_index mix = { 0 }, lix = { 0 }, fix = { 0 };
	int rc = -1;

	if (id_index_build(&mix, prof->mappings, prof->nmappings, sizeof(*prof->mappings), "mapping", err) ||
	    id_index_build(&lix, prof->locations, prof->nlocations, sizeof(*prof->locations), "location", err) ||
	    id_index_build(&fix, prof->functions, prof->nfunctions, sizeof(*prof->functions), "function", err))
		goto out;
	for (size_t i = 0; i < prof->nlocations; i++) {
		long m = -1;
		if (loc_mapping_ids[i] && (m = id_lookup(&mix, loc_mapping_ids[i])) < 0) {
			np_errf(err, "pprof: location %llu refers to unknown mapping %llu",
				(unsigned long long)prof->locations[i].id, (unsigned long long)loc_mapping_ids[i]);
			goto out;
		}
		prof->locations[i].mapping = m < 0 ? NP_PPROF_NONE : (uint32_t)m;
	}
	for (size_t i = 0; i < nlines; i++) {
		long fi = -1;
		if (line_fn_ids[i] && (fi = id_lookup(&fix, line_fn_ids[i])) < 0) {
			np_errf(err, "pprof: a line refers to unknown function %llu", (unsigned long long)line_fn_ids[i]);
			goto out;
		}
		prof->lines[i].function = fi < 0 ? NP_PPROF_NONE : (uint32_t)fi;
	}
	for (size_t i = 0; i < nsample_locs; i++) {
		long li = id_lookup(&lix, sample_loc_ids[i]);
		if (li < 0) {
			np_errf(err, "pprof: a sample refers to unknown location %llu",
				(unsigned long long)sample_loc_ids[i]);
			goto out;
		}
		prof->sample_locs[i] = (uint32_t)li;
	}
	rc = 0;
out:
	free(mix.sorted);
	free(lix.sorted);
	free(fix.sorted);
	return rc;
}

/* Every array at the size the first pass counted (one allocation each). */
static struct np_pprof_profile *profile_alloc(const struct counts *c)
{
	struct np_pprof_profile *prof = calloc(1, sizeof(*prof));

	if (!prof)
		return NULL;
	prof->bytes = sizeof(*prof);
	prof->arena = alloc_array(prof, c->string_bytes, 1);
	prof->strings = alloc_array(prof, c->strings, sizeof(*prof->strings));
	prof->sample_types = alloc_array(prof, c->sample_types, sizeof(*prof->sample_types));
	prof->samples = alloc_array(prof, c->samples, sizeof(*prof->samples));
	prof->sample_locs = alloc_array(prof, c->sample_locs, sizeof(*prof->sample_locs));
	prof->values = alloc_array(prof, c->values, sizeof(*prof->values));
	prof->labels = alloc_array(prof, c->labels, sizeof(*prof->labels));
	prof->mappings = alloc_array(prof, c->mappings, sizeof(*prof->mappings));
	prof->locations = alloc_array(prof, c->locations, sizeof(*prof->locations));
	prof->lines = alloc_array(prof, c->lines, sizeof(*prof->lines));
	prof->functions = alloc_array(prof, c->functions, sizeof(*prof->functions));
	if (!prof->arena || !prof->strings || !prof->sample_types || !prof->samples || !prof->sample_locs ||
	    !prof->values || !prof->labels || !prof->mappings || !prof->locations || !prof->lines ||
	    !prof->functions) {
		np_pprof_profile_free(prof);
		return NULL;
	}
	return prof;
}

static int decode_plain(const uint8_t *data, size_t len, struct np_pprof_profile **out, struct np_err *err)
{
	struct counts c = { 0 };
	struct np_pprof_profile *prof;
	struct filling fl = { 0 };
	int rc = -1;

	if (count_all(data, len, &c, err))
		return -1;
	prof = profile_alloc(&c);
	fl.loc_mapping_ids = calloc(c.locations + 1, sizeof(uint64_t));
	fl.line_fn_ids = calloc(c.lines + 1, sizeof(uint64_t));
	fl.sample_loc_ids = calloc(c.sample_locs + 1, sizeof(uint64_t));
	if (!prof || !fl.loc_mapping_ids || !fl.line_fn_ids || !fl.sample_loc_ids)
		np_errf(err, "pprof: out of memory");
	else if (!fill(prof, data, len, &c, &fl, err) && !resolve(prof, &fl, err))
		rc = 0;
	free(fl.loc_mapping_ids);
	free(fl.line_fn_ids);
	free(fl.sample_loc_ids);
	if (rc) {
		np_pprof_profile_free(prof);
		return -1;
	}
	*out = prof;
	return 0;
}

/* The plain bytes of gzipped or plain data: *p and *len point into plain (then filled,
 * the caller frees it) or at the data itself. */
static int plain_bytes(const void *data, size_t len, size_t max_bytes, struct np_buf *plain, const uint8_t **p,
		       size_t *plen, struct np_err *err)
{
	const uint8_t *d = data;

	*p = d;
	*plen = len;
	if (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
		if (np_gunzip(data, len, max_bytes, plain, err))
			return -1;
		*p = (const uint8_t *)plain->p;
		*plen = plain->len;
	}
	return 0;
}

int np_pprof_decode(const void *data, size_t len, size_t max_bytes, struct np_pprof_profile **out,
		    struct np_err *err)
{
	struct np_buf plain = NP_BUF_INIT;
	const uint8_t *p;
	int rc;

	if (max_bytes > MAX_DECODE_BYTES)
		max_bytes = MAX_DECODE_BYTES;
	if (plain_bytes(data, len, max_bytes, &plain, &p, &len, err))
		rc = -1;
	else if (len > max_bytes) /* plain input: gunzip held gzipped input to the limit */
		rc = np_errf(err, "pprof: %zu bytes exceed the limit of %zu", len, max_bytes);
	else
		rc = decode_plain(p, len, out, err);
	np_buf_free(&plain);
	return rc;
}

int np_pprof_count_samples(const void *data, size_t len, size_t max_bytes, size_t *out, struct np_err *err)
{
	struct np_buf plain = NP_BUF_INIT;
	struct pb_reader r;
	struct pb_field f;
	size_t n = 0;
	int rc = 0;

	if (plain_bytes(data, len, max_bytes, &plain, &r.p, &len, err)) {
		np_buf_free(&plain);
		return -1;
	}
	r.end = r.p + len;
	while ((rc = pb_read_field(&r, &f)) == 1)
		if (f.num == 2)
			n++;
	np_buf_free(&plain);
	if (rc < 0)
		return np_errf(err, "pprof: malformed protobuf");
	*out = n;
	return 0;
}
