/* pprof profile builder: see builder.h. */
#include "agent/pprof/builder.h"

#include <stdlib.h>
#include <string.h>

#include "agent/pprof/proto.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/tally.h"

/* Location ids are written in chunks of this many (repeated packed fields concatenate). */
#define NP_PPROF_MAX_DEPTH 256

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

/* A mapping's key: what tells two mappings apart in a profile. Every field is a u32 or u64
 * at its natural offset, with no padding, so the bytes are a stable key. */
struct mapping_key {
	uint32_t file, build_id; /* string indices */
	uint64_t start, limit, offset;
};

struct location_key {
	uint32_t function; /* function id, 0 when the Location has no Line */
	uint32_t mapping;  /* mapping id */
	uint64_t address;
	uint32_t line;	   /* the Line's line number, 0 when unknown (native code) */
	uint32_t pad;
};

/* A function: its name, file (string indices) and first line; the file is "" for native code. */
struct function_key {
	uint32_t name, file, start_line;
};
_Static_assert(sizeof(struct mapping_key) == 32 && sizeof(struct location_key) == 24 &&
		       sizeof(struct function_key) == 12,
	       "keys have no padding");

struct np_pprof_builder {
	enum np_profile_kind kind;
	int64_t period; /* ns per sample (CPU), else 1 */
	int64_t time_nanos;
	struct np_intern strings;   /* id-1 = string table index (id 1 is "") */
	struct np_intern functions; /* key: struct function_key */
	struct np_intern mappings;  /* key: struct mapping_key; id 1 is the no-file mapping */
	uint8_t *map_unnamed;	    /* per mapping id - 1: 1 when one of its Locations has no Line */
	size_t map_unnamed_cap;
	struct np_intern locations; /* key: struct location_key */
	struct np_intern label_sets; /* key: u32 (key, value) string indexes of a sample's labels */
	struct np_tally samples;    /* key: the u32 location ids, leaf first, then the label set
				     * (0: none); sum: the count */
	uint32_t *scratch; /* location ids of the stack being added */
	size_t scratch_cap;
};

static uint32_t str_index(struct np_pprof_builder *b, const char *s)
{
	uint32_t id = np_intern_str(&b->strings, s ? s : "");

	return id ? id - 1 : UINT32_MAX;
}

static const struct np_profile_type profile_types[NP_PROFILE_KINDS] = {
	[NP_PROFILE_CPU] = { "process_cpu", "cpu", "nanoseconds", "cpu", "nanoseconds" },
	[NP_PROFILE_OFFCPU] = { "offcpu", "offcpu", "nanoseconds", NULL, NULL },
	[NP_PROFILE_UPROBE] = { "process_cpu", "uprobe", "count", "uprobe", "count" },
};

const struct np_profile_type *np_profile_type_of(enum np_profile_kind kind)
{
	return &profile_types[(unsigned)kind < NP_PROFILE_KINDS ? kind : NP_PROFILE_CPU];
}

int np_pprof_new_kind(enum np_profile_kind kind, unsigned sample_rate_hz, int64_t time_nanos,
		      struct np_pprof_builder **out, struct np_err *err)
{
	struct np_pprof_builder *b;
	const struct np_profile_type *t;

	if ((unsigned)kind >= NP_PROFILE_KINDS)
		return np_errf(err, "pprof: unknown profile kind %d", (int)kind);
	if (kind == NP_PROFILE_CPU && sample_rate_hz == 0)
		return np_errf(err, "pprof: sample rate must be positive");
	t = &profile_types[kind];
	b = calloc(1, sizeof(*b));
	if (!b)
		return np_errf(err, "pprof: out of memory");
	b->kind = kind;
	b->period = kind == NP_PROFILE_CPU ? 1000000000LL / sample_rate_hz : 1;
	b->time_nanos = time_nanos;
	/* String 0 must be "", then the type strings. */
	if (str_index(b, "") != 0 || str_index(b, t->sample_type) == UINT32_MAX ||
	    str_index(b, t->sample_unit) == UINT32_MAX) {
		np_pprof_free(b);
		return np_errf(err, "pprof: out of memory");
	}
	*out = b;
	return 0;
}

int np_pprof_new(unsigned sample_rate_hz, int64_t time_nanos, struct np_pprof_builder **out, struct np_err *err)
{
	return np_pprof_new_kind(NP_PROFILE_CPU, sample_rate_hz, time_nanos, out, err);
}

void np_pprof_free(struct np_pprof_builder *b)
{
	if (!b)
		return;
	np_intern_free(&b->strings);
	np_intern_free(&b->functions);
	np_intern_free(&b->mappings);
	np_intern_free(&b->locations);
	np_tally_free(&b->samples);
	np_intern_free(&b->label_sets);
	free(b->map_unnamed);
	free(b->scratch);
	free(b);
}

