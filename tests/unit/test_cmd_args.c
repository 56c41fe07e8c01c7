/* agent/cmd/args and cmd: the value parsers every command uses (durations, sizes, log
 * levels, numbers in a range, process IDs, choices, listen addresses), each filling its
 * output only on success and failing with "--NAME VALUE: reason"; the option parser made
 * from a command's table (values, --name=value, abbreviations, unknown options, missing
 * values, --help, operands); the help printed from the same table; and the exit status
 * and error line the one reporter gives each outcome (0, 1 for errors, 2 for usage). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/cmd/args.h"
#include "agent/cmd/cmd.h"

static void durations(void **state)
{
	struct np_err err;
	int64_t ns = -7;

	(void)state;
	assert_int_equal(cmd_arg_duration("--duration", "1m30s", 1, "duration must be > 0", &ns, &err), 0);
	assert_true(ns == 90LL * 1000000000LL);
	assert_int_equal(cmd_arg_duration("--wait", "0", 0, "must not be negative", &ns, &err), 0);
	assert_true(ns == 0);

	ns = -7;
	assert_int_equal(cmd_arg_duration("--duration", "0", 1, "duration must be > 0", &ns, &err), -1);
	assert_string_equal(err.msg, "--duration 0: duration must be > 0");
	assert_int_equal(cmd_arg_duration("--wait", "-1s", 0, "must not be negative", &ns, &err), -1);
	assert_string_equal(err.msg, "--wait -1s: must not be negative");
	assert_int_equal(cmd_arg_duration("--wait", "garbage", 0, "must not be negative", &ns, &err), -1);
	assert_string_equal(err.msg, "--wait garbage: invalid duration \"garbage\": expected a number at \"garbage\"");
	assert_int_equal(cmd_arg_duration("--duration", "10", 1, "duration must be > 0", &ns, &err), -1);
	assert_non_null(strstr(err.msg, "unit"));
	assert_true(ns == -7); /* untouched by every failure */
}

static void sizes(void **state)
{
	static const struct {
		const char *in;
		size_t want;
	} ok[] = {
		{ "0", 0 },		   { "4096", 4096 },	  { "512k", 512 << 10 }, { "4MiB", 4 << 20 },
		{ "64MiB", 64 << 20 },	   { "4MB", 4 << 20 },	  { "4mb", 4 << 20 },	 { "1G", 1 << 30 },
		{ "1024GiB", 1ULL << 40 },
	};
	static const char *const bad[] = { "",	  "lots", "-1",	   "+1",     " 1",  "1T",   "1KiBB",
					   "1iB", "1.5M", "1025G", "99999999999999999999", "4 MiB" };
	struct np_err err;
	size_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 1;
		assert_int_equal(cmd_arg_size("--ui-memory", ok[i].in, &v, &err), 0);
		assert_true(v == ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(cmd_arg_size("--ui-memory", bad[i], &v, &err), -1);
		assert_true(v == 7);
		assert_true(strncmp(err.msg, "--ui-memory ", 12) == 0);
		assert_non_null(strstr(err.msg, ": use a size such as 64MiB"));
	}
}

static void log_levels(void **state)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };
	struct np_err err;
	enum np_level l;

	(void)state;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cmd_arg_log_level("--log-level", names[i], &l, &err), 0);
		assert_int_equal(l, i);
	}
	l = NP_WARN;
	assert_int_equal(cmd_arg_log_level("--log-level", "loud", &l, &err), -1);
	assert_string_equal(err.msg, "--log-level loud: use debug, info, warn or error");
	assert_int_equal(l, NP_WARN);
}

