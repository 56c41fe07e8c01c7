/* The local store's intake: a profile reduced to (local stack, value) pairs before it
 * meets the store's tables (store.c merges them under the lock). Two front ends share
 * the frame naming and the stack walk:
 *   np_store_add_built: the profile as the engine built it (agent/pprof/builder.h),
 *     read in place: no encoding to undo. This is how pyroscope.ebpf's profiles come in.
 *   np_store_add: gzipped or plain pprof bytes from anywhere (agent/pprof/decode.h), for
 *     profiles that exist only as bytes (tests, the UI harness, fuzzing).
 * Both give the same stacks and values for the same profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/decode.h"
#include "agent/ui/store_internal.h"

void np_store_prepared_free(struct np_store_prepared *p)
{
	np_intern_free(&p->frames);
	np_tally_free(&p->stacks);
}

/* Frame keys (store_internal.h): "name" NUL, and for a frame with a mapping: file NUL
 * build_id NUL, then the tail (unaligned): u8 unnamed, u64 start, limit, offset, and for an
 * unnamed frame its u64 address. Names and paths are cut to fit the key buffer. */
static uint32_t local_frame(struct np_store_prepared *p, const char *name, const struct np_pprof_frame *m)
{
	char key[1024];
	size_t nl = strnlen(name, 511), len = nl + 1;

	memcpy(key, name, nl);
	key[nl] = '\0';
	if (m && m->mapping_file && *m->mapping_file) {
		const char *bid = m->build_id ? m->build_id : "";
		size_t fl = strnlen(m->mapping_file, 383), bl = strnlen(bid, 64);
		uint64_t tail[4] = { m->map_start, m->map_limit, m->map_offset, m->address };
		uint8_t unnamed = m->unnamed ? 1 : 0;

		memcpy(key + len, m->mapping_file, fl);
		key[len + fl] = '\0';
		len += fl + 1;
		memcpy(key + len, bid, bl);
		key[len + bl] = '\0';
		len += bl + 1;
		key[len++] = (char)unnamed;
		memcpy(key + len, tail, unnamed ? sizeof(tail) : 3 * sizeof(uint64_t));
		len += unnamed ? sizeof(tail) : 3 * sizeof(uint64_t);
	}
	return np_intern_add(&p->frames, key, len, NULL);
}

void np_store_frame_parse(const char *key, size_t len, struct np_pprof_frame *out)
{
	size_t nl = strlen(key);
	uint64_t tail[4] = { 0, 0, 0, 0 };

	*out = (struct np_pprof_frame){ .function = key };
	if (len <= nl + 1)
		return;
	out->mapping_file = key + nl + 1;
	out->build_id = out->mapping_file + strlen(out->mapping_file) + 1;
	const char *t = out->build_id + strlen(out->build_id) + 1;
	out->unnamed = *t++ != 0;
	size_t tl = (size_t)(key + len - t);
	memcpy(tail, t, tl < sizeof(tail) ? tl : sizeof(tail));
	out->map_start = tail[0];
	out->map_limit = tail[1];
	out->map_offset = tail[2];
	out->address = tail[3];
}

/* The local frame of a frame. Kept: its function name, its mapping (file, build ID and
 * range), and for a frame without a function name its address, so the pprof download
 * lets a server name what the node could not. Such a frame is named as the node names
 * unsymbolized frames, file+0xADDRESS, the address being file-relative as nodeprof and
 * Alloy write it. m->function "" or m->unnamed: no function. */
static uint32_t frame_id(struct np_store_prepared *p, struct np_pprof_frame *m)
{
	char name[96];

	if (!m->unnamed && *m->function)
		return local_frame(p, m->function, m);
	m->unnamed = 1;
	if (m->mapping_file && *m->mapping_file) {
		const char *base = strrchr(m->mapping_file, '/');
		snprintf(name, sizeof(name), "%.48s+0x%llx", base ? base + 1 : m->mapping_file,
			 (unsigned long long)m->address);
	} else {
		snprintf(name, sizeof(name), "0x%llx", (unsigned long long)m->address);
	}
	return local_frame(p, name, m);
}

/* The local frames of a profile's locations: location i's are frames[first[i]..first[i+1]),
 * innermost first; and a buffer for one stack. */
