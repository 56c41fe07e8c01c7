/* The Zend engine's offsets per version: see layout.h and docs/specs/php.md §2. */
#include "agent/runtime/php/layout.h"

#include <stddef.h>

/* What every supported version shares (php-src PHP-7.3 to PHP-8.4):
 *  - zend_executor_globals.current_execute_data at 488: uninitialized_zval and error_zval (16
 *    each), symtable_cache[32] and its two pointers, symbol_table and included_files (two
 *    56-byte HashTables), bailout, error_reporting and exit_status, the function, class and
 *    constant tables, the VM stack's top, end, stack and page size;
 *  - zend_execute_data { opline, call, return_value, func, This (a zval: value, u1 at +8),
 *    prev_execute_data, ... };
 *  - zend_function's common head { type, arg_flags[3], fn_flags, function_name, scope, ... };
 *  - zend_op { handler, op1, op2, result, extended_value, lineno, ... };
 *  - zend_class_entry { type, name, ... } and zend_string { gc, h, len, val[] }.
 * What moves is where zend_op_array keeps its file and lines: fields were added before them. */
#define COMMON(ma, mi, filename)                                                                                \
	{ .major = ma, .minor = mi, .eg_current_execute_data = 488, .ed_opline = 0, .ed_func = 24,             \
	  .ed_type_info = 40, .ed_prev = 48, .fn_type = 0, .fn_name = 8, .fn_scope = 16, .op_filename = filename, \
	  .op_line_start = filename + 8, .op_line_end = filename + 12, .op_lineno = 24, .ce_name = 8,           \
	  .str_h = 8, .str_len = 16, .str_val = 24 }

/* zend_op_array's fields up to the file, by version (x86-64; common head first):
 *   7.3  type 0, function_name 8, scope 16, prototype 24, num_args 32, arg_info 40, cache_size 48,
 *        last_var, T, last, opcodes 64, run_time_cache 72, static_variables 80, vars 88,
 *        refcount 96, last_live_range, last_try_catch, live_range 112, try_catch_array 120:
 *        filename 128;
 *   7.4  static_variables_ptr (a map pointer) added before static_variables: 136;
 *   8.0, 8.1  attributes (48) joined the head: 144;
 *   8.2  T moved into the head after attributes, run_time_cache after it (64), cache_size 72,
 *        opcodes 88: 152 (php8.2-dev's headers, checked by tests/php/layout_probe.c);
 *   8.3  run_time_cache before T (56, 64), T packed with cache_size: 144;
 *   8.4  doc_comment (64) moved into the head, prop_info added (80), opcodes 104: 168. */
static const struct php_layout table[] = {
	COMMON(7, 3, 128), COMMON(7, 4, 136), COMMON(8, 0, 144), COMMON(8, 1, 144),
	COMMON(8, 2, 152), COMMON(8, 3, 144), COMMON(8, 4, 168),
};

const struct php_layout *php_layout_table(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor)
			return &table[i];
	return NULL;
}
