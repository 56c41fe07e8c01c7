"""Crafted ELF files a hostile container could ship, written byte by byte (standard library only):
a Go-looking file whose pclntab symbols point through a segment with a wrapping file offset, a
symbol-table bomb (a small file whose symbols' names overlap in a small string table and expand
to hundreds of MiB), the same bomb inside MiniDebugInfo, and a plain file with code. Each file
is x86-64 ELF, loadable by mmap at offset 0: one PT_LOAD maps the whole file at vaddr 0, so an
ELF virtual address is a file offset, and SPIN_CODE at code_offset() can be executed."""
import lzma
import struct

ET_DYN, EM_X86_64 = 3, 62
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOTE = 1, 2, 3, 7
SHF_ALLOC, SHF_EXECINSTR = 2, 4
PT_LOAD = 1
STT_OBJECT, STT_FUNC, STB_LOCAL, STB_GLOBAL = 1, 2, 0, 1

# spin(n): for (i = n; i; i--); return  -- mov rcx, rdi; 1: dec rcx; jnz 1b; ret
SPIN_CODE = bytes.fromhex("4889f9" "48ffc9" "75fb" "c3")
TEXT_OFFSET = 0x1000  # where .text (SPIN_CODE) starts in every file written here


class Section:
    def __init__(self, name, sh_type, data, flags=0, link=0, info=0, entsize=0, align=1, addr=None):
        self.name, self.type, self.data = name, sh_type, data
        self.flags, self.link, self.info, self.entsize, self.align = flags, link, info, entsize, align
        self.addr = addr  # None: the file offset (vaddr == offset for allocated sections)
        self.offset = 0


def build_symtab(entries, strtab, text_index):
    """.symtab bytes for entries [(st_name offset, value, size, type, bind)]."""
    out = bytearray(24)  # the null symbol
    for name, value, size, typ, bind in entries:
        out += struct.pack("<IBBHQQ", name, (bind << 4) | typ, 0, text_index, value, size)
    return bytes(out)


def build(sections, loads=None, pad_to=0):
    """An ELF64 image: header, program headers, TEXT_OFFSET-aligned .text first, the other
    sections, the section-name table and the section headers. loads: [(p_offset, p_vaddr,
    p_filesz, p_memsz, p_flags)]; None: one R+X segment mapping the whole file at vaddr 0."""
    shstr = bytearray(b"\0")
    names = {}
    for s in sections + [Section(".shstrtab", SHT_STRTAB, b"")]:
        names[s.name] = len(shstr)
        shstr += s.name.encode() + b"\0"
    nph = 1 if loads is None else len(loads)
    body = bytearray(64 + 56 * nph)
    for s in sections:
        align = TEXT_OFFSET if s.name == ".text" else max(s.align, 1)
        body += b"\0" * (-len(body) % align)
        s.offset = len(body)
        body += s.data
    shstr_off = len(body)
    body += shstr
    if len(body) < pad_to:
        body += b"\0" * (pad_to - len(body))
    body += b"\0" * (-len(body) % 8)
    shoff = len(body)
    shdrs = bytearray(64)
    for s in sections:
        addr = s.offset if s.addr is None and s.flags & SHF_ALLOC else (s.addr or 0)
        shdrs += struct.pack("<IIQQQQIIQQ", names[s.name], s.type, s.flags, addr, s.offset, len(s.data), s.link,
                             s.info, s.align, s.entsize)
    shdrs += struct.pack("<IIQQQQIIQQ", names[".shstrtab"], SHT_STRTAB, 0, 0, shstr_off, len(shstr), 0, 0, 1, 0)
    total = shoff + len(shdrs)
    if loads is None:
        loads = [(0, 0, total, total, 5)]
    ehdr = struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, b"\0" * 7, ET_DYN, EM_X86_64, 1,
                       TEXT_OFFSET, 64, shoff, 0, 64, 56, nph, 64, len(sections) + 2, len(sections) + 1)
    body[0:64] = ehdr
    for i, (off, vaddr, filesz, memsz, flags) in enumerate(loads):
        body[64 + 56 * i:64 + 56 * (i + 1)] = struct.pack("<IIQQQQQQ", PT_LOAD, flags, off, vaddr, vaddr, filesz,
                                                          memsz, 0x1000)
    return bytes(body + shdrs)


