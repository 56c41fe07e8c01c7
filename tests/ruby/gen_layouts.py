#!/usr/bin/env python3
"""Derives agent/runtime/ruby/layout.c, the Ruby walker's and namer's table of structure offsets,
from each Ruby version's own headers.

CRuby installs its public headers (include/ruby/: RString, RArray, st_table) but not the internal
ones that define the VM's structures (vm_core.h, ractor_core.h, iseq.h, method.h,
internal/class.h, symbol.h, id.h). Those are taken from a copy of each release's sources: a
directory per version named ruby-X.Y.Z-pN holding those files, as the ruby_core_source gems lay
them out (DataDog/datadog-ruby_core_source, ruby-debug/debase-ruby_core_source: copies of each
release tag's headers), or as extracted from ruby/ruby at the release tag. Several roots may be
given: a file missing from the first root's copy of a version is taken from the next (the
DataDog copies lack symbol.h, the debase ones have it).

tests/ruby/vm_layout_probe.c is compiled against one version's internal headers with the
installed ruby3.1-dev public headers and config.h standing in for that version's own configure
output (x86-64, default options), and prints the internal offsets; tests/ruby/layout_probe.c,
compiled against the installed public headers, prints the public-header fields. The public fields
are only taken so for versions whose public structures are those of the installed headers (2.5,
2.6, 2.7, 3.0 and 3.1: no USE_RVARGC); 3.2 - 3.4's RString, RArray and RUBY_FL_SINGLETON are
PUBLIC_VWA and PUBLIC_SINGLETON below, transcribed from their headers, which nothing here
installs. Ruby 2.x's internal headers are compiled with tests/ruby/compat_2x.h first; 2.5's and
2.6's symbol table structure, private to their symbol.c, is declared by the probe
(SYMBOLS_IN_SYMBOL_C); 2.5's line table, entries holding their positions, is measured as it is
(LINES_IN_ENTRIES).

    tests/ruby/gen_layouts.py ROOT [ROOT...] > agent/runtime/ruby/layout.c
    tests/ruby/gen_layouts.py --check ROOT [ROOT...]   (compare with build/harness/rb_layout)

The 3.1 row so derived is the one checked against a live Debian ruby3.1 process
(tests/integration/test_ruby_stacks.py); the other rows are checked by the same derivation."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VM_PROBE = os.path.join(HERE, "vm_layout_probe.c")
PUBLIC_PROBE = os.path.join(HERE, "layout_probe.c")
PUBLIC_VERSION = "3.1"
# Versions in the table: (major, minor, the release whose headers are read): the versions the
# walker and the namer support (docs/specs/ruby.md §1).
VERSIONS = [(2, 5, "2.5.0-p0"), (2, 6, "2.6.0-p0"), (2, 7, "2.7.0-p0"), (3, 0, "3.0.0-p0"), (3, 1, "3.1.0-p0"), (3, 2, "3.2.0-p0"), (3, 3, "3.3.0-p0"),
            (3, 4, "3.4.0-p0")]
# Other copies of the same release a file may come from: debase-ruby_core_source names its 3.4.0
# copy ruby-3.4.0-p-1 (RUBY_PATCHLEVEL -1 as the tag's version.h left it; vm_core.h, iseq.h,
# method.h and internal/class.h are byte for byte DataDog's ruby-3.4.0-p0's).
ALIASES = {"3.4.0-p0": ["3.4.0-p-1"]}
INTERNAL = ["vm_core.h", "iseq.h", "method.h", "symbol.h", "id.h"]
# RString and RArray as 3.2 - 3.4 declare them with variable-width allocation (USE_RVARGC, on by
# default from 3.2, the only way from 3.3): include/ruby/internal/core/rstring.h and rarray.h at
# v3_2_0, v3_3_0 and v3_4_0. No package here installs those public headers and no header copy
# holds them, so these fields are transcribed from them (not derived): the structures' fields are
# cross-checked with rbspy's bindgen output (ruby-structs/src/ruby_3_2_0.rs, ruby_3_3_0.rs,
# ruby_3_4_0.rs). RString: 3.2 {basic; as {heap {len; ptr; aux}; embed {len; ary[1]}}}, 3.3 and
# 3.4 {basic; len; as {heap {ptr; aux}; embed {ary[1]}}}: the length is at 16 either way, the
# heap pointer and the embedded bytes at 24. RArray: {basic; as {heap {len; aux; ptr}; ary[1]}},
# the embedded length in the flags, RARRAY_EMBED_LEN_MASK FL_USER3..FL_USER9 (7 bits from 15).
# RSTRING_NOEMBED and RARRAY_EMBED_FLAG are FL_USER1 as before; st_table (not read from 3.2 on:
# class names are not instance variables there) is unchanged. RUBY_FL_SINGLETON (fl_type.h) is
# FL_USER0 to 3.3 and FL_USER1 in 3.4 (PUBLIC_SINGLETON; rbspy's bindings of each release's
# headers say 4096 and 8192: ruby_fl_type_RUBY_FL_SINGLETON).
PUBLIC_VWA = {"str_noembed": 1 << 13, "str_embed_len_shift": 0, "str_embed_len_mask": 0, "str_embed_ary": 24,
              "str_heap_len": 16, "str_heap_ptr": 24, "str_len": 16, "ary_embed": 1 << 13,
              "ary_embed_len_shift": 15, "ary_embed_len_mask": 0x7f, "ary_embed_ary": 16, "ary_heap_len": 16,
              "ary_heap_ptr": 32}
# 3.2's USE_RVARGC, and the attribute macros of 3.3's public headers its iseq.h uses, given to
# their internal headers compiled against 3.1's public ones (the struct they wrap, iseq.h's
# iseq_compile_data, is not measured).
PUBLIC_SINGLETON = {(3, 2): 1 << 12, (3, 3): 1 << 12, (3, 4): 1 << 13}
VWA_CFLAGS = ["-DUSE_RVARGC=1", "-DRBIMPL_ATTR_PACKED_STRUCT_UNALIGNED_BEGIN()=",
              "-DRBIMPL_ATTR_PACKED_STRUCT_UNALIGNED_END()="]
# Versions whose symbol table's structure is private to symbol.c: vm_layout_probe.c declares it.
SYMBOLS_IN_SYMBOL_C = {(2, 5), (2, 6)}
# Versions whose line entries hold their instruction's position (2.5: rb_iseq_constant_body's
# insns_info and insns_info_size, no succinct index): vm_layout_probe.c measures them so.
LINES_IN_ENTRIES = {(2, 5)}
# Ruby 2.x's internal.h predates the 3.x public headers: compat_2x.h bridges the names it expects
# of them (no structure the probe measures is defined there).
COMPAT_2X = os.path.join(HERE, "compat_2x.h")

FIELDS = ["ractors", "ractor_running_ec", "ec_vm_stack", "ec_vm_stack_size", "ec_cfp", "ec_stack_start",
          "ec_stack_maxsize", "cfp_pc", "cfp_iseq", "cfp_ep", "cfp_size", "frame_magic_mask", "frame_magic_dummy", "iseq_body", "body_encoded",
          "vm_ractor_set", "ractor_vmlr_node", "body_type", "body_iseq_size", "body_location",
          "loc_pathobj", "loc_base_label", "loc_label", "loc_first_lineno", "body_insns_info",
          "body_insns_info_positions", "body_insns_info_size", "body_succ_index_table",
          "insn_info_entry_size", "insn_info_line_no", "line_table", "insn_info_position", "me_def", "me_owner", "def_original_id",
          "class_names", "fl_singleton", "class_ext", "ext_iv_tbl", "ext_classpath", "ext_attached", "ext_iv_ptr",
          "vm_shape_list", "shape_size", "shape_edge_name", "shape_next_iv_index", "shape_type", "shape_parent_id",
          "shape_id_shift", "shape_ivar", "st_entries_start", "st_entries_bound", "st_entries",
          "st_entry_size", "str_noembed", "str_embed_len_shift", "str_embed_len_mask", "str_embed_ary",
          "str_heap_len", "str_heap_ptr", "str_len", "ary_embed", "ary_embed_len_shift", "ary_embed_len_mask",
          "ary_embed_ary", "ary_heap_len", "ary_heap_ptr", "symbols_ids", "last_op_id"]
HEX = {"frame_magic_mask", "frame_magic_dummy", "ractor_running_ec", "ractor_vmlr_node", "ec_stack_start", "ec_stack_maxsize", "last_op_id",
       "str_embed_len_mask", "ary_embed_len_mask"}
FLAGS = {"str_noembed", "ary_embed", "fl_singleton"}
CLASS_NAMES = ["RB_NAMES_NONE", "RB_NAMES_IVARS", "RB_NAMES_FIELDS", "RB_NAMES_SHAPES"]  # detect.h's enum rb_class_names
LINE_TABLES = ["RB_LINES_INDEXED", "RB_LINES_IN_ENTRIES"]  # detect.h's enum rb_line_table


def tree_for(roots, release, dest):
    """Copies release's headers from the roots into dest (the first root having a file wins)."""
    found = False
    for root, name in [(r, n) for r in roots for n in [release, *ALIASES.get(release, [])]]:
        src = os.path.join(root, "ruby-" + name)
        if not os.path.isdir(src):
            continue
        found = True
        for dirpath, _, files in os.walk(src):
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), src)
                out = os.path.join(dest, rel)
                if not os.path.exists(out):
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    shutil.copyfile(os.path.join(dirpath, f), out)
    missing = [f for f in INTERNAL if not os.path.exists(os.path.join(dest, f))]
    if not found or missing:
        sys.exit(f"gen_layouts: ruby-{release}: no copy of {missing or 'any header'} under {roots}")