struct loc_frames {
	uint32_t *first, *frames;
	size_t nframes;
	uint32_t truncated; /* the marker frame that stands for the root side of a cut stack */
	uint32_t *stack;
	size_t depth; /* frames kept per stack */
};

static int loc_frames_init(struct np_store_prepared *p, struct loc_frames *lf, size_t nlocations,
			   size_t total_frames, size_t depth)
{
	*lf = (struct loc_frames){ .depth = depth };
	lf->first = malloc((nlocations + 1) * sizeof(uint32_t));
	lf->frames = malloc((total_frames + 1) * sizeof(uint32_t));
	lf->stack = malloc(depth * sizeof(uint32_t));
	if (!lf->first || !lf->frames || !lf->stack)
		return -1;
	lf->truncated = local_frame(p, "[truncated]", NULL);
	return lf->truncated ? 0 : -1;
}

static void loc_frames_free(struct loc_frames *lf)
{
	free(lf->first);
	free(lf->frames);
	free(lf->stack);
}

/* Adds value to the stack of the locations locs[0..nloc) (leaf first). Past the depth the
 * leaf side is kept and the root side becomes one marker frame. */
static int add_stack(struct np_store_prepared *p, struct loc_frames *lf, const uint32_t *locs, size_t nloc,
		     uint64_t value)
{
	size_t n = 0;

	for (size_t k = 0; k < nloc; k++) {
		for (uint32_t f = lf->first[locs[k]]; f < lf->first[locs[k] + 1]; f++) {
			if (n == lf->depth) {
				lf->stack[lf->depth - 1] = lf->truncated;
				goto full;
			}
			lf->stack[n++] = lf->frames[f];
		}
	}
full:
	return np_tally_add(&p->stacks, lf->stack, n * sizeof(uint32_t), value) ? 0 : -1;
}

/* A sample's labels as the store's series refinement (store_internal.h). Trace and span IDs
 * are left out: Pyroscope does not make them series either. A pair that does not fit is left
 * out, and a separator inside a value (a comm is the process's to choose) becomes '?'. */
static void labels_text(char *out, size_t cap, const struct np_pprof_sample_label *l, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(l[i].key, "trace_id") || !strcmp(l[i].key, "span_id"))
			continue;
		int w = snprintf(out + len, cap - len, NP_STORE_LABEL_SEP "%s=%s", l[i].key, l[i].value);
		if (w < 0 || (size_t)w >= cap - len) {
			out[len] = '\0';
			continue;
		}
		for (char *c = out + len + 1; *c; c++)
			if (*c == NP_STORE_LABEL_SEP[0])
				*c = '?';
		len += (size_t)w;
	}
}

/* A profile's samples, committed one label set at a time, each as its own series: every
 * group borrows the profile's frames and kind and gets the stacks of its samples only. */
struct label_groups {
	size_t nsamples;
	uint8_t *taken;
	/* Sample i's labels into group->sample_labels; -1 on allocation failure. */
	int (*labels)(void *ud, size_t i, struct np_store_prepared *group);
	/* Adds every sample from i on with the labels of sample first; -1 on allocation failure. */
	int (*add)(void *ud, size_t first, struct label_groups *g, struct np_store_prepared *group);
	void *ud;
};

static int commit_groups(struct np_store *s, const struct np_labels *labels, const struct np_store_prepared *base,
			 struct label_groups *g, struct np_err *err)
{
	int rc = 0;

	if (!g->nsamples)
		return np_store_commit(s, labels, base, err);
	for (size_t i = 0; i < g->nsamples && !rc; i++) {
		struct np_store_prepared group = *base; /* borrows base's frames */
		if (g->taken[i])
			continue;
		group.stacks = (struct np_tally)NP_TALLY_INIT;
		if (g->labels(g->ud, i, &group) || g->add(g->ud, i, g, &group)) {
			np_errf(err, "store: out of memory taking a profile in");
			rc = np_store_reject(s, err);
		} else {
			rc = np_store_commit(s, labels, &group, err);
		}
		np_tally_free(&group.stacks);
	}
	return rc;
}

/* ---- the engine's profile, as built ---- */

struct built {
	const struct np_pprof_builder *b;
	struct loc_frames lf;
	uint32_t *locs, *sets;
	int64_t period;
};

