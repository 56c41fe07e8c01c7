/* Checks agent/runtime/php/layout.c's table against the Zend engine headers it is compiled with
 * (php8.2-dev's here: tests/integration/test_php_layout.py builds it with `php-config
 * --includes`): every offset with offsetof, and the constants bpf/php.h states. Prints one line
 * per difference and exits 1 when there is any, else prints "ok PHP X.Y" and exits 0. */
#include <stddef.h>
#include <stdio.h>

#include "php.h"
#include "zend_compile.h"
#include "zend_globals.h"

#include "agent/runtime/php/layout.h"
#include "bpf/php.h"

static int bad;

static void check(const char *what, size_t ours, size_t theirs)
{
	if (ours != theirs) {
		printf("%s: table %zu, headers %zu\n", what, ours, theirs);
		bad = 1;
	}
}

#define F(field, type, member) check(#field, l->field, offsetof(type, member))

int main(void)
{
	const struct php_layout *l = php_layout_table(PHP_MAJOR_VERSION, PHP_MINOR_VERSION);

	if (!l) {
		printf("PHP %d.%d: not in the table\n", PHP_MAJOR_VERSION, PHP_MINOR_VERSION);
		return 1;
	}
#ifdef ZTS
	printf("these headers are of a thread-safe build\n");
	return 1;
#endif
	F(eg_current_execute_data, zend_executor_globals, current_execute_data);
	F(ed_opline, zend_execute_data, opline);
	F(ed_func, zend_execute_data, func);
	check("ed_type_info", l->ed_type_info, offsetof(zend_execute_data, This) + offsetof(zval, u1.type_info));
	F(ed_prev, zend_execute_data, prev_execute_data);
	F(fn_type, zend_function, type);
	F(fn_name, zend_function, common.function_name);
	F(fn_scope, zend_function, common.scope);
	F(fn_name, zend_internal_function, function_name);
	F(fn_scope, zend_internal_function, scope);
	F(op_filename, zend_function, op_array.filename);
	F(op_line_start, zend_function, op_array.line_start);
	F(op_line_end, zend_function, op_array.line_end);
	F(op_lineno, zend_op, lineno);
	F(ce_name, zend_class_entry, name);
	F(str_h, zend_string, h);
	F(str_len, zend_string, len);
	F(str_val, zend_string, val);
	check("sizeof zend_uchar type", sizeof(((zend_function *)0)->type), 1);
	check("sizeof lineno", sizeof(((zend_op *)0)->lineno), 4);
	check("sizeof line_start", sizeof(((zend_op_array *)0)->line_start), 4);
	check("ZEND_CALL_TOP", NP_PHP_CALL_TOP, ZEND_CALL_TOP);
	check("ZEND_INTERNAL_FUNCTION", NP_PHP_INTERNAL_FUNCTION, ZEND_INTERNAL_FUNCTION);
	check("ZEND_USER_FUNCTION", NP_PHP_USER_FUNCTION, ZEND_USER_FUNCTION);
	check("ZEND_EVAL_CODE", NP_PHP_EVAL_CODE, ZEND_EVAL_CODE);
	/* The internal function's head the walker reads on its own. */
	check("internal read fits", offsetof(zend_internal_function, scope) + 8 <= NP_PHP_INTERNAL_READ, 1);
	check("user read fits", l->op_line_end + 4 <= NP_PHP_FUNC_READ, 1);
	if (bad)
		return 1;
	printf("ok PHP %d.%d\n", PHP_MAJOR_VERSION, PHP_MINOR_VERSION);
	return 0;
}