def run_probe(src, cflags, tmp):
    exe = os.path.join(tmp, "probe")
    subprocess.run(["cc", "-w", *cflags, "-o", exe, src], check=True)
    return json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)


def derive(roots):
    public_cflags = subprocess.run(["pkg-config", "--cflags", f"ruby-{PUBLIC_VERSION}"], check=True,
                                   capture_output=True, text=True).stdout.split()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        public = run_probe(PUBLIC_PROBE, public_cflags, tmp)
        for major, minor, release in VERSIONS:
            hdrs = os.path.join(tmp, release)
            tree_for(roots, release, hdrs)
            row = {"major": major, "minor": minor, "release": release}
            row.update({k: v for k, v in public.items() if k not in ("major", "minor")})
            row["st_entry_size"] = 24  # st_table_entry: hash, key, record (st.c, since 2.4)
            vwa = (major, minor) >= (3, 2)
            if vwa:
                row.update(PUBLIC_VWA)
                row["fl_singleton"] = PUBLIC_SINGLETON[(major, minor)]
            compat = ["-include", COMPAT_2X] if major < 3 else []
            if (major, minor) in SYMBOLS_IN_SYMBOL_C:
                compat.append("-DRB_SYMBOLS_IN_SYMBOL_C")
            if (major, minor) in LINES_IN_ENTRIES:
                compat.append("-DRB_ENTRY_POSITIONS")
            row.update(run_probe(VM_PROBE, [*compat, *(VWA_CFLAGS if vwa else []), "-I" + hdrs, *public_cflags],
                                 tmp))
            rows.append(row)
    return rows


