/* Unit tests for arguments bound to struct fields (agent/config/schema.h, fields.c):
 * every registered component type's bindings agree with its schema and cover its
 * args struct, a broken descriptor is caught, and decoding fills the struct. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/config/component.h"
#include "lib/duration.h"
#include "tests/unit/config_test.h"

/* Every built-in type (and every nested block) passes the check, and every type that
 * `nodeprof run` can start decodes into a struct: an adapter never reads by name. */
static void registered_types_bind_their_arguments(void **state)
{
	const struct cfg_component_type *types[32];
	size_t n = cfg_registry_list(types, 32);
	struct np_err err;

	(void)state;
	assert_true(n >= 8);
	for (size_t i = 0; i < n; i++) {
		if (cfg_schema_check_fields(types[i]->args, types[i]->name, &err))
			fail_msg("%s", err.msg);
		if (types[i]->ops && types[i]->args->size == 0)
			fail_msg("%s: has a runtime but its schema binds no args struct", types[i]->name);
	}
}

/* ---- deliberately broken descriptors ---- */

struct web_args {
	const char *host;
	int64_t port;
	int tls;
};

/* `tls` is a bool bound to a string member: the C type disagrees with the schema. */
static const struct cfg_attr wrong_type_attrs[] = {
	CFG_A("host", &cfg_t_string, 0, NULL, .field = CFG_FIELD(struct web_args, host)),
	CFG_A("port", &cfg_t_int, 0, "80", .field = CFG_FIELD(struct web_args, port)),
	CFG_A("tls", &cfg_t_string, 0, NULL, .field = CFG_FIELD(struct web_args, tls)),
	CFG_END,
};

/* `tls` has no binding: the member would stay zero whatever the file says. */
static const struct cfg_attr unbound_attrs[] = {
	CFG_A("host", &cfg_t_string, 0, NULL, .field = CFG_FIELD(struct web_args, host)),
	CFG_A("port", &cfg_t_int, 0, "80", .field = CFG_FIELD(struct web_args, port)),
	CFG_A("tls", &cfg_t_bool, 0, "false"),
	CFG_END,
};

/* A duration decodes into int64_t, not into an int. */
static const struct cfg_attr duration_in_int_attrs[] = {
	CFG_A("host", &cfg_t_string, 0, NULL, .field = CFG_FIELD(struct web_args, host)),
	CFG_A("port", &cfg_t_int, 0, "80", .field = CFG_FIELD(struct web_args, port)),
	CFG_A("timeout", &cfg_t_duration, 0, "\"1s\"", .field = CFG_FIELD(struct web_args, tls)),
	CFG_END,
};

/* A repeatable block is a list of structs, not one. */
static const struct cfg_schema web_block_schema = {
	.attrs = unbound_attrs + 2, /* tls alone: no members */
};
struct outer_args {
	const void *servers;
};
static const struct cfg_block_schema repeatable_as_one_blocks[] = {
	CFG_B("servers", &web_block_schema, CFG_REPEATABLE, NULL, .field = CFG_FIELD(struct outer_args, servers)),
	CFG_END,
};

static void expect_refused(const struct cfg_schema *s, const char *want)
{
	struct np_err err;

	np_err_clear(&err);
	assert_int_equal(cfg_schema_check_fields(s, "test.web", &err), -1);
	if (!strstr(err.msg, want))
		fail_msg("got \"%s\", want it to contain \"%s\"", err.msg, want);
}