static void numbers_in_a_range(void **state)
{
	static const char *const bad[] = { "0", "100001", "", "+5", "-5", " 5", "5x", "0x10", "1e3",
					   "99999999999999999999999" };
	struct np_err err;
	uint64_t v = 0;
	int pid = 0;

	(void)state;
	assert_int_equal(cmd_arg_uint("--sample-rate", "1", 1, 100000, "a whole number of Hz", &v, &err), 0);
	assert_true(v == 1);
	assert_int_equal(cmd_arg_uint("--sample-rate", "100000", 1, 100000, "a whole number of Hz", &v, &err), 0);
	assert_true(v == 100000);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		assert_int_equal(cmd_arg_uint("--sample-rate", bad[i], 1, 100000, "a whole number of Hz", &v, &err), -1);
		assert_true(v == 42);
	}
	assert_string_equal(err.msg, "--sample-rate 99999999999999999999999: expected a whole number of Hz from 1 to "
				     "100000");

	assert_int_equal(cmd_arg_pid("--pid", "4194304", 4194304, &pid, &err), 0);
	assert_int_equal(pid, 4194304);
	assert_int_equal(cmd_arg_pid("--pid", "4194305", 4194304, &pid, &err), -1);
	assert_string_equal(err.msg, "--pid 4194305: not a process ID (a whole number from 1 to 4194304)");
	assert_int_equal(cmd_arg_pid("--pid", "0", 4194304, &pid, &err), -1);
	assert_int_equal(cmd_arg_pid("--pid", "12x", 4194304, &pid, &err), -1);
	assert_int_equal(pid, 4194304);
}

static void reals(void **state)
{
	static const char *const bad[] = { "0", "-0.5", "1.5", "nan", "inf", "x", "", "0.5x" };
	struct np_err err;
	double v = 0;

	(void)state;
	assert_int_equal(cmd_arg_real("--off-cpu-threshold", "0.25", 0, 1, "a probability", &v, &err), 0);
	assert_true(v == 0.25);
	assert_int_equal(cmd_arg_real("--off-cpu-threshold", "1", 0, 1, "a probability", &v, &err), 0);
	assert_true(v == 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 0.125;
		assert_int_equal(cmd_arg_real("--off-cpu-threshold", bad[i], 0, 1, "a probability", &v, &err), -1);
		assert_true(v == 0.125);
	}
	assert_string_equal(err.msg, "--off-cpu-threshold 0.5x: a probability");
}

static void choices_and_demangling(void **state)
{
	static const char *const formats[] = { "folded", "pprof", NULL };
	static const char *const three[] = { "a", "b", "c", NULL };
	struct np_err err;
	enum sym_demangle d = SYM_DEMANGLE_NONE;
	int v = -1;

	(void)state;
	assert_int_equal(cmd_arg_choice("--format", "pprof", formats, &v, &err), 0);
	assert_int_equal(v, 1);
	assert_int_equal(cmd_arg_choice("--format", "svg", formats, &v, &err), -1);
	assert_string_equal(err.msg, "--format svg: use folded or pprof");
	assert_int_equal(v, 1);
	assert_int_equal(cmd_arg_choice("--x", "d", three, &v, &err), -1);
	assert_string_equal(err.msg, "--x d: use a, b or c");

	assert_int_equal(cmd_arg_demangle("--demangle", "full", &d, &err), 0);
	assert_int_equal(d, SYM_DEMANGLE_FULL);
	assert_int_equal(cmd_arg_demangle("--demangle", "fancy", &d, &err), -1);
	assert_true(strncmp(err.msg, "--demangle fancy: ", 18) == 0);
	assert_int_equal(d, SYM_DEMANGLE_FULL);
}

static void listen_addresses(void **state)
{
	static const char *const bad[] = { "localhost", "nonsense", "", "1.2.3.4:99999", "::1:80", ":-1" };
	struct np_err err;
	const char *addr = NULL;
	char url[128];

	(void)state;
	assert_int_equal(cmd_arg_listen("--http-listen", ":4100", &addr, &err), 0);
	assert_string_equal(addr, ":4100");
	assert_int_equal(cmd_arg_listen("--http-listen", "[::1]:0", &addr, &err), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		addr = "kept";
		assert_int_equal(cmd_arg_listen("--metrics-listen", bad[i], &addr, &err), -1);
		assert_string_equal(addr, "kept");
		assert_true(strncmp(err.msg, "--metrics-listen ", 17) == 0);
	}
	assert_int_equal(cmd_arg_listen("--metrics-listen", "nonsense", &addr, &err), -1);
	assert_non_null(strstr(err.msg, "expected host:port"));

	/* Every interface is opened on the loopback; a bound port replaces the written one. */
	cmd_listen_url(":4100", 0, url, sizeof(url));
	assert_string_equal(url, "http://127.0.0.1:4100/");
	cmd_listen_url(":0", 39999, url, sizeof(url));
	assert_string_equal(url, "http://127.0.0.1:39999/");
	cmd_listen_url("[::]:4100", 0, url, sizeof(url));
	assert_string_equal(url, "http://[::1]:4100/");
	cmd_listen_url("10.1.2.3:80", 0, url, sizeof(url));
	assert_string_equal(url, "http://10.1.2.3:80/");
	cmd_listen_url("nonsense", 0, url, sizeof(url));
	assert_string_equal(url, "nonsense");
}