/* Makes map_unnamed hold an entry for mapping id: the new entries are 0. */
static int unnamed_room(struct np_pprof_builder *b, uint32_t id)
{
	size_t old = b->map_unnamed_cap;

	if (np_grow((void **)&b->map_unnamed, &b->map_unnamed_cap, id, 1))
		return -1;
	memset(b->map_unnamed + old, 0, b->map_unnamed_cap - old);
	return 0;
}

static uint32_t mapping_id(struct np_pprof_builder *b, const struct np_pprof_frame *f)
{
	struct mapping_key key;
	uint32_t id = 1;

	if (b->mappings.n == 0) {
		/* Mapping 1: frames without a file (like Alloy's dummy mapping). */
		struct mapping_key none = { UINT32_MAX, UINT32_MAX, 0, 0, 0 };
		if (np_intern_add(&b->mappings, &none, sizeof(none), NULL) != 1)
			return 0;
	}
	if (f->mapping_file && *f->mapping_file) {
		key = (struct mapping_key){ str_index(b, f->mapping_file), str_index(b, f->build_id), f->map_start,
					    f->map_limit, f->map_offset };
		if (key.file == UINT32_MAX || key.build_id == UINT32_MAX)
			return 0;
		id = np_intern_add(&b->mappings, &key, sizeof(key), NULL);
	}
	/* Also for a mapping already known: its entry may be missing after a failure. */
	return id && unnamed_room(b, id) == 0 ? id : 0;
}

static uint32_t location_id(struct np_pprof_builder *b, const struct np_pprof_frame *f)
{
	struct location_key key = { 0, mapping_id(b, f), 0, f->line, 0 };

	if (!key.mapping)
		return 0;
	/* A frame without a mapping has no address anyone could use: one Location per name. */
	if (key.mapping != 1)
		key.address = f->address;
	if (f->unnamed && key.mapping != 1) {
		b->map_unnamed[key.mapping - 1] = 1;
	} else {
		struct function_key fk = { str_index(b, f->function), str_index(b, f->filename), f->start_line };
		if (fk.name == UINT32_MAX || fk.file == UINT32_MAX ||
		    !(key.function = np_intern_add(&b->functions, &fk, sizeof(fk), NULL)))
			return 0;
	}
	return np_intern_add(&b->locations, &key, sizeof(key), NULL);
}

/* The id of a sample's label set (0: none; UINT32_MAX: out of memory). */
static uint32_t label_set_id(struct np_pprof_builder *b, const struct np_pprof_sample_label *labels, size_t n)
{
	uint32_t pairs[2 * NP_PPROF_MAX_LABELS], id;

	if (!n)
		return 0;
	if (n > NP_PPROF_MAX_LABELS)
		n = NP_PPROF_MAX_LABELS;
	for (size_t i = 0; i < n; i++) {
		pairs[2 * i] = str_index(b, labels[i].key);
		pairs[2 * i + 1] = str_index(b, labels[i].value);
		if (pairs[2 * i] == UINT32_MAX || pairs[2 * i + 1] == UINT32_MAX)
			return UINT32_MAX;
	}
	id = np_intern_add(&b->label_sets, pairs, 2 * n * sizeof(uint32_t), NULL);
	return id ? id : UINT32_MAX;
}

int np_pprof_add(struct np_pprof_builder *b, const struct np_pprof_frame *frames, size_t n, uint64_t count,
		 struct np_err *err)
{
	return np_pprof_add_labeled(b, frames, n, NULL, 0, count, err);
}

int np_pprof_add_labeled(struct np_pprof_builder *b, const struct np_pprof_frame *frames, size_t n,
			 const struct np_pprof_sample_label *labels, size_t nlabels, uint64_t count, struct np_err *err)
{
	if (np_grow((void **)&b->scratch, &b->scratch_cap, n + 1, sizeof(*b->scratch)))
		return np_errf(err, "pprof: out of memory");
	for (size_t i = 0; i < n; i++) {
		b->scratch[i] = location_id(b, &frames[i]);
		if (!b->scratch[i])
			return np_errf(err, "pprof: out of memory");
	}
	/* Samples with the same stack and other labels stay apart, as pprof keeps them. */
	b->scratch[n] = label_set_id(b, labels, nlabels);
	if (b->scratch[n] == UINT32_MAX || !np_tally_add(&b->samples, b->scratch, (n + 1) * sizeof(uint32_t), count))
		return np_errf(err, "pprof: out of memory");
	return 0;
}

size_t np_pprof_sample_count(const struct np_pprof_builder *b)
{
	return np_tally_count(&b->samples);
}

uint64_t np_pprof_total(const struct np_pprof_builder *b)
{
	return b->samples.total;
}

