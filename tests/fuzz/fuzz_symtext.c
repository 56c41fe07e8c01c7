/* Fuzzes the symbolizer's other text inputs, chosen by the first byte: /proc/PID/maps with
 * address translation, /proc/kallsyms, and names through the demangle modes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/demangle.h"
#include "agent/symbols/kallsyms.h"
#include "agent/symbols/maps.h"

static void maps(const char *text, size_t len)
{
	struct sym_maps m;
	struct np_err err;
	if (sym_maps_parse(text, len, 1000, &m, &err) < 0)
		abort();
	struct sym_load loads[2] = { { 0, 0, 0x1000, 0x1000, 4 }, { 0x1000, 0x1000, 0x4000, 0x4000, 5 } };
	for (size_t i = 0; i < m.n; i++) {
		const struct sym_map *e = &m.v[i];
		if (sym_maps_find(&m, e->start) != e || (i && m.v[i - 1].end > e->start))
			abort();
		uint64_t v;
		(void)sym_translate(loads, 2, e->start, e->pgoff, e->end - 1, &v);
	}
	sym_maps_free(&m);
}

static void kallsyms(const char *text, size_t len)
{
	struct sym_kallsyms *k;
	struct np_err err;
	if (sym_kallsyms_parse(text, len, &k, &err) < 0)
		abort();
	for (size_t i = 0; i < k->n && i < 64; i++) {
		const struct sym_module *mod;
		ssize_t j = sym_kallsyms_find(k, sym_kallsyms_addr(k, i), &mod);
		if (j < 0 || !mod || !sym_kallsyms_name(k, (size_t)j))
			abort();
	}
	sym_kallsyms_free(k);
	for (const char *l = text, *end = text + len; l < end;) {
		const char *eol = memchr(l, '\n', (size_t)(end - l));
		size_t n = eol ? (size_t)(eol - l) : (size_t)(end - l);
		(void)sym_kallsyms_line_names_function(l, n, "do_sys_open");
		l += n + 1;
	}
}

static void demangle(const char *text, size_t len)
{
	if (len > 4096)
		return;
	char *name = malloc(len + 3);
	if (!name)
		return;
	/* Mostly mangled-looking input, so the demangler does real work. */
	name[0] = '_';
	name[1] = len && (text[0] & 1) ? 'R' : 'Z';
	memcpy(name + 2, text, len);
	name[len + 2] = '\0';
	for (int mode = 0; mode < 4; mode++) {
		int oom;
		free(sym_demangle(name, (enum sym_demangle)mode, &oom));
	}
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	switch (data[0] % 3) {
	case 0:
		maps(text, len);
		break;
	case 1:
		kallsyms(text, len);
		break;
	default:
		demangle(text, len);
		break;
	}
	return 0;
}
