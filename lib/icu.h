/* ICU (libicuuc), loaded on first use.
 *
 * The relabel engine needs Unicode tables (general categories, scripts, simple
 * case mapping and folding) only for non-ASCII runes: \p{...} classes, (?i) over
 * non-ASCII, lower/uppercase of non-ASCII values, non-ASCII $names in templates.
 * Linking libicuuc would map it, libicudata, libstdc++ and libgcc_s into every
 * agent process, about 1.5 MB resident, although most configurations are pure
 * ASCII. So ICU is compiled against (its headers give the types, constants and
 * the versioned symbol names) but dlopen'ed the first time a non-ASCII question
 * comes up, and a process that never asks one never maps it.
 *
 * The functions are reachable only through the table np_icu_get returns, so every
 * call site has to handle "library missing" (an error, never a crash). */
#ifndef NP_LIB_ICU_H
#define NP_LIB_ICU_H

#include <unicode/uchar.h>
#include <unicode/uset.h>

#include "lib/error.h"

struct np_icu {
	__typeof__(u_charType) *char_type;
	__typeof__(u_tolower) *to_lower;
	__typeof__(u_toupper) *to_upper;
	__typeof__(u_foldCase) *fold_case;
	__typeof__(u_getPropertyValueEnum) *property_value_enum;
	__typeof__(u_getPropertyValueName) *property_value_name;
	__typeof__(uset_openEmpty) *set_open_empty;
	__typeof__(uset_applyIntPropertyValue) *set_apply_int_property_value;
	__typeof__(uset_getItemCount) *set_item_count;
	__typeof__(uset_getItem) *set_item;
	__typeof__(uset_close) *set_close;
};

/* Loads ICU once per process (thread-safe; later calls only read a flag). Returns the
 * functions, or NULL with err (when not NULL) set to "Unicode tables (ICU) unavailable:
 * dlopen libicuuc.so.72: ..." (callers put their context in front: "rule 1: ...",
 * "string.to_lower: ..."). A failed load is not retried. */
const struct np_icu *np_icu_get(struct np_err *err);

/* 1 when this process has loaded ICU (never loads it). */
int np_icu_loaded(void);

/* The library np_icu_get opens (the build's NP_ICU_SONAME). Tests set it to a missing
 * file before the first np_icu_get to exercise the failure path. */
extern const char *np_icu_soname;

#endif
