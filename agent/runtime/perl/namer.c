/* Naming Perl frames from process memory: see namer.h and docs/specs/perl.md. */
#include "agent/runtime/perl/namer.h"

#include <stdlib.h>
#include <string.h>

#include "bpf/perl.h"
#include "lib/gostr.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/strbuf.h"

/* The bytes of a CV's body read at once (its stash, name and flags lie within them). */
#define CV_BODY 128
#define NONE UINT32_MAX

struct cv_key {
	uint32_t pid, gen;
	uint64_t cv, check;
};

struct cop_key {
	uint32_t pid, gen;
	uint64_t cop, line;
};

/* An entry of either cache: a string in text, or none. */
struct entry {
	uint32_t str; /* offset of a NUL-terminated string in text, NONE when it could not be read */
	uint32_t line; /* COPs: the line read from it (for words without one) */
};

struct pl_namer {
	size_t budget;
	struct np_intern cvs;  /* key: struct cv_key; id - 1 indexes cv_info */
	struct np_intern cops; /* key: struct cop_key; id - 1 indexes cop_info */
	struct entry *cv_info, *cop_info;
	size_t cv_cap, cop_cap;
	struct np_buf text;
	uint64_t reads, failed;
	rt_mem_reader read;
	void *read_ud;
};

int pl_namer_new(size_t budget_bytes, struct pl_namer **out, struct np_err *err)
{
	struct pl_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return np_errf(err, "out of memory");
	n->budget = budget_bytes ? budget_bytes : PL_NAMER_DEFAULT_BYTES;
	n->cvs = (struct np_intern)NP_INTERN_INIT;
	n->cops = (struct np_intern)NP_INTERN_INIT;
	n->read = rt_process_mem;
	*out = n;
	return 0;
}

static void clear(struct pl_namer *n)
{
	np_intern_free(&n->cvs);
	np_intern_free(&n->cops);
	free(n->cv_info);
	free(n->cop_info);
	n->cv_info = n->cop_info = NULL;
	n->cv_cap = n->cop_cap = 0;
	np_buf_free(&n->text);
}

void pl_namer_free(struct pl_namer *n)
{
	if (!n)
		return;
	clear(n);
	free(n);
}

void pl_namer_set_reader(struct pl_namer *n, rt_mem_reader read, void *ud)
{
	n->read = read;
	n->read_ud = ud;
}

static int rd(struct pl_namer *n, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	return addr ? n->read(n->read_ud, pid, addr, buf, len) : -1;
}

static int rd64(struct pl_namer *n, uint32_t pid, uint64_t addr, uint64_t *v)
{
	return rd(n, pid, addr, v, sizeof(*v));
}

