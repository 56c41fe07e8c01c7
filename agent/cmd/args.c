/* Option tables, their parser and help, and the value parsers of every command: see args.h. */
#include "agent/cmd/args.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/server.h"
#include "lib/duration.h"

#define HELP_KEY 'h'
#define HELP_COLUMN 25 /* where the options' help text starts */

static const struct cmd_opt help_opt = { "help", HELP_KEY, NULL, "this help" };

void cmd_parser_init(struct cmd_parser *p, const struct cmd_opt *opts, int argc, char **argv, int stop_at_operand)
{
	*p = (struct cmd_parser){ .opts = opts, .argc = argc, .argv = argv, .stop_at_operand = stop_at_operand };
	/* 0, not 1: glibc then starts afresh, also reading a new "+" at the optstring's start. */
	optind = 0;
	opterr = 0;
}

static const struct cmd_opt *find_key(const struct cmd_opt *opts, int key)
{
	for (; opts && opts->name; opts++)
		if (opts->key == key)
			return opts;
	return key == HELP_KEY ? &help_opt : NULL;
}

/* getopt_long's tables, made from the command's: ':' first, so that a missing value is
 * told apart from an unknown option. */
static void build_getopt(const struct cmd_parser *p, struct option *longopts, char *shortopts)
{
	size_t n = 0, s = 0;

	if (p->stop_at_operand)
		shortopts[s++] = '+';
	shortopts[s++] = ':';
	for (const struct cmd_opt *o = p->opts; o && o->name && n < CMD_MAX_OPTS; o++) {
		longopts[n++] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, o->key };
		if (o->key < CMD_OPT_LONG) {
			shortopts[s++] = (char)o->key;
			if (o->arg)
				shortopts[s++] = ':';
		}
	}
	longopts[n++] = (struct option){ help_opt.name, no_argument, NULL, HELP_KEY };
	longopts[n] = (struct option){ 0 };
	shortopts[s++] = HELP_KEY;
	shortopts[s] = '\0';
}

int cmd_parser_next(struct cmd_parser *p, struct np_err *err)
{
	struct option longopts[CMD_MAX_OPTS + 2];
	char shortopts[3 * CMD_MAX_OPTS + 8];
	const struct cmd_opt *o;
	int key;

	build_getopt(p, longopts, shortopts);
	key = getopt_long(p->argc, p->argv, shortopts, longopts, NULL);
	p->next = optind;
	if (key == -1)
		return 0;
	if (key == ':') {
		o = find_key(p->opts, optopt);
		np_errf(err, "--%s needs a value", o ? o->name : "?");
		return CMD_OPT_MISUSE;
	}
	if (key == '?') {
		if (optopt)
			np_errf(err, "unrecognized option '-%c'", optopt);
		else
			np_errf(err, "unrecognized option '%s'", p->argv[optind - 1]);
		return CMD_OPT_MISUSE;
	}
	if (key == HELP_KEY)
		return CMD_OPT_HELP;
	o = find_key(p->opts, key);
	p->name = o->name;
	p->value = o->arg ? optarg : NULL;
	return key;
}

int cmd_parser_operands(const struct cmd_parser *p, int min, int max, const char *what, struct np_err *err)
{
	int n = p->argc - p->next;

	if (n < min)
		return np_errf(err, "missing %s", what);
	if (max >= 0 && n > max)
		return np_errf(err, "unexpected argument \"%s\"", p->argv[p->next + max]);
	return 0;
}

enum cmd_status cmd_parse_one_operand(int argc, char **argv, const char *what, const char **out, struct np_err *err)
{
	struct cmd_parser p;
	int key;

	cmd_parser_init(&p, NULL, argc, argv, 0);
	if ((key = cmd_parser_next(&p, err)) != 0)
		return cmd_parser_stop(key);
	if (cmd_parser_operands(&p, 1, 1, what, err))
		return CMD_MISUSE;
	*out = argv[p.next];
	return CMD_OK;
}

/* "  -d, --duration D" or "      --demangle MODE" (long_indent 6: under the long names of
 * the short options; 2 when the command has none but -h), then the help from column 25. */
