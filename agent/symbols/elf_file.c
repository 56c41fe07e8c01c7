/* libelf access: segments, build ID, debuglink, sections, function symbols. */
#include "agent/symbols/elf_file.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/file.h"
#include "lib/sorted.h"

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static void elf_init(void)
{
	(void)elf_version(EV_CURRENT);
}

/* ---- what libelf allocates, checked before it sees the image ----
 * elf_begin() allocates one descriptor per section header the file claims (extended numbering
 * lets a sparse file claim millions) and the first elf_strptr() reads the whole section-name
 * table, so both counts and that table's size are checked here, from the raw header. */

struct image {
	const unsigned char *mem; /* memory image (of size bytes), or NULL: read fd */
	int fd;
	uint64_t size;
};

static int image_read(const struct image *im, uint64_t off, void *buf, size_t n)
{
	if (off > im->size || im->size - off < n)
		return -1;
	if (im->mem) {
		memcpy(buf, im->mem + off, n);
		return 0;
	}
	return np_pread_all(im->fd, buf, n, off);
}

static uint64_t field(const unsigned char *p, size_t n, int big)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[big ? i : n - 1 - i];
	return v;
}

static int header_ok(const struct image *im)
{
	unsigned char h[64], s0[64];
	if (image_read(im, 0, h, EI_NIDENT) < 0 || memcmp(h, ELFMAG, SELFMAG) != 0)
		return 0;
	int is64 = h[EI_CLASS] == ELFCLASS64, big = h[EI_DATA] == ELFDATA2MSB;
	if ((!is64 && h[EI_CLASS] != ELFCLASS32) || (!big && h[EI_DATA] != ELFDATA2LSB) ||
	    image_read(im, 0, h, is64 ? 64 : 52) < 0)
		return 0;
	uint64_t shoff = is64 ? field(h + 40, 8, big) : field(h + 32, 4, big);
	uint64_t shentsize = field(h + (is64 ? 58 : 46), 2, big), shnum = field(h + (is64 ? 60 : 48), 2, big);
	uint64_t phnum = field(h + (is64 ? 56 : 44), 2, big), shstrndx = field(h + (is64 ? 62 : 50), 2, big);
	size_t shsz = is64 ? 64 : 40;
	if (shoff == 0)
		return phnum <= SYM_ELF_MAX_SEGMENTS;
	if (shentsize != shsz || image_read(im, shoff, s0, shsz) < 0)
		return shnum == 0 && phnum <= SYM_ELF_MAX_SEGMENTS; /* libelf then reads no sections */
	if (shnum == 0)
		shnum = is64 ? field(s0 + 32, 8, big) : field(s0 + 20, 4, big);
	if (phnum == PN_XNUM)
		phnum = field(s0 + (is64 ? 44 : 28), 4, big);
	if (shstrndx == SHN_XINDEX)
		shstrndx = field(s0 + (is64 ? 40 : 24), 4, big);
	if (shnum > SYM_ELF_MAX_SECTIONS || phnum > SYM_ELF_MAX_SEGMENTS)
		return 0;
	if (shstrndx == 0 || shstrndx >= shnum)
		return 1;
	unsigned char ss[64];
	if (image_read(im, shoff + shstrndx * shsz, ss, shsz) < 0)
		return 1; /* libelf finds no section headers there either */
	return (is64 ? field(ss + 32, 8, big) : field(ss + 20, 4, big)) <= SYM_ELF_SMALL_SECTION;
}

static Elf *begin_checked(Elf *e)
{
	if (e && elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return NULL;
	}
	return e;
}

Elf *sym_elf_begin_fd(int fd)
{
	pthread_once(&elf_once, elf_init);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	struct image im = { NULL, fd, (uint64_t)st.st_size };
	if (!header_ok(&im))
		return NULL;
	return begin_checked(elf_begin(fd, ELF_C_READ, NULL));
}