static uint64_t at64(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* Appends bytes to text as UTF-8: kept as they are when they are valid UTF-8 (a name marked
 * UTF-8, or plain ASCII), else taken as Latin-1 (Perl's other encoding of names); control
 * characters become spaces, so that folded stacks stay one line. */
static void put_text(struct np_buf *b, const char *s, size_t len)
{
	int utf8 = np_go_utf8_valid(s, len);

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char enc[4];
		if (c < 0x20 || c == 0x7f)
			np_buf_putc(b, ' ');
		else if (c < 0x80 || utf8)
			np_buf_putc(b, (char)c);
		else
			np_buf_append(b, enc, np_go_encode_rune(c, enc));
	}
}

/* Appends the key of the shared string (HEK) at addr to text: 0, or -1. */
static int put_hek(struct pl_namer *n, uint32_t pid, const struct pl_layout *l, uint64_t hek)
{
	char buf[PL_NAME_MAX];
	int32_t len;

	if (rd(n, pid, hek + l->hek_len, &len, sizeof(len)) || len < 0)
		return -1;
	if ((size_t)len > sizeof(buf))
		len = (int32_t)sizeof(buf);
	if (len && rd(n, pid, hek + l->hek_key, buf, (size_t)len))
		return -1;
	put_text(&n->text, buf, (size_t)len);
	return 0;
}

/* The SV at sv is of type type: its body (sv_any), or 0. */
static uint64_t body_of(struct pl_namer *n, uint32_t pid, const struct pl_layout *l, uint64_t sv, uint32_t type,
			uint32_t *flags)
{
	uint8_t head[16];
	uint32_t f;

	if (l->sv_flags + 4 > sizeof(head) || rd(n, pid, sv, head, sizeof(head)))
		return 0;
	memcpy(&f, head + l->sv_flags, sizeof(f));
	if ((f & 0xff) != type)
		return 0;
	if (flags)
		*flags = f;
	return at64(head, 0);
}

/* Appends a package's (stash's) name to text: 0, or -1 when it has none or cannot be read. */
static int put_stash_name(struct pl_namer *n, uint32_t pid, const struct pl_layout *l, uint64_t hv)
{
	uint32_t flags = 0;
	uint64_t body = body_of(n, pid, l, hv, l->svt_pvhv, &flags), aux, name;
	int32_t count;

	if (!body || !(flags & l->svf_ook))
		return -1;
	if (l->aux_in_body) {
		aux = body + l->hv_aux;
	} else {
		uint64_t array, max;
		if (rd64(n, pid, hv + l->sv_u, &array) || rd64(n, pid, body + l->hv_max, &max) || !array ||
		    max > (1u << 30))
			return -1;
		aux = array + (max + 1) * 8;
	}
	if (rd64(n, pid, aux + l->aux_name, &name) || rd(n, pid, aux + l->aux_name_count, &count, sizeof(count)) ||
	    !name)
		return -1;
	/* A stash with several names (HvNAME_HEK_NN): the first is its name. */
	if (count && rd64(n, pid, name, &name))
		return -1;
	return name ? put_hek(n, pid, l, name) : -1;
}

/* Reads the CV's name ("Package::sub") into text: its offset, or NONE. */
static uint32_t read_cv(struct pl_namer *n, uint32_t pid, const struct pl_layout *l, uint64_t cv, uint64_t check)
{
	uint8_t body[CV_BODY];
	uint32_t flags, need = l->cv_flags + 4, off = (uint32_t)n->text.len;
	uint64_t any, gv, stash, hek;

	n->reads++;
	if (l->cv_stash + 8 > need)
		need = l->cv_stash + 8;
	if (l->cv_gv + 8 > need)
		need = l->cv_gv + 8;
	if (need > sizeof(body) || !(any = body_of(n, pid, l, cv, l->svt_pvcv, NULL)) || rd(n, pid, any, body, need))
		goto fail;
	gv = at64(body, l->cv_gv);
	stash = at64(body, l->cv_stash);
	memcpy(&flags, body + l->cv_flags, sizeof(flags));
	if (!gv || np_perl_check(gv) != check)
		goto fail; /* not the sub the sample saw */
	if (flags & l->cvf_named) {
		hek = gv;
	} else {
		uint64_t gbody = body_of(n, pid, l, gv, l->svt_pvgv, NULL);
		if (!gbody || rd64(n, pid, gbody + l->gv_namehek, &hek) || rd64(n, pid, gbody + l->gv_stash, &stash))
			goto fail;
	}
	if (stash && put_stash_name(n, pid, l, stash) == 0)
		np_buf_puts(&n->text, "::");
	else
		n->text.len = off; /* a sub of no package that can be named: its name alone */
	if (put_hek(n, pid, l, hek))
		goto fail;
	np_buf_putc(&n->text, '\0');
	if (n->text.failed)
		goto fail;
	return off;
fail:
	n->failed++;
	n->text.len = off;
	n->text.failed = 0;
	return NONE;
}

/* Reads a COP's file into text (e->str, NONE when it cannot be read) and its line. */
static void read_cop(struct pl_namer *n, uint32_t pid, const struct pl_layout *l, uint64_t cop, uint64_t line,
		     struct entry *e)
{
	char file[PL_NAME_MAX];
	uint64_t fp;
	uint32_t cline;
	size_t off = n->text.len;

	e->str = NONE;
	e->line = 0;
	if (rd(n, pid, cop + l->cop_line, &cline, sizeof(cline)) || (line && cline != line))
		return; /* not the statement the sample saw */
	e->line = cline;
	if (rd64(n, pid, cop + l->cop_file, &fp) || rt_read_cstr(n->read, n->read_ud, pid, fp, file, sizeof(file)))
		return;
	put_text(&n->text, file, strlen(file));
	np_buf_putc(&n->text, '\0');
	if (n->text.failed) {
		n->text.len = off;
		n->text.failed = 0;
		return;
	}
	e->str = (uint32_t)off;
}

int pl_namer_frames(struct pl_namer *n, uint32_t pid, uint32_t gen, const struct pl_layout *l, const uint64_t *words,
		    size_t n_words, struct sym_frame *out, uint8_t *call_root, size_t *n_out, struct np_err *err)
{
	uint32_t cv_ids[NP_PERL_MAX_FRAMES], cop_ids[NP_PERL_MAX_FRAMES];
	size_t count = n_words / NP_PERL_WORDS;

	if (count > NP_PERL_MAX_FRAMES)
		count = NP_PERL_MAX_FRAMES;
	/* First make sure every CV and COP is cached (text may move while it grows)... */
	for (size_t i = 0; i < count; i++) {
		uint64_t w0 = words[2 * i], w1 = words[2 * i + 1];
		uint64_t kind = (w0 >> NP_PERL_KIND_SHIFT) & 3;
		struct cop_key ck = { .pid = pid, .gen = gen, .cop = w1 & NP_PERL_ADDR_MASK, .line = w1 >> NP_PERL_LINE_SHIFT };
		int added;
		uint32_t id;

		cv_ids[i] = 0;
		if (kind == NP_PERL_KIND_SUB && (w0 & NP_PERL_ADDR_MASK)) {
			struct cv_key k = { .pid = pid, .gen = gen, .cv = w0 & NP_PERL_ADDR_MASK,
					    .check = w0 >> NP_PERL_CHECK_SHIFT };
			id = np_intern_add(&n->cvs, &k, sizeof(k), &added);
			if (!id || np_grow((void **)&n->cv_info, &n->cv_cap, id, sizeof(*n->cv_info)))
				return np_errf(err, "out of memory naming Perl frames");
			if (added)
				n->cv_info[id - 1].str = read_cv(n, pid, l, k.cv, k.check);
			cv_ids[i] = id;
		}
		cop_ids[i] = 0;
		if (ck.cop) {
			id = np_intern_add(&n->cops, &ck, sizeof(ck), &added);
			if (!id || np_grow((void **)&n->cop_info, &n->cop_cap, id, sizeof(*n->cop_info)))
				return np_errf(err, "out of memory naming Perl frames");
			if (added)
				read_cop(n, pid, l, ck.cop, ck.line, &n->cop_info[id - 1]);
			cop_ids[i] = id;
		}
	}
	/* ...then hand out pointers into it. */
	for (size_t i = 0; i < count; i++) {
		uint64_t w0 = words[2 * i], w1 = words[2 * i + 1];
		uint64_t kind = (w0 >> NP_PERL_KIND_SHIFT) & 3;
		struct sym_frame *f = &out[i];
		const struct entry *cop = cop_ids[i] ? &n->cop_info[cop_ids[i] - 1] : NULL;

		memset(f, 0, sizeof(*f));
		f->addr = w0 & NP_PERL_ADDR_MASK;
		call_root[i] = (w0 & NP_PERL_ENTRY_BIT) != 0;
		if (kind == NP_PERL_KIND_MAIN) {
			f->name = "<main>"; /* the main program (not a sub: caller() has no frame for it) */
		} else if (kind == NP_PERL_KIND_EVAL) {
			f->name = "(eval)"; /* what caller() calls it */
		} else if (kind == NP_PERL_KIND_SUB && cv_ids[i] && n->cv_info[cv_ids[i] - 1].str != NONE) {
			f->name = n->text.p + n->cv_info[cv_ids[i] - 1].str;
		} else {
			f->name = PL_UNREADABLE; /* a sub not named: nor placed in a file */
			continue;
		}
		f->resolved = 1;
		if (cop && cop->str != NONE)
			f->file = n->text.p + cop->str;
		f->line = (unsigned)(w1 >> NP_PERL_LINE_SHIFT);
		if (!f->line && cop)
			f->line = cop->line;
	}
	*n_out = count;
	return 0;
}

static size_t held(const struct pl_namer *n)
{
	return n->text.len + n->cvs.n * (sizeof(struct entry) + 2 * sizeof(struct cv_key)) +
	       n->cops.n * (sizeof(struct entry) + 2 * sizeof(struct cop_key));
}

void pl_namer_end_batch(struct pl_namer *n)
{
	if (held(n) > n->budget)
		clear(n);
}

void pl_namer_stats(const struct pl_namer *n, struct rt_name_stats *out)
{
	out->entries = n->cvs.n + n->cops.n;
	out->budget = n->budget;
	out->bytes = held(n);
	out->reads = n->reads;
	out->failed = n->failed;
}
