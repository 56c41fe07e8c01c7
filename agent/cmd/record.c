/* nodeprof record: placeholder until the sampler lands in this file. */
#include <stdio.h>
#include "agent/cmd/commands.h"
int cmd_record(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "nodeprof record: not implemented yet\n");
	return 1;
}