static void print_opt(const struct cmd_opt *o, int long_indent, FILE *f)
{
	char left[96];
	int n;

	if (o->key < CMD_OPT_LONG)
		n = snprintf(left, sizeof(left), "  -%c, --%s%s%s", o->key, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	else
		n = snprintf(left, sizeof(left), "%*s--%s%s%s", long_indent, "", o->name, o->arg ? " " : "",
			     o->arg ? o->arg : "");
	if (n + 2 <= HELP_COLUMN)
		fprintf(f, "%-*s", HELP_COLUMN, left);
	else
		fprintf(f, "%s\n%*s", left, HELP_COLUMN, "");
	cmd_print_lines(f, HELP_COLUMN, o->help);
}

void cmd_print_lines(FILE *f, int column, const char *text)
{
	for (const char *s = text;;) {
		const char *eol = strchr(s, '\n');
		size_t len = eol ? (size_t)(eol - s) : strlen(s);
		fprintf(f, "%.*s\n", (int)len, s);
		if (!eol || !eol[1])
			return;
		s = eol + 1;
		fprintf(f, "%*s", column, "");
	}
}

void cmd_opts_print(const struct cmd_opt *opts, FILE *f)
{
	int long_indent = 2;

	for (const struct cmd_opt *o = opts; o && o->name; o++)
		if (o->key < CMD_OPT_LONG)
			long_indent = 6;
	for (const struct cmd_opt *o = opts; o && o->name; o++)
		print_opt(o, long_indent, f);
	print_opt(&help_opt, long_indent, f);
}

int cmd_arg_duration(const char *opt, const char *value, int64_t min_ns, const char *too_small, int64_t *out_ns,
		     struct np_err *err)
{
	int64_t ns;

	/* Two checks: ns is only set when the value parses. */
	if (np_duration_parse(value, &ns, err))
		return np_err_wrap(err, "%s %s", opt, value);
	if (ns < min_ns)
		return np_errf(err, "%s %s: %s", opt, value, too_small);
	*out_ns = ns;
	return 0;
}

int cmd_arg_size(const char *opt, const char *value, size_t *out, struct np_err *err)
{
	const char *p = value;
	char *end;
	unsigned long long v, mul = 1;

	if (*p < '0' || *p > '9')
		goto bad;
	errno = 0;
	v = strtoull(p, &end, 10);
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	default: break;
	}
	if (mul > 1 && *end == 'i')
		end++;
	if (mul > 1 && (*end == 'B' || *end == 'b'))
		end++;
	if (errno || *end || v > (1ULL << 40) / mul)
		goto bad;
	*out = (size_t)(v * mul);
	return 0;
bad:
	return np_errf(err, "%s %s: use a size such as 64MiB, 4MiB or 0 (at most 1TiB)", opt, value);
}

int cmd_arg_log_level(const char *opt, const char *value, enum np_level *out, struct np_err *err)
{
	if (np_log_parse_level(value, out))
		return np_errf(err, "%s %s: use debug, info, warn or error", opt, value);
	return 0;
}

/* Digits only: no sign, no space, no hex, as a person writes a count. */
static int parse_decimal(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

int cmd_arg_uint(const char *opt, const char *value, uint64_t min, uint64_t max, const char *what, uint64_t *out,
		 struct np_err *err)
{
	uint64_t v;

	if (parse_decimal(value, &v) || v < min || v > max)
		return np_errf(err, "%s %s: expected %s from %llu to %llu", opt, value, what, (unsigned long long)min,
			       (unsigned long long)max);
	*out = v;
	return 0;
}

int cmd_arg_pid(const char *opt, const char *value, int max, int *out, struct np_err *err)
{
	uint64_t v;

	if (parse_decimal(value, &v) || v < 1 || v > (uint64_t)max)
		return np_errf(err, "%s %s: not a process ID (a whole number from 1 to %d)", opt, value, max);
	*out = (int)v;
	return 0;
}

int cmd_arg_real(const char *opt, const char *value, double lo, double hi, const char *what, double *out,
		 struct np_err *err)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(value, &end);
	if (errno || end == value || *end || !isfinite(v) || !(v > lo && v <= hi))
		return np_errf(err, "%s %s: %s", opt, value, what);
	*out = v;
	return 0;
}

int cmd_arg_choice(const char *opt, const char *value, const char *const *words, int *out, struct np_err *err)
{
	char list[256];
	size_t len = 0;

	for (int i = 0; words[i]; i++) {
		if (strcmp(value, words[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	list[0] = '\0';
	for (int i = 0; words[i] && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i == 0 ? "" : words[i + 1] ? ", " : " or ",
					words[i]);
	return np_errf(err, "%s %s: use %s", opt, value, list);
}

int cmd_arg_demangle(const char *opt, const char *value, enum sym_demangle *out, struct np_err *err)
{
	if (sym_demangle_parse(value, out, err))
		return np_err_wrap(err, "%s %s", opt, value);
	return 0;
}

int cmd_arg_listen(const char *opt, const char *value, const char **out, struct np_err *err)
{
	char host[256];
	int port;

	if (np_httpd_parse_listen(value, host, sizeof(host), &port, err))
		return np_err_wrap(err, "%s %s", opt, value);
	*out = value;
	return 0;
}

void cmd_listen_url(const char *addr, int bound_port, char *url, size_t cap)
{
	struct np_err err;

	if (np_httpd_listen_url(addr, bound_port, url, cap, &err))
		snprintf(url, cap, "%s", addr);
}