/* ---- reading a built profile back ---- */

enum np_profile_kind np_pprof_kind(const struct np_pprof_builder *b)
{
	return b->kind;
}

int64_t np_pprof_period(const struct np_pprof_builder *b)
{
	return b->period;
}

int64_t np_pprof_time(const struct np_pprof_builder *b)
{
	return b->time_nanos;
}

size_t np_pprof_location_count(const struct np_pprof_builder *b)
{
	return b->locations.n;
}

/* Keys sit in the arenas at a 1-byte alignment: structs are copied out. */
static void key_of(const struct np_intern *t, uint32_t id, void *out, size_t size)
{
	memcpy(out, np_intern_key(t, id, NULL), size);
}

static const char *string_at(const struct np_pprof_builder *b, uint32_t idx)
{
	return np_intern_key(&b->strings, idx + 1, NULL);
}

void np_pprof_location(const struct np_pprof_builder *b, uint32_t id, struct np_pprof_frame *out)
{
	struct location_key key;
	struct mapping_key mk;

	key_of(&b->locations, id, &key, sizeof(key));
	*out = (struct np_pprof_frame){ .function = "", .address = key.address, .line = key.line };
	if (key.mapping > 1) {
		key_of(&b->mappings, key.mapping, &mk, sizeof(mk));
		out->mapping_file = string_at(b, mk.file);
		out->build_id = string_at(b, mk.build_id);
		out->map_start = mk.start;
		out->map_limit = mk.limit;
		out->map_offset = mk.offset;
	}
	if (key.function) {
		struct function_key fk;
		key_of(&b->functions, key.function, &fk, sizeof(fk));
		out->function = string_at(b, fk.name);
		out->filename = fk.file ? string_at(b, fk.file) : NULL;
		out->start_line = fk.start_line;
	} else {
		out->unnamed = 1;
	}
}

size_t np_pprof_sample(const struct np_pprof_builder *b, uint32_t id, uint32_t *locs, size_t cap, uint64_t *count)
{
	size_t len;
	const char *key = np_intern_key(&b->samples.keys, id, &len);
	size_t n = len / sizeof(uint32_t) - 1; /* the label set last */

	memcpy(locs, key, (n < cap ? n : cap) * sizeof(uint32_t));
	*count = b->samples.sums[id - 1];
	return n;
}

size_t np_pprof_sample_labels(const struct np_pprof_builder *b, uint32_t id, struct np_pprof_sample_label *out,
			      size_t cap, uint32_t *set_out)
{
	size_t len, plen, n;
	const char *key = np_intern_key(&b->samples.keys, id, &len), *pairs;
	uint32_t set;

	memcpy(&set, key + len - sizeof(set), sizeof(set));
	*set_out = set;
	if (!set)
		return 0;
	pairs = np_intern_key(&b->label_sets, set, &plen);
	n = plen / (2 * sizeof(uint32_t));
	for (size_t i = 0; i < n && i < cap; i++) {
		uint32_t kv[2];
		memcpy(kv, pairs + i * sizeof(kv), sizeof(kv));
		out[i] = (struct np_pprof_sample_label){ string_at(b, kv[0]), string_at(b, kv[1]) };
	}
	return n;
}

static void value_type(struct np_buf *out, uint32_t field, uint32_t type, uint32_t unit)
{
	size_t m = pb_begin(out, field);

	pb_int64(out, VALUE_TYPE_TYPE, type);
	pb_int64(out, VALUE_TYPE_UNIT, unit);
	pb_end(out, m);
}

static void encode_samples(struct np_pprof_builder *b, struct np_buf *out)
{
	uint64_t ids[NP_PPROF_MAX_DEPTH];
	uint32_t locs[NP_PPROF_MAX_DEPTH];

	for (uint32_t id = 1; id <= np_tally_count(&b->samples); id++) {
		size_t len;
		const char *key = np_intern_key(&b->samples.keys, id, &len);
		size_t n = len / sizeof(uint32_t) - 1;
		uint32_t set;
		int64_t value = (int64_t)b->samples.sums[id - 1] * b->period;
		size_t m = pb_begin(out, PROFILE_SAMPLE);

		for (size_t done = 0; done < n;) {
			size_t chunk = n - done < NP_PPROF_MAX_DEPTH ? n - done : NP_PPROF_MAX_DEPTH;
			memcpy(locs, key + done * sizeof(uint32_t), chunk * sizeof(uint32_t));
			for (size_t i = 0; i < chunk; i++)
				ids[i] = locs[i];
			pb_packed_uint64(out, SAMPLE_LOCATION_ID, ids, chunk);
			done += chunk;
		}
		pb_packed_int64(out, SAMPLE_VALUE, &value, 1);
		memcpy(&set, key + n * sizeof(uint32_t), sizeof(set));
		if (set) {
			size_t plen;
			const char *pairs = np_intern_key(&b->label_sets, set, &plen);
			for (size_t i = 0; i + 2 * sizeof(uint32_t) <= plen; i += 2 * sizeof(uint32_t)) {
				uint32_t k, v;
				memcpy(&k, pairs + i, sizeof(k));
				memcpy(&v, pairs + i + sizeof(k), sizeof(v));
				size_t lm = pb_begin(out, SAMPLE_LABEL);
				pb_int64(out, LABEL_KEY, k);
				pb_int64(out, LABEL_STR, v);
				pb_end(out, lm);
			}
		}
		pb_end(out, m);
	}
}