enum { K_CONFIG = CMD_OPT_LONG, K_FLAG };

static const struct cmd_opt test_opts[] = {
	{ "duration", 'd', "D", "how long\nsecond line" },
	{ "config", K_CONFIG, "FILE", "the configuration" },
	{ "flag", K_FLAG, NULL, "a flag" },
	{ 0 },
};

/* argv for the parser: writable strings, as main's are. */
struct argv_buf {
	char s[8][40];
	char *v[9];
	int n;
};

static char **make_argv(struct argv_buf *b, const char *first, ...)
{
	va_list ap;
	const char *a = first;

	va_start(ap, first);
	for (b->n = 0; a && b->n < 8; a = va_arg(ap, const char *)) {
		snprintf(b->s[b->n], sizeof(b->s[0]), "%s", a);
		b->v[b->n] = b->s[b->n];
		b->n++;
	}
	va_end(ap);
	b->v[b->n] = NULL;
	return b->v;
}

static void parser_options_and_operands(void **state)
{
	struct argv_buf b;
	struct cmd_parser p;
	struct np_err err;
	char **argv = make_argv(&b, "cmd", "-d", "5s", "OPERAND", "--config=x.alloy", "--fl", NULL);

	(void)state;
	cmd_parser_init(&p, test_opts, b.n, argv, 0);
	assert_int_equal(cmd_parser_next(&p, &err), 'd');
	assert_string_equal(p.name, "duration");
	assert_string_equal(p.value, "5s");
	assert_int_equal(cmd_parser_next(&p, &err), K_CONFIG);
	assert_string_equal(p.value, "x.alloy");
	assert_int_equal(cmd_parser_next(&p, &err), K_FLAG); /* an unambiguous abbreviation */
	assert_null(p.value);
	assert_int_equal(cmd_parser_next(&p, &err), 0);
	assert_int_equal(cmd_parser_operands(&p, 1, 1, "OPERAND", &err), 0);
	assert_string_equal(argv[p.next], "OPERAND");
	assert_int_equal(cmd_parser_operands(&p, 2, -1, "ADDR", &err), -1);
	assert_string_equal(err.msg, "missing ADDR");
	assert_int_equal(cmd_parser_operands(&p, 0, 0, NULL, &err), -1);
	assert_string_equal(err.msg, "unexpected argument \"OPERAND\"");

	/* stop_at_operand: what follows the first operand is an operand too. */
	argv = make_argv(&b, "cmd", "FILE", "--flag", NULL);
	cmd_parser_init(&p, test_opts, b.n, argv, 1);
	assert_int_equal(cmd_parser_next(&p, &err), 0);
	assert_int_equal(b.n - p.next, 2);
}

static void parser_misuse_and_help(void **state)
{
	struct argv_buf b;
	struct cmd_parser p;
	struct np_err err;
	char **argv;

	(void)state;
	argv = make_argv(&b, "cmd", "--bogus", NULL);
	cmd_parser_init(&p, test_opts, b.n, argv, 0);
	assert_int_equal(cmd_parser_next(&p, &err), CMD_OPT_MISUSE);
	assert_string_equal(err.msg, "unrecognized option '--bogus'");
	assert_int_equal(cmd_parser_stop(CMD_OPT_MISUSE), CMD_MISUSE);

	argv = make_argv(&b, "cmd", "-x", NULL);
	cmd_parser_init(&p, test_opts, b.n, argv, 0);
	assert_int_equal(cmd_parser_next(&p, &err), CMD_OPT_MISUSE);
	assert_string_equal(err.msg, "unrecognized option '-x'");

	argv = make_argv(&b, "cmd", "--config", NULL);
	cmd_parser_init(&p, test_opts, b.n, argv, 0);
	assert_int_equal(cmd_parser_next(&p, &err), CMD_OPT_MISUSE);
	assert_string_equal(err.msg, "--config needs a value");

	argv = make_argv(&b, "cmd", "-d", NULL);
	cmd_parser_init(&p, test_opts, b.n, argv, 0);
	assert_int_equal(cmd_parser_next(&p, &err), CMD_OPT_MISUSE);
	assert_string_equal(err.msg, "--duration needs a value");

	/* --help needs no entry in the table; a table may be empty. */
	argv = make_argv(&b, "cmd", "--flag", "--help", NULL);
	cmd_parser_init(&p, test_opts, b.n, argv, 0);
	assert_int_equal(cmd_parser_next(&p, &err), K_FLAG);
	assert_int_equal(cmd_parser_next(&p, &err), CMD_OPT_HELP);
	assert_int_equal(cmd_parser_stop(CMD_OPT_HELP), CMD_HELP);
	argv = make_argv(&b, "cmd", "-h", NULL);
	cmd_parser_init(&p, NULL, b.n, argv, 0);
	assert_int_equal(cmd_parser_next(&p, &err), CMD_OPT_HELP);
}

