/* ICU loaded on first use: see icu.h (why: the memory of libicuuc and its dependencies). */
#include "lib/icu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#ifndef NP_ICU_SONAME
#error "NP_ICU_SONAME (e.g. \"libicuuc.so.72\") comes from the Makefile (pkg-config --modversion icu-uc)"
#endif

/* ICU's headers #define u_tolower as u_tolower_72 (U_ICU_ENTRY_POINT_RENAME) unless
 * built with U_DISABLE_RENAMING; expanding before stringifying gives the name the
 * library exports, whichever way these headers were configured. */
#define ICU_STR_(x) #x
#define ICU_SYM(x) ICU_STR_(x)

const char *np_icu_soname = NP_ICU_SONAME;

static struct np_icu icu;
static char load_error[512];
static atomic_int loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Resolves one symbol into *slot; the first failure is kept in load_error. */
static void sym(void *lib, const char *name, void *slot)
{
	void *p;

	if (load_error[0])
		return;
	dlerror();
	p = dlsym(lib, name);
	if (!p) {
		const char *why = dlerror();
		snprintf(load_error, sizeof(load_error), "dlsym %s in %s: %s", name, np_icu_soname,
			 why ? why : "not found");
		return;
	}
	memcpy(slot, &p, sizeof(p)); /* POSIX: a dlsym result converts to a function pointer */
}

static void load(void)
{
	/* RTLD_LOCAL: nothing else should bind to these symbols by accident. The handle
	 * is never closed: the tables stay in use for the life of the process. */
	void *lib = dlopen(np_icu_soname, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		const char *why = dlerror();
		snprintf(load_error, sizeof(load_error), "dlopen %s: %s", np_icu_soname, why ? why : "failed");
		return;
	}
	sym(lib, ICU_SYM(u_charType), &icu.char_type);
	sym(lib, ICU_SYM(u_tolower), &icu.to_lower);
	sym(lib, ICU_SYM(u_toupper), &icu.to_upper);
	sym(lib, ICU_SYM(u_foldCase), &icu.fold_case);
	sym(lib, ICU_SYM(u_getPropertyValueEnum), &icu.property_value_enum);
	sym(lib, ICU_SYM(u_getPropertyValueName), &icu.property_value_name);
	sym(lib, ICU_SYM(uset_openEmpty), &icu.set_open_empty);
	sym(lib, ICU_SYM(uset_applyIntPropertyValue), &icu.set_apply_int_property_value);
	sym(lib, ICU_SYM(uset_getItemCount), &icu.set_item_count);
	sym(lib, ICU_SYM(uset_getItem), &icu.set_item);
	sym(lib, ICU_SYM(uset_close), &icu.set_close);
	if (load_error[0]) {
		dlclose(lib);
		return;
	}
	atomic_store(&loaded, 1);
}

const struct np_icu *np_icu_get(struct np_err *err)
{
	/* The flag spares the hot paths (folding, case mapping) the pthread_once call. */
	if (atomic_load_explicit(&loaded, memory_order_acquire))
		return &icu;
	pthread_once(&load_once, load);
	if (atomic_load(&loaded))
		return &icu;
	if (err)
		np_errf(err, "Unicode tables (ICU) unavailable: %s", load_error);
	return NULL;
}

int np_icu_loaded(void)
{
	return atomic_load(&loaded);
}