static void encode_mappings(struct np_pprof_builder *b, struct np_buf *out)
{
	for (uint32_t id = 1; id <= b->mappings.n; id++) {
		struct mapping_key key;
		size_t m = pb_begin(out, PROFILE_MAPPING);

		key_of(&b->mappings, id, &key, sizeof(key));
		pb_uint64(out, MAPPING_ID, id);
		if (id > 1) {
			if (key.start)
				pb_uint64(out, MAPPING_MEMORY_START, key.start);
			if (key.limit)
				pb_uint64(out, MAPPING_MEMORY_LIMIT, key.limit);
			if (key.offset)
				pb_uint64(out, MAPPING_FILE_OFFSET, key.offset);
			pb_int64(out, MAPPING_FILENAME, key.file);
			if (key.build_id)
				pb_int64(out, MAPPING_BUILD_ID, key.build_id);
		}
		/* has_functions: every Location of the mapping has its function (the server then
		 * leaves the mapping alone); otherwise it symbolizes the Locations without one. */
		if (!b->map_unnamed[id - 1])
			pb_bool(out, MAPPING_HAS_FUNCTIONS, 1);
		pb_end(out, m);
	}
}

static void encode_location(struct np_buf *out, uint32_t id, const struct location_key *key)
{
	size_t m = pb_begin(out, PROFILE_LOCATION);

	pb_uint64(out, LOCATION_ID, id);
	pb_uint64(out, LOCATION_MAPPING_ID, key->mapping);
	if (key->address)
		pb_uint64(out, LOCATION_ADDRESS, key->address);
	if (key->function) {
		size_t line = pb_begin(out, LOCATION_LINE);
		pb_uint64(out, LINE_FUNCTION_ID, key->function);
		if (key->line)
			pb_int64(out, LINE_LINE, key->line);
		pb_end(out, line);
	}
	pb_end(out, m);
}

static void encode_function(struct np_buf *out, uint32_t id, const struct function_key *fk)
{
	size_t m = pb_begin(out, PROFILE_FUNCTION);

	pb_uint64(out, FUNCTION_ID, id);
	pb_int64(out, FUNCTION_NAME, fk->name);
	pb_int64(out, FUNCTION_SYSTEM_NAME, fk->name);
	if (fk->file)
		pb_int64(out, FUNCTION_FILENAME, fk->file);
	if (fk->start_line)
		pb_int64(out, FUNCTION_START_LINE, fk->start_line);
	pb_end(out, m);
}

int np_pprof_encode(struct np_pprof_builder *b, int64_t duration_nanos, struct np_buf *out, struct np_err *err)
{
	const struct np_profile_type *t = &profile_types[b->kind];

	value_type(out, PROFILE_SAMPLE_TYPE, str_index(b, t->sample_type), str_index(b, t->sample_unit));
	encode_samples(b, out);
	encode_mappings(b, out);
	for (uint32_t id = 1; id <= b->locations.n; id++) {
		struct location_key key;
		key_of(&b->locations, id, &key, sizeof(key));
		encode_location(out, id, &key);
	}
	for (uint32_t id = 1; id <= b->functions.n; id++) {
		struct function_key fk;
		key_of(&b->functions, id, &fk, sizeof(fk));
		encode_function(out, id, &fk);
	}
	for (uint32_t id = 1; id <= b->strings.n; id++) {
		size_t len;
		const char *s = np_intern_key(&b->strings, id, &len);
		pb_bytes(out, PROFILE_STRING_TABLE, s, len);
	}
	if (b->time_nanos)
		pb_int64(out, PROFILE_TIME_NANOS, b->time_nanos);
	if (duration_nanos)
		pb_int64(out, PROFILE_DURATION_NANOS, duration_nanos);
	if (t->period_type)
		value_type(out, PROFILE_PERIOD_TYPE, str_index(b, t->period_type), str_index(b, t->period_unit));
	pb_int64(out, PROFILE_PERIOD, b->period);
	if (out->failed)
		return np_errf(err, "pprof: out of memory encoding %zu samples", np_tally_count(&b->samples));
	return 0;
}
