/* Prints agent/runtime/perl/layout's table entry for 5.MINOR ("pl_layout 5.36"), one
 * "field value" line per field of struct pl_layout, for tests/integration/test_perl_layout.py to
 * hold against the perl headers of that version (tests/perl/layout_probe.c). Exit status 1 when
 * the table has no entry. */
#include <stdio.h>
#include <stdlib.h>

#include "agent/runtime/perl/layout.h"
#include "tests/perl/fields.h"

#define PRINT(field, value) printf("%s %lu\n", #field, (unsigned long)l->field);

int main(int argc, char **argv)
{
	unsigned major, minor;
	const struct pl_layout *l;

	if (argc != 2 || sscanf(argv[1], "%u.%u", &major, &minor) != 2) {
		fprintf(stderr, "usage: pl_layout MAJOR.MINOR\n");
		return 2;
	}
	if (!(l = pl_layout_table(major, minor))) {
		fprintf(stderr, "pl_layout: no layout for %u.%u\n", major, minor);
		return 1;
	}
	printf("version %u %u\n", l->major, l->minor);
	PL_LAYOUT_FIELDS(PRINT)
	return 0;
}