Elf *sym_elf_begin_mem(void *image, size_t len)
{
	pthread_once(&elf_once, elf_init);
	struct image im = { image, -1, len };
	if (!image || !header_ok(&im))
		return NULL;
	return begin_checked(elf_memory(image, len));
}

void sym_hex(const unsigned char *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Scans a note buffer (already in host byte order: libelf converts ELF_T_NHDR) for the GNU build ID. */
static int build_id_from_notes(Elf_Data *d, char *out)
{
	size_t off = 0, next;
	GElf_Nhdr nh;
	size_t name_off, desc_off;
	while (off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
		    nh.n_descsz <= SYM_BUILD_ID_MAX) {
			sym_hex((const unsigned char *)d->d_buf + desc_off, nh.n_descsz, out);
			return 0;
		}
		off = next;
	}
	return -1;
}

/* The contents of a section of at most max bytes (libelf reads a section whole on first
 * access); NULL when larger, empty or unreadable. */
static Elf_Data *bounded_data(Elf_Scn *scn, const GElf_Shdr *sh, size_t max, int raw)
{
	if (sh->sh_type == SHT_NOBITS || sh->sh_size == 0 || sh->sh_size > max)
		return NULL;
	Elf_Data *d = raw ? elf_rawdata(scn, NULL) : elf_getdata(scn, NULL);
	return d && d->d_buf && d->d_size ? d : NULL;
}

static void read_build_id(Elf *e, struct sym_elf_info *info)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	unsigned notes = 0;
	while ((scn = elf_nextscn(e, scn)) != NULL && notes < SYM_ELF_MAX_NOTES) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		notes++;
		Elf_Data *d = bounded_data(scn, &sh, SYM_ELF_NOTE_MAX, 0);
		if (d && build_id_from_notes(d, info->build_id) == 0)
			return;
	}
	/* No section headers (or no note section): the PT_NOTE segments. */
	size_t nph;
	if (elf_getphdrnum(e, &nph) != 0)
		return;
	notes = 0;
	for (size_t i = 0; i < nph && notes < SYM_ELF_MAX_NOTES; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE || ph.p_filesz == 0 ||
		    ph.p_filesz > SYM_ELF_NOTE_MAX || ph.p_offset > INT64_MAX)
			continue;
		notes++;
		Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
		                                   ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && d->d_buf && build_id_from_notes(d, info->build_id) == 0)
			return;
	}
}

