/* The Zend engine's structure offsets the walker and the namer need, per PHP version (7.3 to
 * 8.4, x86-64, builds without thread safety). PHP describes none of its structures to a reader
 * from outside, so they come from each version's own headers (Zend/zend_globals.h,
 * zend_compile.h, zend_types.h); docs/specs/php.md says which field sits where and why, and
 * tests/php/layout_probe.c checks the table against the headers this machine has. Self-contained
 * (no other module), so that the probe can be built with it alone. Prefix: php_ (PHP_). */
#ifndef NP_PHP_LAYOUT_H
#define NP_PHP_LAYOUT_H

#include <stdint.h>

struct php_layout {
	unsigned major, minor;
	uint32_t eg_current_execute_data; /* zend_executor_globals */
	/* zend_execute_data */
	uint32_t ed_opline, ed_func, ed_type_info /* This.u1.type_info */, ed_prev;
	/* zend_function: the common head, then zend_op_array's fields */
	uint32_t fn_type, fn_name, fn_scope;
	uint32_t op_filename, op_line_start, op_line_end;
	uint32_t op_lineno;   /* zend_op */
	uint32_t ce_name;     /* zend_class_entry */
	uint32_t str_h, str_len, str_val; /* zend_string: hash, length (right after it), contents */
};

/* The table's layout of PHP major.minor, or NULL for a version it does not hold. */
const struct php_layout *php_layout_table(unsigned major, unsigned minor);

#endif