static void broken_descriptors_are_refused(void **state)
{
	const struct cfg_schema wrong_type = { .attrs = wrong_type_attrs, CFG_ARGS_STRUCT(struct web_args) };
	const struct cfg_schema unbound = { .attrs = unbound_attrs, CFG_ARGS_STRUCT(struct web_args) };
	const struct cfg_schema duration_in_int = { .attrs = duration_in_int_attrs, CFG_ARGS_STRUCT(struct web_args) };
	const struct cfg_schema no_struct = { .attrs = unbound_attrs };
	const struct cfg_schema repeatable_as_one = { .blocks = repeatable_as_one_blocks,
						      CFG_ARGS_STRUCT(struct outer_args) };
	const struct cfg_component_type broken = { .name = "test.web", .args = &wrong_type };
	struct np_err err;

	(void)state;
	expect_refused(&wrong_type, "test.web: \"tls\" is bound to a member of type int, but its schema type needs "
				    "const char *");
	expect_refused(&unbound, "test.web: bytes 16 to 24 of the struct belong to no argument");
	expect_refused(&duration_in_int, "\"timeout\" is bound to a member of type int, but its schema type needs "
					 "int64_t");
	expect_refused(&no_struct, "the schema names no struct");
	expect_refused(&repeatable_as_one, "\"servers\" is bound to a member of type const void *, but its schema type "
					   "needs struct cfg_blocks");

	/* The registry walk of the first test fails on such a type. */
	assert_int_equal(cfg_registry_add(&broken), 0);
	const struct cfg_component_type *types[32];
	size_t n = cfg_registry_list(types, 32);
	int refused = 0;
	for (size_t i = 0; i < n; i++)
		refused |= cfg_schema_check_fields(types[i]->args, types[i]->name, &err) != 0;
	cfg_registry_remove(&broken);
	assert_true(refused);
}

/* ---- decoding into the struct ---- */

struct item_args {
	const char *name;
};

struct all_args {
	const char *s;
	const char *secret;
	int b;
	int64_t i, d;
	uint64_t u;
	double f;
	struct cfg_strs list;
	struct cfg_str_map map;
	struct cfg_str_lists lists;
	const struct np_targets *targets;
	const void *one;
	struct cfg_blocks items;
	const struct cfg_args *raw;
	const char *unset;
};

#define ALL(m) .field = CFG_FIELD(struct all_args, m)
static const struct cfg_attr item_attrs[] = {
	CFG_A("name", &cfg_t_string, 0, "\"anonymous\"", .field = CFG_FIELD(struct item_args, name)),
	CFG_END,
};
static const struct cfg_schema item_schema = { .attrs = item_attrs, CFG_ARGS_STRUCT(struct item_args) };
static const struct cfg_attr all_attrs[] = {
	CFG_A("s", &cfg_t_string, 0, NULL, ALL(s)),
	CFG_A("secret", &cfg_t_secret, 0, NULL, ALL(secret)),
	CFG_A("b", &cfg_t_bool, 0, "true", ALL(b)),
	CFG_A("i", &cfg_t_int, 0, NULL, ALL(i)),
	CFG_A("d", &cfg_t_duration, 0, "\"15s\"", ALL(d)),
	CFG_A("u", &cfg_t_uint, 0, NULL, ALL(u)),
	CFG_A("f", &cfg_t_float, 0, NULL, ALL(f)),
	CFG_A("list", &cfg_t_list_string, 0, NULL, ALL(list)),
	CFG_A("map", &cfg_t_map_string, 0, NULL, ALL(map)),
	CFG_A("lists", &cfg_t_map_list_secret, 0, NULL, ALL(lists)),
	CFG_A("targets", &cfg_t_targets, 0, NULL, ALL(targets)),
	CFG_A("unset", &cfg_t_string, 0, NULL, ALL(unset)),
	CFG_A("ignored", &cfg_t_int, CFG_DEPRECATED, NULL),
	CFG_END,
};
static const struct cfg_block_schema all_blocks[] = {
	CFG_B("one", &item_schema, 0, NULL, ALL(one)),
	CFG_B("item", &item_schema, CFG_REPEATABLE, NULL, ALL(items)),
	CFG_END,
};
static const struct cfg_schema all_schema = {
	.attrs = all_attrs,
	.blocks = all_blocks,
	CFG_ARGS_STRUCT(struct all_args),
	.raw = CFG_FIELD(struct all_args, raw),
};

static struct cfg_args *decode(const char *src, struct cfg_file **f, struct cfg_diags *d)
{
	struct cfg_eval ev = { .d = d };

	cfg_diags_init(d, "t");
	*f = cfg_parse("t", src, strlen(src), d);
	assert_non_null(*f);
	struct cfg_args *a = cfg_decode(&all_schema, &(*f)->body.v[0]->body, (*f)->body.v[0]->pos, "x", &ev, d);
	if (!a)
		fail_msg("%s", diags_text(d));
	return a;
}