static int built_labels(void *ud, size_t i, struct np_store_prepared *group)
{
	struct built *bt = ud;
	struct np_pprof_sample_label l[NP_PPROF_MAX_LABELS];
	uint32_t set;
	size_t n = np_pprof_sample_labels(bt->b, (uint32_t)i + 1, l, NP_PPROF_MAX_LABELS, &set);

	labels_text(group->sample_labels, sizeof(group->sample_labels), l, n < NP_PPROF_MAX_LABELS ? n : NP_PPROF_MAX_LABELS);
	return 0;
}

static int built_add(void *ud, size_t first, struct label_groups *g, struct np_store_prepared *group)
{
	struct built *bt = ud;
	size_t depth = bt->lf.depth;

	for (size_t i = first; i < g->nsamples; i++) {
		uint64_t count;
		if (g->taken[i] || bt->sets[i] != bt->sets[first])
			continue;
		g->taken[i] = 1;
		/* depth + 1 locations are enough to tell a stack that must be cut. */
		size_t n = np_pprof_sample(bt->b, (uint32_t)i + 1, bt->locs, depth + 1, &count);
		if (n > depth + 1)
			n = depth + 1;
		for (size_t k = 0; k < n; k++)
			bt->locs[k]--; /* ids to indices */
		if (count && add_stack(group, &bt->lf, bt->locs, n, count * (uint64_t)bt->period))
			return -1;
	}
	return 0;
}

/* The profile's frames into p (one per Location: the builder gives each frame a Location of
 * its own), its samples' label sets into bt->sets. */
static int prepare_built(struct np_store *s, struct built *bt, struct np_store_prepared *p, size_t nsamples)
{
	size_t nloc = np_pprof_location_count(bt->b), depth = s->cfg.max_stack_depth;

	bt->period = np_pprof_period(bt->b);
	p->kind = np_pprof_kind(bt->b);
	p->period_ns = p->kind == NP_PROFILE_CPU ? bt->period : 0;
	bt->locs = malloc((depth + 1) * sizeof(uint32_t));
	bt->sets = malloc((nsamples + 1) * sizeof(uint32_t));
	if (!bt->locs || !bt->sets || loc_frames_init(p, &bt->lf, nloc, nloc, depth))
		return -1;
	for (uint32_t id = 1; id <= nloc; id++) {
		struct np_pprof_frame m;
		np_pprof_location(bt->b, id, &m);
		bt->lf.first[id - 1] = id - 1;
		if (!(bt->lf.frames[id - 1] = frame_id(p, &m)))
			return -1;
	}
	bt->lf.first[nloc] = (uint32_t)nloc;
	for (size_t i = 0; i < nsamples; i++)
		np_pprof_sample_labels(bt->b, (uint32_t)i + 1, NULL, 0, &bt->sets[i]);
	return 0;
}

int np_store_add_built(struct np_store *s, const struct np_labels *labels, const struct np_pprof_builder *b,
		       int64_t duration_ns, struct np_err *err)
{
	struct np_store_prepared p = { .frames = NP_INTERN_INIT, .stacks = NP_TALLY_INIT };
	struct built bt = { .b = b };
	size_t n = np_pprof_sample_count(b);
	struct label_groups g = { .nsamples = n, .taken = calloc(n + 1, 1), .labels = built_labels, .add = built_add,
				  .ud = &bt };
	int rc;

	p.time_nanos = np_pprof_time(b);
	p.duration_nanos = duration_ns;
	if (!g.taken || prepare_built(s, &bt, &p, n)) {
		np_errf(err, "store: out of memory taking a profile in");
		rc = np_store_reject(s, err);
	} else {
		rc = commit_groups(s, labels, &p, &g, err);
	}
	loc_frames_free(&bt.lf);
	free(bt.locs);
	free(bt.sets);
	free(g.taken);
	np_store_prepared_free(&p);
	return rc;
}

/* ---- pprof bytes ---- */

static int is_type(const struct np_pprof_profile *prof, size_t i, const char *type, const char *unit)
{
	return !strcmp(np_pprof_string(prof, prof->sample_types[i].type), type) &&
	       !strcmp(np_pprof_string(prof, prof->sample_types[i].unit), unit);
}

