/* The one table of language runtimes: see runtime.h. */
#include "agent/runtime/runtime.h"

#define OPS_SUPPORTED(ident) &rt_##ident##_ops
#define OPS_NOT_YET(ident) NULL
#define FLAG_SUPPORTED(flag) flag
#define FLAG_NOT_YET(flag) NULL
#define ROW(ident, ID, num, kind, name_, config_, support, flag_, help)                                                  \
	{ .id = NP_RT_##ID, .name = name_, .config = config_, .flag = FLAG_##support(flag_), .ops = OPS_##support(ident) },

const struct rt_info rt_registry[] = { NP_RUNTIME_LIST(ROW) };
const size_t rt_registry_n = sizeof(rt_registry) / sizeof(rt_registry[0]);

/* Ids fit a tagged word's 5 bits and 0 is no runtime; no two rows share one: a duplicate is a
 * duplicate case label, which does not compile. */
#define ID_RANGE(ident, ID, num, kind, name, config, support, flag, help)                                      \
	_Static_assert(num > 0 && num < NP_RT_MAX, "runtime id of " #ident " out of range");
NP_RUNTIME_LIST(ID_RANGE)
#define ID_CASE(ident, ID, num, kind, name, config, support, flag, help) case num:
static inline int rt_ids_are_unique(int id)
{
	switch (id) {
		NP_RUNTIME_LIST(ID_CASE)
		return 1;
	}
	return 0;
}

/* Ids are small and the table short: a scan. */
const struct rt_info *rt_find(uint32_t id)
{
	for (size_t i = 0; i < rt_registry_n; i++)
		if (rt_registry[i].id == id)
			return &rt_registry[i];
	return NULL;
}

uint32_t rt_supported_mask(void)
{
	uint32_t m = 0;

	for (size_t i = 0; i < rt_registry_n; i++)
		if (rt_registry[i].ops)
			m |= 1u << rt_registry[i].id;
	return m;
}