static Elf_Scn *find_section(Elf *e, const char *name, GElf_Shdr *out)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (!gelf_getshdr(scn, out))
			continue;
		const char *n = elf_strptr(e, shstrndx, out->sh_name);
		if (n && strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

int sym_elf_section_size(Elf *e, const char *name, uint64_t *size)
{
	GElf_Shdr sh;
	if (!find_section(e, name, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
		return -1;
	*size = sh.sh_size;
	return 0;
}

const void *sym_elf_section(Elf *e, const char *name, size_t max, size_t *len, uint64_t *addr)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(e, name, &sh);
	Elf_Data *d = scn ? bounded_data(scn, &sh, max, 1) : NULL;
	if (!d)
		return NULL;
	*len = d->d_size;
	if (addr)
		*addr = sh.sh_addr;
	return d->d_buf;
}

static void read_debuglink(Elf *e, struct sym_elf_info *info)
{
	size_t len;
	const char *p = sym_elf_section(e, ".gnu_debuglink", SYM_ELF_NOTE_MAX, &len, NULL);
	if (!p)
		return;
	size_t nl = strnlen(p, len);
	if (nl == 0 || nl >= sizeof(info->debuglink) || memchr(p, '/', nl))
		return;
	size_t crc_off = (nl + 1 + 3) & ~(size_t)3;
	if (crc_off + 4 > len)
		return;
	const unsigned char *c = (const unsigned char *)p + crc_off;
	GElf_Ehdr eh;
	if (!gelf_getehdr(e, &eh))
		return;
	if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
		info->debuglink_crc = (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
	else
		info->debuglink_crc = (uint32_t)c[3] << 24 | (uint32_t)c[2] << 16 | (uint32_t)c[1] << 8 | c[0];
	memcpy(info->debuglink, p, nl);
	info->debuglink[nl] = '\0';
}

int sym_elf_info_read(Elf *e, struct sym_elf_info *info)
{
	memset(info, 0, sizeof(*info));
	GElf_Ehdr eh;
	if (!gelf_getehdr(e, &eh))
		return -1;
	info->elf_type = eh.e_type;
	info->machine = eh.e_machine;
	size_t nph;
	if (elf_getphdrnum(e, &nph) != 0)
		nph = 0;
	for (size_t i = 0; i < nph && info->nloads < SYM_MAX_LOADS; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		struct sym_load *l = &info->loads[info->nloads++];
		l->vaddr = ph.p_vaddr;
		l->offset = ph.p_offset;
		l->filesz = ph.p_filesz;
		l->memsz = ph.p_memsz;
		l->flags = ph.p_flags;
	}
	read_build_id(e, info);
	read_debuglink(e, info);
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx) == 0) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		while ((scn = elf_nextscn(e, scn)) != NULL) {
			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type == SHT_SYMTAB && sh.sh_size)
				info->has_symtab = 1;
			if (sh.sh_type == SHT_DYNSYM && sh.sh_size)
				info->has_dynsym = 1;
			const char *n = elf_strptr(e, shstrndx, sh.sh_name);
			if (!n)
				continue;
			if (strcmp(n, ".gnu_debugdata") == 0 && sh.sh_type != SHT_NOBITS)
				info->has_debugdata = 1;
			else if ((strcmp(n, ".gopclntab") == 0 || strcmp(n, ".data.rel.ro.gopclntab") == 0) &&
			         sh.sh_type != SHT_NOBITS)
				info->has_gopclntab = 1;
			else if (strcmp(n, ".go.buildinfo") == 0 || strcmp(n, ".note.go.buildid") == 0)
				info->is_go = 1;
			else if (strcmp(n, ".text") == 0) {
				info->text_start = sh.sh_addr;
				info->text_end = sh.sh_addr + sh.sh_size;
			}
		}
	}
	return 0;
}

static int usable_name(const char *n)
{
	/* ARM/AArch64 mapping symbols ($x, $d, $t, $a) mark code/data, they are not functions. */
	if (n[0] == '$' && (n[1] == 'x' || n[1] == 'd' || n[1] == 't' || n[1] == 'a') &&
	    (n[2] == '\0' || n[2] == '.'))
		return 0;
	return n[0] != '\0';
}

/* The first section of sh_type and the bytes reading it costs: the table, a converted copy
 * when the file's byte order is not ours, and its string table. NULL when absent. */
static Elf_Scn *symbol_section(Elf *e, unsigned sh_type, GElf_Shdr *sh, uint64_t *cost)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn)) != NULL)
		if (gelf_getshdr(scn, sh) && sh->sh_type == sh_type)
			break;
	if (!scn || sh->sh_entsize == 0)
		return NULL;
	GElf_Shdr strsh;
	Elf_Scn *str = elf_getscn(e, sh->sh_link);
	if (!str || !gelf_getshdr(str, &strsh) || strsh.sh_type == SHT_NOBITS)
		return NULL;
	GElf_Ehdr eh;
	int foreign = gelf_getehdr(e, &eh) && eh.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	                                                               ? ELFDATA2MSB : ELFDATA2LSB);
	uint64_t c;
	if (__builtin_mul_overflow(sh->sh_size, foreign ? 2 : 1, &c) || __builtin_add_overflow(c, strsh.sh_size, &c))
		c = UINT64_MAX;
	*cost = c;
	return scn;
}

/* A defined function with an address: the only symbols a table keeps (checked before its name
 * is looked up). */