/* The profile's kind and the value kept: the first sample type, as Pyroscope reads a
 * profile Alloy pushed, for off-CPU time and probe calls. CPU time is a cpu/nanoseconds
 * sample type wherever it is (Go's runtime/pprof writes samples/count first), or else a
 * count of samples whose period is in nanoseconds; *mult converts the value to the
 * kind's unit. Any other sample type is refused rather than shown as what it is not. */
static int classify(const struct np_pprof_profile *prof, int *kind, size_t *idx, int64_t *mult, struct np_err *err)
{
	const struct np_profile_type *cpu = np_profile_type_of(NP_PROFILE_CPU);

	if (!prof->nsample_types)
		return np_errf(err, "profile has no sample types");
	*idx = 0;
	*mult = 1;
	for (int k = 0; k < NP_PROFILE_KINDS; k++) {
		const struct np_profile_type *t = np_profile_type_of((enum np_profile_kind)k);
		if (k != NP_PROFILE_CPU && is_type(prof, 0, t->sample_type, t->sample_unit)) {
			*kind = k;
			return 0;
		}
	}
	*kind = NP_PROFILE_CPU;
	for (size_t i = 0; i < prof->nsample_types; i++)
		if (is_type(prof, i, cpu->sample_type, cpu->sample_unit)) {
			*idx = i;
			return 0;
		}
	if (prof->period > 0 && !strcmp(np_pprof_string(prof, prof->period_type.unit), "nanoseconds"))
		for (size_t i = 0; i < prof->nsample_types; i++) {
			const char *unit = np_pprof_string(prof, prof->sample_types[i].unit);
			if (!strcmp(unit, "count") || !strcmp(unit, "samples")) {
				*idx = i;
				*mult = prof->period;
				return 0;
			}
		}
	return np_errf(err,
		       "profile has sample type %s/%s: the local store keeps CPU time (cpu/nanoseconds), off-CPU time "
		       "(offcpu/nanoseconds) and probe calls (uprobe/count)",
		       np_pprof_string(prof, prof->sample_types[0].type), np_pprof_string(prof, prof->sample_types[0].unit));
}

/* A decoded Location's frames, innermost first: one per Line, or one unnamed frame. */
static int location_frames(struct np_store_prepared *p, const struct np_pprof_profile *prof,
			   const struct np_pprof_location *loc, struct loc_frames *lf)
{
	struct np_pprof_frame m = { .function = "", .address = loc->address };
	uint32_t n = loc->nlines ? loc->nlines : 1;

	if (loc->mapping != NP_PPROF_NONE) {
		const struct np_pprof_mapping *pm = &prof->mappings[loc->mapping];
		m.mapping_file = np_pprof_string(prof, pm->filename);
		m.build_id = np_pprof_string(prof, pm->build_id);
		m.map_start = pm->start;
		m.map_limit = pm->limit;
		m.map_offset = pm->offset;
	}
	for (uint32_t l = 0; l < n; l++) {
		struct np_pprof_frame f = m;
		uint32_t fi = l < loc->nlines ? prof->lines[loc->first_line + l].function : NP_PPROF_NONE;
		if (fi != NP_PPROF_NONE) {
			f.function = np_pprof_string(prof, prof->functions[fi].name);
			if (!*f.function)
				f.function = np_pprof_string(prof, prof->functions[fi].system_name);
		}
		if (!(lf->frames[lf->nframes++] = frame_id(p, &f)))
			return -1;
	}
	return 0;
}

struct decoded {
	const struct np_pprof_profile *prof;
	struct loc_frames lf;
	size_t vidx;
	int64_t mult;
};

/* Sample i's string labels (numeric ones are not series labels). */
static size_t decoded_sample_labels(const struct np_pprof_profile *prof, size_t i, struct np_pprof_sample_label *out)
{
	const struct np_pprof_sample *sm = &prof->samples[i];
	size_t n = 0;

	for (uint32_t k = 0; k < sm->nlabels && n < NP_PPROF_MAX_LABELS; k++) {
		const struct np_pprof_label *l = &prof->labels[sm->first_label + k];
		if (l->str)
			out[n++] = (struct np_pprof_sample_label){ np_pprof_string(prof, l->key), np_pprof_string(prof, l->str) };
	}
	return n;
}