static void decoding_fills_the_struct(void **state)
{
	const char *src = "x {\n"
			  "  s = \"hello\"\n"
			  "  secret = \"pw\"\n"
			  "  b = false\n"
			  "  i = -7\n"
			  "  d = \"1m30s\"\n"
			  "  u = \"42\"\n"
			  "  f = 0.25\n"
			  "  list = [\"a\", 1]\n"
			  "  map = { z = \"1\", a = 2 }\n"
			  "  lists = { \"X-B\" = [\"b1\", \"b2\"], \"X-A\" = [] }\n"
			  "  targets = [{ k = \"v\" }, { k = \"w\" }]\n"
			  "  one { name = \"first\" }\n"
			  "  item { name = \"p\" }\n"
			  "  item { }\n"
			  "}\n";
	struct cfg_diags d;
	struct cfg_file *f;
	struct cfg_args *a = decode(src, &f, &d);
	const struct all_args *x = a->fields;

	(void)state;
	assert_non_null(x);
	assert_string_equal(x->s, "hello");
	assert_string_equal(x->secret, "pw");
	assert_false(x->b);
	assert_int_equal(x->i, -7);
	assert_int_equal(x->d, 90 * NP_NSEC_PER_SEC);
	assert_int_equal(x->u, 42);
	assert_true(x->f == 0.25);
	assert_int_equal(x->list.n, 2);
	assert_string_equal(x->list.v[0], "a");
	assert_string_equal(x->list.v[1], "1");
	assert_int_equal(x->map.n, 2);
	assert_string_equal(x->map.keys[0], "a"); /* sorted */
	assert_string_equal(x->map.values[0], "2");
	assert_string_equal(x->map.values[1], "1");
	assert_int_equal(x->lists.n, 2);
	assert_string_equal(x->lists.keys[0], "X-A"); /* sorted */
	assert_int_equal(x->lists.values[0].n, 0);
	assert_string_equal(x->lists.keys[1], "X-B");
	assert_int_equal(x->lists.values[1].n, 2);
	assert_string_equal(x->lists.values[1].v[0], "b1");
	assert_string_equal(x->lists.values[1].v[1], "b2");
	assert_int_equal(x->targets->n, 2);
	assert_string_equal(np_labels_get(&x->targets->v[1], "k"), "w");
	assert_null(x->unset);
	const struct item_args *one = x->one;
	assert_string_equal(one->name, "first");
	assert_int_equal(x->items.n, 2);
	const struct item_args *i0 = x->items.v[0], *i1 = x->items.v[1];
	assert_string_equal(i0->name, "p");
	assert_string_equal(i1->name, "anonymous"); /* the nested schema's default */
	assert_ptr_equal(x->raw, a);
	cfg_args_free(a);
	cfg_file_free(f);
	cfg_diags_free(&d);
}

/* Absent arguments hold their defaults, else zero values; absent blocks are NULL or
 * empty; an absent target list is empty, never NULL. */
static void absent_arguments_are_defaults_or_zero(void **state)
{
	struct cfg_diags d;
	struct cfg_file *f;
	struct cfg_args *a = decode("x { }\n", &f, &d);
	const struct all_args *x = a->fields;

	(void)state;
	assert_null(x->s);
	assert_true(x->b);
	assert_int_equal(x->d, 15 * NP_NSEC_PER_SEC);
	assert_int_equal(x->i, 0);
	assert_int_equal(x->list.n, 0);
	assert_int_equal(x->map.n, 0);
	assert_int_equal(x->lists.n, 0);
	assert_non_null(x->targets);
	assert_int_equal(x->targets->n, 0);
	assert_null(x->one);
	assert_int_equal(x->items.n, 0);
	cfg_args_free(a);
	cfg_file_free(f);
	cfg_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(registered_types_bind_their_arguments),
		cmocka_unit_test(broken_descriptors_are_refused),
		cmocka_unit_test(decoding_fills_the_struct),
		cmocka_unit_test(absent_arguments_are_defaults_or_zero),
	};
	return cmocka_run_group_tests_name("config_fields", tests, NULL, NULL);
}
