/* The vocabulary of an unwind rule, shared by the BPF walker (bpf/unwind_walk.h) and the user
 * space that compiles the rules (agent/unwind/: classify.c writes them, table.h stores them,
 * pack.c copies them into struct np_unw_rule of bpf/unwind.h): one definition, so a kind added
 * or reordered on one side cannot be read as another kind on the other. The names keep the
 * unwinder's UNW_ prefix on both sides (docs/conventions.md). Enums and macros only: this
 * header compiles for the bpf target and for x86-64 alike. */
#ifndef NP_BPF_UNWIND_RULE_H
#define NP_BPF_UNWIND_RULE_H

/* How the caller's CFA (its rsp) is found; the return address is at CFA-8 for every kind
 * that unwinds (anything else is UNW_UNSUPPORTED with a reason, enum unw_why of
 * agent/unwind/table.h, which only user space reads). Stored in a u8. */
enum unw_kind {
	UNW_NONE = 0,      /* no CFI covers this address: use frame pointers */
	UNW_CFA_RSP,       /* CFA = rsp + cfa_off */
	UNW_CFA_RBP,       /* CFA = rbp + cfa_off */
	UNW_CFA_PLT,       /* PLT entry: CFA = rsp + cfa_off + ((rip & 15) >= cfa_aux ? 8 : 0) */
	UNW_CFA_DEREF_RSP, /* CFA = *(u64 *)(rsp + cfa_off) + cfa_aux (OpenSSL's stack switches) */
	UNW_CFA_REG,       /* CFA = DWARF register cfa_aux + cfa_off: only in the interrupted frame,
	                    * where every register is known (glibc's and OpenSSL's stack realignment) */
	UNW_SIGNAL,        /* signal trampoline ('S' augmentation): registers are in the ucontext */
	UNW_END,           /* outermost frame (return address undefined): the stack ends here */
	UNW_UNSUPPORTED,   /* CFI exists but says something the BPF side cannot follow */
};

/* Where the caller's rbp is. Stored in a u8. */
enum unw_rbp {
	UNW_RBP_UNCHANGED = 0, /* same value as in this frame */
	UNW_RBP_AT_CFA,        /* saved at CFA + rbp_off */
	UNW_RBP_UNDEFINED,
	UNW_RBP_UNSUPPORTED,   /* in another register or an expression */
};

/* x86-64 DWARF register numbers (System V psABI, "DWARF Register Number Mapping"): 0-15 are
 * the general registers (rax rdx rcx rbx rsi rdi rbp rsp r8-r15), 16 the return address
 * column. A UNW_CFA_REG rule names one of 0-15 in cfa_aux; the walker reads it from the
 * sampled struct pt_regs (unw_dwarf_reg). */
#define UNW_DWARF_RBP 6
#define UNW_DWARF_RSP 7
#define UNW_DWARF_RA 16

/* struct np_unw_rule (bpf/unwind.h) and struct unw_rule (agent/unwind/table.h) keep kind and
 * rbp in a byte each. */
_Static_assert(UNW_UNSUPPORTED <= 0xff && UNW_RBP_UNSUPPORTED <= 0xff, "rule kinds fit in a u8");

#endif