def emit(rows):
    out = ["/* Ruby versions' structure offsets (x86-64, default build options): GENERATED by",
           " * tests/ruby/gen_layouts.py from each release's own headers (docs/specs/ruby.md §1 says",
           " * where each comes from and how to regenerate); do not edit by hand. */",
           '#include "agent/runtime/ruby/detect.h"', "", "#include <stddef.h>", ""]
    for r in rows:
        out.append(f"/* Ruby {r['major']}.{r['minor']}: ruby-{r['release']}'s headers. */")
        out.append(f"static const struct rb_layout ruby_{r['major']}_{r['minor']} = {{")
        out.append(f"\t.major = {r['major']},\n\t.minor = {r['minor']},")
        for f in FIELDS:
            v = r[f]
            if f == "class_names":
                text = CLASS_NAMES[v]
            elif f == "line_table":
                text = LINE_TABLES[v]
            elif f in FLAGS:
                text = f"1ULL << {v.bit_length() - 1}" if v and v & (v - 1) == 0 else f"{v}ULL"
            else:
                text = hex(v) if f in HEX and v else str(v)
            out.append(f"\t.{f} = {text},")
        out.append("};\n")
    out.append("const struct rb_layout *rb_layout_table(unsigned major, unsigned minor)\n{")
    for r in rows:
        out.append(f"\tif (major == {r['major']} && minor == {r['minor']})\n\t\treturn &ruby_{r['major']}_{r['minor']};")
    out.append("\treturn NULL;\n}")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with build/harness/rb_layout instead")
    ap.add_argument("roots", nargs="+")
    a = ap.parse_args()
    rows = derive(a.roots)
    if not a.check:
        sys.stdout.write(emit(rows))
        return 0
    bad = 0
    harness = os.path.join(ROOT, "build", "harness", "rb_layout")
    for r in rows:
        ours = json.loads(subprocess.run([harness, f"{r['major']}.{r['minor']}"], check=True,
                                         capture_output=True, text=True).stdout)
        for f in FIELDS:
            if ours.get(f) != r[f]:
                print(f"Ruby {r['major']}.{r['minor']}: {f}: table {ours.get(f)}, headers {r[f]}")
                bad = 1
    print("gen_layouts: the table matches the headers" if not bad else "gen_layouts: MISMATCH")
    return bad


if __name__ == "__main__":
    sys.exit(main())