/* What f received, as a string (caller frees). */
static char *read_back(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	n = ftell(f);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	rewind(f);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	return s;
}

static void help_lists_every_option(void **state)
{
	FILE *f = tmpfile();
	char *text;

	(void)state;
	assert_non_null(f);
	cmd_opts_print(test_opts, f);
	text = read_back(f);
	assert_string_equal(text, "  -d, --duration D       how long\n"
				  "                         second line\n"
				  "      --config FILE      the configuration\n"
				  "      --flag             a flag\n"
				  "  -h, --help             this help\n");
	free(text);
	fclose(f);
}

static enum cmd_status last_status;

static enum cmd_status fake_run(int argc, char **argv, struct np_err *err)
{
	(void)argc;
	(void)argv;
	if (last_status != CMD_OK && last_status != CMD_HELP && last_status != CMD_DIAGNOSED)
		np_errf(err, "what went wrong");
	return last_status;
}

static const struct cmd_help fake_help = { "[--x]", NULL, NULL, NULL };
static const struct cmd fake_table[] = {
	{ "fake", "a command", fake_run, &fake_help, NULL, NULL },
	{ 0 },
};
static const struct cmd_table_help fake_table_help = { "TOOL [ARGS]", "about", NULL };
static const struct cmd fake_root = { "tools", NULL, NULL, NULL, fake_table, &fake_table_help };

/* Runs `tools fake` with stderr captured; returns the exit status, *text what stderr got. */
static int dispatch_captured(enum cmd_status st, char **text)
{
	struct argv_buf b;
	char **argv = make_argv(&b, "tools", "fake", NULL);
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO), rc;

	assert_non_null(f);
	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	last_status = st;
	rc = cmd_dispatch(&fake_root, "nodeprof", b.n, argv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fseek(f, 0, SEEK_END);
	*text = read_back(f);
	fclose(f);
	return rc;
}

static void one_reporter_exit_statuses(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(dispatch_captured(CMD_OK, &text), 0);
	assert_string_equal(text, "");
	free(text);
	assert_int_equal(dispatch_captured(CMD_FAILED, &text), 1);
	assert_string_equal(text, "nodeprof tools fake: what went wrong\n");
	free(text);
	assert_int_equal(dispatch_captured(CMD_DIAGNOSED, &text), 1);
	assert_string_equal(text, "");
	free(text);
	assert_int_equal(dispatch_captured(CMD_BAD_VALUE, &text), 2);
	assert_string_equal(text, "nodeprof tools fake: what went wrong\n");
	free(text);
	assert_int_equal(dispatch_captured(CMD_MISUSE, &text), 2);
	assert_string_equal(text, "nodeprof tools fake: what went wrong\n"
				  "Usage: nodeprof tools fake [--x]\n"
				  "Run `nodeprof tools fake --help` for the options.\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(durations),
		cmocka_unit_test(sizes),
		cmocka_unit_test(log_levels),
		cmocka_unit_test(numbers_in_a_range),
		cmocka_unit_test(reals),
		cmocka_unit_test(choices_and_demangling),
		cmocka_unit_test(listen_addresses),
		cmocka_unit_test(parser_options_and_operands),
		cmocka_unit_test(parser_misuse_and_help),
		cmocka_unit_test(help_lists_every_option),
		cmocka_unit_test(one_reporter_exit_statuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