static int is_function(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);
	return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF && s->st_value != 0;
}

static int bind_of(unsigned char st_info)
{
	return GELF_ST_BIND(st_info) == STB_GLOBAL ? SYM_BIND_GLOBAL
	       : GELF_ST_BIND(st_info) == STB_WEAK ? SYM_BIND_WEAK
	                                           : SYM_BIND_LOCAL;
}

/* Adds one function (is_function) to b when its name is usable: 1 added, 0 not, -1 out of
 * memory. */
static int add_one(struct sym_stb *b, const GElf_Sym *s, const char *name, size_t len, int thumb,
                   struct np_err *err)
{
	if (!name || !usable_name(name))
		return 0;
	uint64_t value = thumb ? s->st_value & ~(uint64_t)1 : s->st_value;
	/* Symbol versions (".symver" definitions keep "name@@VER" in .symtab): not part of the name. */
	len = sym_name_unversioned(name, len);
	if (sym_stb_add(b, value, s->st_size, name, len, sym_rank(s->st_size, bind_of(s->st_info), name), 0, err) < 0)
		return -1;
	return b->over ? 0 : 1;
}

/* Reading a file's symbols with pread, a window at a time, rather than through libelf, which
 * reads a section and its strings whole: node's .symtab and .strtab are 10 MiB. Entries are
 * read STREAM_SYMS at a time; the ones kept are then, up to STREAM_BATCH, handed on with their
 * names fetched in string table order through a sym_strwin (symtab.h), each window read once
 * per batch. In symbol order node's names jump back and forth across its 7.5 MiB .strtab: a
 * window per name (72,000 reads, 1.2 GB copied per file, a quarter of a cold recording's CPU);
 * in string order, one sweep per batch (6 for node's 85,800 functions). A table's own build
 * reads no name at all when it keeps the string table whole (add_strtab_one). */
#define STREAM_SYMS 1024
#define STREAM_BATCH 16384
/* Whether the section sh of e (string table strsh) can be read from fd by add_streamed: a
 * 64-bit file of this machine's byte order, with entries of Elf64_Sym's size. */
static int streamable(Elf *e, int fd, const GElf_Shdr *sh)
{
	GElf_Ehdr eh;
	return fd >= 0 && gelf_getehdr(e, &eh) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	       eh.e_ident[EI_DATA] == (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? ELFDATA2MSB : ELFDATA2LSB) &&
	       sh->sh_type != SHT_NOBITS && sh->sh_entsize == sizeof(Elf64_Sym);
}

/* What a streamed walk does with each symbol keep() let through, with its name and the name's
 * length (NULL when it cannot be read): 0 go on, 1 stop, -1 fail (err set). */
typedef int (*stream_fn)(void *ud, const Elf64_Sym *s, const char *name, size_t len, struct np_err *err);

struct stream {
	struct sym_strwin *w;
	uint64_t *keys; /* 2 * STREAM_BATCH: name offset << 32 | index in the batch, and scratch */
	stream_fn fn;
	void *ud;
};

/* Hands the n symbols of batch to fn in the order of their names' offsets (ties: symbol order):
 * its last answer. */