static int decoded_labels(void *ud, size_t i, struct np_store_prepared *group)
{
	struct decoded *d = ud;
	struct np_pprof_sample_label l[NP_PPROF_MAX_LABELS];

	labels_text(group->sample_labels, sizeof(group->sample_labels), l, decoded_sample_labels(d->prof, i, l));
	return 0;
}

static int same_labels(const struct np_pprof_profile *prof, size_t a, size_t b)
{
	struct np_pprof_sample_label la[NP_PPROF_MAX_LABELS], lb[NP_PPROF_MAX_LABELS];
	size_t n = decoded_sample_labels(prof, a, la);

	if (n != decoded_sample_labels(prof, b, lb))
		return 0;
	for (size_t k = 0; k < n; k++)
		if (strcmp(la[k].key, lb[k].key) || strcmp(la[k].value, lb[k].value))
			return 0;
	return 1;
}

static int decoded_add(void *ud, size_t first, struct label_groups *g, struct np_store_prepared *group)
{
	struct decoded *d = ud;
	const struct np_pprof_profile *prof = d->prof;

	for (size_t i = first; i < g->nsamples; i++) {
		const struct np_pprof_sample *sm = &prof->samples[i];
		if (g->taken[i] || (i != first && !same_labels(prof, first, i)))
			continue;
		g->taken[i] = 1;
		int64_t v = prof->values[sm->first_value + d->vidx];
		if (v > 0 && add_stack(group, &d->lf, prof->sample_locs + sm->first_loc, sm->nloc, (uint64_t)v * (uint64_t)d->mult))
			return -1;
	}
	return 0;
}

/* The profile's kind and frames into p; its samples are added per label set (decoded_add). */
static int prepare_pprof(struct np_store *s, struct decoded *d, struct np_store_prepared *p, struct np_err *err)
{
	const struct np_pprof_profile *prof = d->prof;
	size_t total_lines = 0;

	if (classify(prof, &p->kind, &d->vidx, &d->mult, err))
		return -1;
	p->period_ns = p->kind == NP_PROFILE_CPU && !strcmp(np_pprof_string(prof, prof->period_type.unit), "nanoseconds")
			       ? prof->period
			       : 0;
	p->time_nanos = prof->time_nanos;
	p->duration_nanos = prof->duration_nanos;
	for (size_t i = 0; i < prof->nlocations; i++)
		total_lines += prof->locations[i].nlines ? prof->locations[i].nlines : 1;
	if (loc_frames_init(p, &d->lf, prof->nlocations, total_lines, s->cfg.max_stack_depth))
		return np_errf(err, "store: out of memory decoding a profile");
	for (size_t i = 0; i < prof->nlocations; i++) {
		d->lf.first[i] = (uint32_t)d->lf.nframes;
		if (location_frames(p, prof, &prof->locations[i], &d->lf))
			return np_errf(err, "store: out of memory decoding a profile");
	}
	d->lf.first[prof->nlocations] = (uint32_t)d->lf.nframes;
	return 0;
}

int np_store_add(struct np_store *s, const struct np_labels *labels, void *pprof, size_t len, struct np_err *err)
{
	struct np_pprof_profile *prof = NULL;
	struct np_store_prepared p = { .frames = NP_INTERN_INIT, .stacks = NP_TALLY_INIT };
	struct decoded d = { 0 };
	struct label_groups g = { .labels = decoded_labels, .add = decoded_add, .ud = &d };
	int rc = np_pprof_decode(pprof, len, s->cfg.max_profile_bytes, &prof, err);

	free(pprof);
	if (!rc) {
		d.prof = prof;
		g.nsamples = prof->nsamples;
		rc = prepare_pprof(s, &d, &p, err);
		if (!rc && !(g.taken = calloc(g.nsamples + 1, 1)))
			rc = np_errf(err, "store: out of memory decoding a profile");
	}
	rc = rc ? np_store_reject(s, err) : commit_groups(s, labels, &p, &g, err);
	loc_frames_free(&d.lf);
	free(g.taken);
	np_pprof_profile_free(prof); /* read until the groups are committed */
	np_store_prepared_free(&p);
	return rc;
}
