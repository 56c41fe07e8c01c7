/* Turning the register rules of one CFI row into a compact x86-64 unwind rule: CFA from rsp
 * or rbp plus an offset, the expression forms compilers and glibc emit (PLT entries,
 * OpenSSL's dereferenced stack pointer) recognised by pattern, the return address at CFA-8,
 * the rbp slot; anything else marked unsupported with the reason. */
#ifndef NP_UNWIND_CLASSIFY_H
#define NP_UNWIND_CLASSIFY_H

#include "agent/unwind/cfi_exec.h"
#include "agent/unwind/table.h"

/* signal: the CIE has the 'S' augmentation; ra_reg: the CIE's return-address column. */
void unw_classify(const struct unw_state *st, int signal, uint64_t ra_reg, struct unw_rule *out);

#endif