static int stream_batch(struct stream *st, const Elf64_Sym *batch, size_t n, struct np_err *err)
{
	for (size_t j = 0; j < n; j++)
		st->keys[j] = (uint64_t)batch[j].st_name << 32 | j;
	np_sort_by_key32(st->keys, n, st->keys + STREAM_BATCH);
	for (size_t j = 0; j < n; j++) {
		const Elf64_Sym *v = &batch[(uint32_t)st->keys[j]];
		size_t len = 0;
		const char *name = sym_strwin_name(st->w, v->st_name, &len);
		int rc = st->fn(st->ud, v, name, len, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Bytes a streamed walk holds. */
#define STREAM_BYTES                                                                                      \
	(sizeof(struct sym_strwin) + (STREAM_SYMS + STREAM_BATCH) * sizeof(Elf64_Sym) +                       \
	 2 * STREAM_BATCH * sizeof(uint64_t))

/* Walks the symbols of section sh (strings strsh) of fd that keep() accepts, their names
 * fetched in string-table order a batch at a time (see above); with strsh NULL, in symbol
 * order and without names (fn gets NULL). 0 (fn stopped it, or the end), -1 with err. */
static int stream_symbols(int fd, const GElf_Shdr *sh, const GElf_Shdr *strsh,
                          int (*keep)(const Elf64_Sym *, const void *ud), stream_fn fn, void *ud, struct np_err *err)
{
	struct sym_strwin *w = strsh ? malloc(sizeof(*w)) : NULL;
	Elf64_Sym *v = malloc(STREAM_SYMS * sizeof(*v)), *batch = strsh ? malloc(STREAM_BATCH * sizeof(*batch)) : NULL;
	uint64_t *keys = strsh ? malloc(2 * STREAM_BATCH * sizeof(*keys)) : NULL;
	struct stream st = { w, keys, fn, ud };
	size_t nbatch = 0;
	int rc = 0;

	if (!v || (strsh && (!w || !batch || !keys))) {
		free(w);
		free(v);
		free(batch);
		free(keys);
		return np_errf(err, "symbols: out of memory");
	}
	if (w)
		*w = (struct sym_strwin){ .fd = fd, .off = strsh->sh_offset, .size = strsh->sh_size };
	uint64_t count = sh->sh_size / sizeof(Elf64_Sym);
	for (uint64_t i = 1; i < count && i <= INT_MAX && rc == 0;) {
		size_t k = count - i < STREAM_SYMS ? (size_t)(count - i) : STREAM_SYMS;
		ssize_t r = pread(fd, v, k * sizeof(*v), (off_t)(sh->sh_offset + i * sizeof(Elf64_Sym)));
		if (r <= 0)
			break; /* a truncated file: what was read stands */
		k = (size_t)r / sizeof(*v);
		for (size_t j = 0; j < k && rc == 0; j++) {
			if (!keep(&v[j], ud))
				continue; /* skipped before its name is looked for */
			if (!w) {
				rc = fn(ud, &v[j], NULL, 0, err);
				continue;
			}
			batch[nbatch++] = v[j];
			if (nbatch == STREAM_BATCH) {
				rc = stream_batch(&st, batch, nbatch, err);
				nbatch = 0;
			}
		}
		if (k == 0)
			break;
		i += k;
	}
	if (rc == 0 && nbatch)
		rc = stream_batch(&st, batch, nbatch, err);
	free(w);
	free(v);
	free(batch);
	free(keys);
	return rc < 0 ? -1 : 0;
}

static int keep_function(const Elf64_Sym *v, const void *ud)
{
	(void)ud;
	GElf_Sym s = { .st_info = v->st_info, .st_shndx = v->st_shndx, .st_value = v->st_value };
	return is_function(&s);
}


struct add_ctx {
	struct sym_stb *b;
	int thumb;
	size_t *added;
};

static int add_streamed_one(void *ud, const Elf64_Sym *v, const char *name, size_t len, struct np_err *err)
{
	struct add_ctx *c = ud;
	GElf_Sym s = { .st_name = v->st_name, .st_info = v->st_info, .st_other = v->st_other,
		       .st_shndx = v->st_shndx, .st_value = v->st_value, .st_size = v->st_size };
	int got = add_one(c->b, &s, name, len, c->thumb, err);
	if (got < 0)
		return -1;
	*c->added += (size_t)got;
	return c->b->over ? 1 : 0;
}

/* A function named in the string table the builder keeps whole (add_kept_strtab). */
static int add_strtab_one(void *ud, const Elf64_Sym *v, const char *name, size_t len, struct np_err *err)
{
	struct add_ctx *c = ud;
	size_t before = c->b->n;
	(void)name;
	(void)len;
	if (sym_stb_add_strtab(c->b, v->st_value, v->st_size, v->st_name, sym_rank(v->st_size, bind_of(v->st_info), ""),
	                       err) < 0)
		return -1;
	*c->added += c->b->n - before;
	return c->b->over ? 1 : 0;
}

int sym_elf_add_symbols(Elf *e, int fd, unsigned sh_type, struct sym_stb *b, size_t *added, struct np_err *err)
{
	*added = 0;
	GElf_Shdr sh, strsh;
	uint64_t cost;
	Elf_Scn *scn = symbol_section(e, sh_type, &sh, &cost);
	if (!scn)
		return 0;
	GElf_Ehdr eh;
	int thumb = gelf_getehdr(e, &eh) && eh.e_machine == EM_ARM;
	Elf_Scn *str = elf_getscn(e, sh.sh_link);
	if (streamable(e, fd, &sh) && str && gelf_getshdr(str, &strsh)) {
		/* What the build holds of the input is its two buffers. */
		if (sym_stb_charge(b, STREAM_BYTES) < 0) {
			b->over = 1;
			return 0;
		}
		struct add_ctx c = { b, thumb, added };
		/* The first source of a table from the file it is built from: its string table is
		 * kept whole as the table's names and none is read now (docs/specs/symb-cache.md §3).
		 * Not for Thumb, whose function addresses are adjusted and names checked for
		 * mapping symbols. */
		int whole = !thumb && fd == b->ext_fd && strsh.sh_type == SHT_STRTAB &&
		            sym_stb_keep_strtab(b, strsh.sh_offset, strsh.sh_size) == 0;
		int rc = whole ? stream_symbols(fd, &sh, NULL, keep_function, add_strtab_one, &c, err)
		               : stream_symbols(fd, &sh, &strsh, keep_function, add_streamed_one, &c, err);
		sym_stb_uncharge(b, STREAM_BYTES);
		return rc;
	}
	/* Charged before libelf reads anything: what the build holds includes its input. */
	if (cost > SIZE_MAX || sym_stb_charge(b, (size_t)cost) < 0) {
		b->over = 1;
		return 0;
	}
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return 0;
	size_t symsz = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	if (!symsz)
		return 0;
	size_t count = d->d_size / symsz;
	for (size_t i = 1; i < count && i <= INT_MAX; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			break;
		if (!is_function(&s))
			continue;
		const char *name = elf_strptr(e, sh.sh_link, s.st_name);
		int got = add_one(b, &s, name, name ? strlen(name) : 0, thumb, err);
		if (got < 0)
			return -1;
		if (b->over)
			return 0; /* over budget: the caller rolls this source back */
		*added += (size_t)got;
	}
	return 0;
}

/* The GNU hash of the dynamic linker (.gnu.hash). */
static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

/* Looks name up in fd's .dynsym through its .gnu.hash, as the dynamic linker does: a bucket, then
 * a short hash chain, a few preads instead of reading node's 7 MiB of .dynsym and .dynstr. 1 found
 * (*value, *size), 0 not in .dynsym, -1 when there is no usable .gnu.hash (the caller scans). */
static int gnu_hash_find(Elf *e, int fd, const char *name, uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr hs, ds, ss;
	while ((scn = elf_nextscn(e, scn)) != NULL)
		if (gelf_getshdr(scn, &hs) && hs.sh_type == SHT_GNU_HASH)
			break;
	Elf_Scn *dyn = scn ? elf_getscn(e, hs.sh_link) : NULL;
	if (!dyn || !gelf_getshdr(dyn, &ds) || ds.sh_type != SHT_DYNSYM || !streamable(e, fd, &ds))
		return -1;
	Elf_Scn *str = elf_getscn(e, ds.sh_link);
	if (!str || !gelf_getshdr(str, &ss) || ss.sh_type == SHT_NOBITS)
		return -1;
	uint32_t hdr[4]; /* nbuckets, symoffset, bloom words, bloom shift */
	if (hs.sh_size < sizeof(hdr) || np_pread_all(fd, hdr, sizeof(hdr), hs.sh_offset) < 0 || hdr[0] == 0)
		return -1;
	uint64_t nsyms = ds.sh_size / sizeof(Elf64_Sym), buckets = sizeof(hdr) + (uint64_t)hdr[2] * 8;
	uint64_t chain = buckets + (uint64_t)hdr[0] * 4;
	if (chain > hs.sh_size)
		return -1;
	uint32_t h = gnu_hash(name), idx;
	if (np_pread_all(fd, &idx, 4, hs.sh_offset + buckets + (uint64_t)(h % hdr[0]) * 4) < 0)
		return -1;
	if (idx == 0)
		return 0;
	if (idx < hdr[1] || idx >= nsyms)
		return -1;
	size_t len = strlen(name);
	char buf[256];
	for (; idx < nsyms; idx++) {
		uint32_t hv;
		uint64_t at = chain + (uint64_t)(idx - hdr[1]) * 4;
		if (at + 4 > hs.sh_size || np_pread_all(fd, &hv, 4, hs.sh_offset + at) < 0)
			return -1;
		if ((hv | 1) == (h | 1)) {
			Elf64_Sym sym;
			if (np_pread_all(fd, &sym, sizeof(sym), ds.sh_offset + idx * sizeof(sym)) < 0)
				return -1;
			if (sym.st_shndx != SHN_UNDEF && len < sizeof(buf) && sym.st_name < ss.sh_size &&
			    ss.sh_size - sym.st_name > len && np_pread_all(fd, buf, len + 1, ss.sh_offset + sym.st_name) == 0 &&
			    memcmp(buf, name, len) == 0 && buf[len] == '\0') {
				*value = sym.st_value;
				*size = sym.st_size;
				return 1;
			}
		}
		if (hv & 1)
			break;
	}
	return 0;
}

struct find_ctx {
	const char *name, *prefix;
	size_t plen;
	uint64_t only_size; /* each_symbol: only symbols of this size (0: any) */
	sym_elf_symbol_fn fn;
	void *ud;
	uint64_t value, size;
	size_t seen;
};

/* A defined symbol, of the size asked for when one is. */
static int keep_defined(const Elf64_Sym *v, const void *ud)
{
	const struct find_ctx *c = ud;
	return v->st_shndx != SHN_UNDEF && (!c->only_size || v->st_size == c->only_size);
}

static int find_one(void *ud, const Elf64_Sym *s, const char *name, size_t len, struct np_err *err)
{
	struct find_ctx *c = ud;
	(void)len;
	(void)err;
	if (!name || strcmp(name, c->name) != 0)
		return 0;
	c->value = s->st_value;
	c->size = s->st_size;
	c->seen = 1;
	return 1;
}

static int each_one(void *ud, const Elf64_Sym *s, const char *name, size_t len, struct np_err *err)
{
	struct find_ctx *c = ud;
	(void)len;
	(void)err;
	if (!name || strncmp(name, c->prefix, c->plen) != 0)
		return 0;
	c->seen++;
	return c->fn(c->ud, name, s->st_value, s->st_size) ? 1 : 0;
}

/* The symbol section of sh_type and its strings, when fd can be streamed (stream_symbols). */
static int stream_sections(Elf *e, int fd, unsigned sh_type, size_t max_bytes, GElf_Shdr *sh, GElf_Shdr *strsh)
{
	uint64_t cost;
	Elf_Scn *scn = symbol_section(e, sh_type, sh, &cost);
	Elf_Scn *str = scn ? elf_getscn(e, sh->sh_link) : NULL;
	return str && cost <= max_bytes && streamable(e, fd, sh) && gelf_getshdr(str, strsh) ? 0 : -1;
}

int sym_elf_find_symbol(Elf *e, int fd, const char *name, size_t max_bytes, uint64_t *value, uint64_t *size)
{
	/* .dynsym first: what a runtime's detection asks for is exported, and .dynsym with its
	 * strings is a fraction of .symtab's (node: 2.8 against 10 MiB, read whole by libelf). */
	static const unsigned types[] = { SHT_DYNSYM, SHT_SYMTAB };
	int hashed = fd >= 0 ? gnu_hash_find(e, fd, name, value, size) : -1;
	if (hashed == 1)
		return 0;
	for (size_t t = hashed == 0 ? 1 : 0; t < 2; t++) {
		GElf_Shdr sh, strsh;
		if (stream_sections(e, fd, types[t], max_bytes, &sh, &strsh) == 0) {
			struct find_ctx c = { .name = name };
			struct np_err err;
			if (stream_symbols(fd, &sh, &strsh, keep_defined, find_one, &c, &err) == 0 && c.seen) {
				*value = c.value;
				*size = c.size;
				return 0;
			}
			continue;
		}
		uint64_t cost;
		Elf_Scn *scn = symbol_section(e, types[t], &sh, &cost);
		if (!scn || cost > max_bytes)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t symsz = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
		if (!d || !d->d_buf || !symsz)
			continue;
		size_t count = d->d_size / symsz;
		for (size_t i = 1; i < count && i <= INT_MAX; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s))
				break;
			const char *n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && strcmp(n, name) == 0 && s.st_shndx != SHN_UNDEF) {
				*value = s.st_value;
				*size = s.st_size;
				return 0;
			}
		}
	}
	return -1;
}

