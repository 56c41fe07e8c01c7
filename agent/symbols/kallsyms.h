/* Kernel symbols from /proc/kallsyms (symbols spec §5): text symbols of the core kernel,
 * of every module and of JIT-ed BPF programs, in one compact table whose tag is the module. */
#ifndef NP_SYMBOLS_KALLSYMS_H
#define NP_SYMBOLS_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"
#include "agent/symbols/symtab.h"
#include "agent/util/error.h"

struct sym_kallsyms {
	struct sym_symtab *tab;     /* owned; tag = index into mods */
	struct sym_module *mods;    /* owned; mods[0] is "[kernel.kallsyms]" */
	size_t nmods;
	char *names;                /* owned pool for module paths */
	int hidden;                 /* every address read as 0: no permission (kptr_restrict) */
	size_t bytes;
};

/* Parses kallsyms text. Lines that are not text symbols are skipped. -1 only on allocation failure. */
NP_MUST_CHECK int sym_kallsyms_parse(const char *text, size_t len, struct sym_kallsyms **out, struct np_err *err);
/* The same from an open file, read in chunks (at most max_bytes). */
NP_MUST_CHECK int sym_kallsyms_read_fd(int fd, size_t max_bytes, struct sym_kallsyms **out, struct np_err *err);
void sym_kallsyms_free(struct sym_kallsyms *k);

/* The symbol containing ip (or -1) and the module holding ip (NULL when outside every module). */
ssize_t sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t ip, const struct sym_module **mod);

#endif