def _text():
    return Section(".text", SHT_PROGBITS, SPIN_CODE, SHF_ALLOC | SHF_EXECINSTR, align=16)


def overlapping_names(count, length, distinct=True):
    """A string table and count offsets into it naming strings of about `length` bytes: each
    run of `length` bytes + NUL serves 1000 names (its suffixes). distinct: every run ends in its
    own number, so no two names are equal (interning cannot fold them)."""
    per = 1000
    strtab = bytearray(b"\0")
    offsets = []
    for run in range((count + per - 1) // per):
        tail = b"%08d" % run if distinct else b"x" * 8
        start = len(strtab)
        strtab += b"N" * (length + per - len(tail)) + tail + b"\0"
        offsets += [start + k for k in range(min(per, count - run * per))]
    return bytes(strtab), offsets


def symbol_bomb_image(count=100_000, length=4000, distinct=True, terminated=True, aliased=False):
    """count function symbols with ~length-byte names in a file of a few MiB; plus 'hostile_spin'
    naming SPIN_CODE, which only a table that kept this .symtab can name. terminated=False: the
    string table's last byte is not a NUL (a table cannot keep it whole, and copies its names).
    aliased: all of them at one address (a table ranks aliases by their names)."""
    strtab, offsets = overlapping_names(count, length, distinct)
    spin_name = len(strtab)
    strtab += b"hostile_spin\0" + (b"" if terminated else b"x")
    entries = [(spin_name, TEXT_OFFSET, len(SPIN_CODE), STT_FUNC, STB_GLOBAL)]
    entries += [(off, 0x100000 + (0 if aliased else 16 * i), 16, STT_FUNC, STB_GLOBAL)
                for i, off in enumerate(offsets)]
    return build([_text(), Section(".symtab", SHT_SYMTAB, build_symtab(entries, strtab, 1), link=3, info=1,
                                   entsize=24, align=8),
                  Section(".strtab", SHT_STRTAB, strtab)])


def minidebuginfo_bomb_image(count=200_000, length=4000):
    """A small file whose .gnu_debugdata (xz) holds an ELF with the symbol bomb's .symtab."""
    inner = symbol_bomb_image(count, length)
    xz = lzma.compress(inner, format=lzma.FORMAT_XZ, preset=6)
    return build([_text(), Section(".gnu_debugdata", SHT_PROGBITS, xz)])


def pclntab_wrap_image():
    """Looks like a stripped Go binary that lost .gopclntab: a .go.buildinfo section and the
    runtime.pclntab/runtime.epclntab symbols, inside a PT_LOAD whose p_offset + p_filesz wraps
    around 2^64 to a small number. Reading [pclntab, epclntab) through that segment's offset
    reads 64 KiB before the file's start: outside the file."""
    strtab = b"\0runtime.pclntab\0runtime.epclntab\0"
    start = 0x400100
    entries = [(1, start, 0, STT_OBJECT, STB_LOCAL), (17, start + 0x8000, 0, STT_OBJECT, STB_LOCAL)]
    buildinfo = b"\xff Go buildinf:" + b"\x08\x02" + b"\0" * 16
    huge_off = (1 << 64) - 0x10000
    loads = [(0, 0, 0x1000 + len(SPIN_CODE), 0x1000 + len(SPIN_CODE), 5),
             (huge_off, 0x400000, 0x20000, 0x20000, 4)]
    return build([_text(), Section(".go.buildinfo", SHT_PROGBITS, buildinfo, SHF_ALLOC, align=16),
                  Section(".symtab", SHT_SYMTAB, build_symtab(entries, strtab, 1), link=4, info=3, entsize=24,
                          align=8),
                  Section(".strtab", SHT_STRTAB, strtab)], loads=loads, pad_to=0x12000)


def spin_image():
    """A plain file with SPIN_CODE named 'hostile_spin' in its .symtab."""
    strtab = b"\0hostile_spin\0"
    entries = [(1, TEXT_OFFSET, len(SPIN_CODE), STT_FUNC, STB_GLOBAL)]
    return build([_text(), Section(".symtab", SHT_SYMTAB, build_symtab(entries, strtab, 1), link=3, info=1,
                                   entsize=24, align=8),
                  Section(".strtab", SHT_STRTAB, strtab)])


def write(path, image):
    with open(path, "wb") as f:
        f.write(image)
    return path