int sym_elf_each_symbol(Elf *e, int fd, unsigned sh_type, const char *prefix, uint64_t only_size, size_t max_bytes,
			sym_elf_symbol_fn fn, void *ud)
{
	GElf_Shdr sh, strsh;
	uint64_t cost;
	size_t plen = strlen(prefix), seen = 0;

	if (stream_sections(e, fd, sh_type, max_bytes, &sh, &strsh) == 0) {
		struct find_ctx c = { .prefix = prefix, .plen = plen, .only_size = only_size, .fn = fn, .ud = ud };
		struct np_err err;
		if (stream_symbols(fd, &sh, &strsh, keep_defined, each_one, &c, &err) < 0)
			return -1;
		return (int)(c.seen > INT_MAX ? INT_MAX : c.seen);
	}
	Elf_Scn *scn = symbol_section(e, sh_type, &sh, &cost);
	if (!scn || cost > max_bytes)
		return -1;
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t symsz = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	if (!d || !d->d_buf || !symsz)
		return -1;
	size_t count = d->d_size / symsz;
	for (size_t i = 1; i < count && i <= INT_MAX; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			break;
		if (s.st_shndx == SHN_UNDEF || (only_size && s.st_size != only_size))
			continue;
		const char *n = elf_strptr(e, sh.sh_link, s.st_name);
		if (!n || strncmp(n, prefix, plen) != 0)
			continue;
		seen++;
		if (fn(ud, n, s.st_value, s.st_size))
			break;
	}
	return (int)(seen > INT_MAX ? INT_MAX : seen);
}

int sym_elf_read_vaddr(int fd, const struct sym_elf_info *info, uint64_t vaddr, void *buf, size_t len)
{
	for (size_t i = 0; i < info->nloads; i++) {
		const struct sym_load *l = &info->loads[i];
		if (vaddr < l->vaddr || vaddr - l->vaddr >= l->memsz || l->memsz - (vaddr - l->vaddr) < len)
			continue;
		uint64_t in = vaddr - l->vaddr;
		if (in >= l->filesz) { /* .bss: zero until the program writes it */
			memset(buf, 0, len);
			return 0;
		}
		if (l->filesz - in < len)
			return -1; /* straddles the end of the file's bytes: not a value we read */
		return np_pread_all(fd, buf, len, l->offset + in);
	}
	return -1;
}
