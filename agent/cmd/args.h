/* The command line of every nodeprof command: one option table per command, from which
 * both its parser (getopt_long underneath, so "--name VALUE", "--name=VALUE", "-x VALUE"
 * and unambiguous abbreviations all work) and the options part of its --help are made, so
 * that the help cannot leave an option out; and the one parser of each kind of value
 * (durations, sizes, log levels, numbers in a range, process IDs, listen addresses). Every
 * value error reads "--NAME VALUE: what is wrong" (the form `record --duration 0` has always
 * printed). Not thread-safe: getopt keeps its state in globals, and a command parses its
 * arguments once, on the main thread, before anything starts. */
#ifndef NP_CMD_ARGS_H
#define NP_CMD_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"
#include "agent/symbols/symbolizer.h"
#include "lib/log.h"

/* How a command ends: its parse_args returns one of the first four, its work one of
 * CMD_OK, CMD_FAILED, CMD_DIAGNOSED. cmd_exit() (agent/cmd/cmd.c) turns it into the exit
 * status and prints the one error line. */
enum cmd_status {
	CMD_OK = 0,
	CMD_HELP,	/* -h or --help: print the help on stdout, exit 0 */
	CMD_BAD_VALUE,	/* usage error, exit 2: an option's value or an operand is wrong; err names it */
	CMD_MISUSE,	/* usage error, exit 2: the shape of the command line is wrong (an unknown option,
			 * a missing value or operand, one too many): err says what; the usage lines follow */
	CMD_FAILED,	/* error, exit 1: err says what failed */
	CMD_DIAGNOSED,	/* error, exit 1, already told on stderr in the format of its input's errors
			 * (FILE:LINE:COL: message for configurations, stdin:LINE:COL for JSON) */
};

/* One option of a command. The table ends with a row whose name is NULL; -h/--help is
 * added by the parser and by the help, never written in a table. */
struct cmd_opt {
	const char *name; /* long name without the dashes: "duration" */
	int key;	  /* the short option's letter ('d'), or a value above 255 for a long-only one */
	const char *arg;  /* the value's name in the help ("D", "FILE"); NULL: a flag without a value */
	const char *help; /* the help text; a '\n' starts a continuation line (lines of at most ~70 columns) */
};

#define CMD_OPT_LONG 256 /* the first key of long-only options: CMD_OPT_LONG + n */
#define CMD_MAX_OPTS 32

/* Walks one command line, getopt_long style: options may come in any order and mix with
 * operands, unless stop_at_operand is set (then the first operand ends the options, as
 * `tools symbolize ELF_FILE ADDR...` needs). */
struct cmd_parser {
	const struct cmd_opt *opts; /* borrowed */
	int argc;
	char **argv;		   /* borrowed; getopt reorders it (options first) */
	const char *value;	   /* the current option's value, NULL for a flag */
	const char *name;	   /* the current option's long name */
	int next;		   /* after the options end: argv[next..argc) are the operands */
	int stop_at_operand;
};

/* opts: borrowed for the parser's life. argv[0] is the command's name, as main passes it. */
void cmd_parser_init(struct cmd_parser *p, const struct cmd_opt *opts, int argc, char **argv, int stop_at_operand);

#define CMD_OPT_HELP (-1)
#define CMD_OPT_MISUSE (-2)

/* The next option: its key (> 0, with p->name and p->value set); 0 when the options have
 * ended (operands from p->next); CMD_OPT_HELP for -h/--help; CMD_OPT_MISUSE with err set
 * ("unrecognized option '--x'", "--pid needs a value"). */
NP_MUST_CHECK int cmd_parser_next(struct cmd_parser *p, struct np_err *err);

/* What a parse_args returns when cmd_parser_next() returned a negative key. */
static inline enum cmd_status cmd_parser_stop(int key)
{
	return key == CMD_OPT_HELP ? CMD_HELP : CMD_MISUSE;
}

/* Between min and max operands remain (max < 0: no limit); else a misuse with err naming
 * what is missing ("missing FILE") or the first one too many ("unexpected argument \"x\""). */
NP_MUST_CHECK int cmd_parser_operands(const struct cmd_parser *p, int min, int max, const char *what,
				      struct np_err *err);

/* The whole parse_args of a command with no options but -h and exactly one operand
 * (`check FILE`, `tools relabel RULES_FILE`): *out is the operand, what names it when missing. */
enum cmd_status cmd_parse_one_operand(int argc, char **argv, const char *what, const char **out, struct np_err *err);

/* Appends the options part of a help, "  -d, --duration D       how long ...", one per
 * option, -h/--help last, to f. */
void cmd_opts_print(const struct cmd_opt *opts, FILE *f);

/* text's lines, the first from where f's line is, the others from column; ends the last line. */
void cmd_print_lines(FILE *f, int column, const char *text);

/* Value parsers. opt is the option's name as shown in errors ("--duration"); each fills
 * its output only on success and fails with "OPT VALUE: reason". */

/* A Go/Alloy duration (lib/duration.h: "10s", "1m30s", "500ms"); min_ns: the smallest
 * allowed, with the reason when smaller (e.g. 1, "duration must be > 0"). */
NP_MUST_CHECK int cmd_arg_duration(const char *opt, const char *value, int64_t min_ns, const char *too_small,
				   int64_t *out_ns, struct np_err *err);

/* A size in bytes: "64MiB", "4MB", "512k", "0" (k, M, G with an optional i and B; each is
 * a power of 1024), at most 1 TiB. */
NP_MUST_CHECK int cmd_arg_size(const char *opt, const char *value, size_t *out, struct np_err *err);

/* debug, info, warn or error (lib/log.h). */
NP_MUST_CHECK int cmd_arg_log_level(const char *opt, const char *value, enum np_level *out, struct np_err *err);

/* A whole decimal number (digits only) from min to max; what names it in the error
 * ("a whole number of Hz"). */
NP_MUST_CHECK int cmd_arg_uint(const char *opt, const char *value, uint64_t min, uint64_t max, const char *what,
			       uint64_t *out, struct np_err *err);

/* A process ID: a whole decimal number from 1 to max. */
NP_MUST_CHECK int cmd_arg_pid(const char *opt, const char *value, int max, int *out, struct np_err *err);

/* A real number above lo (exclusive) and at most hi; what names it in the error. */
NP_MUST_CHECK int cmd_arg_real(const char *opt, const char *value, double lo, double hi, const char *what,
			       double *out, struct np_err *err);

/* One of a list of words (NULL-terminated); *out is its index. */
NP_MUST_CHECK int cmd_arg_choice(const char *opt, const char *value, const char *const *words, int *out,
				 struct np_err *err);

/* A demangling mode: none, simplified, templates or full (agent/symbols/symbolizer.h). */
NP_MUST_CHECK int cmd_arg_demangle(const char *opt, const char *value, enum sym_demangle *out, struct np_err *err);

/* A listen address as the HTTP server takes it ("127.0.0.1:4100", ":4100", "[::1]:0"):
 * checked with the server's own parser, so that a typo is a usage error before anything starts. */
NP_MUST_CHECK int cmd_arg_listen(const char *opt, const char *value, const char **out, struct np_err *err);

/* The URL a person opens for a listen address (":4100" is http://127.0.0.1:4100/, ":0" the
 * port bound), or the address as written when it cannot be made one. */
void cmd_listen_url(const char *addr, int bound_port, char *url, size_t cap);

#endif
