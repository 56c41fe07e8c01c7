/* Two threads that spin for argv[1] seconds: the main thread in outside_span, a second one in
 * inside_span. The second thread's ID is written to the file argv[2] once it runs, so that a
 * test can put a trace context for that thread (and only it) into OBI's map. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "span_work.h"

static const char *tid_file;

static void *thread_main(void *arg)
{
	(void)arg;
	write_tid_file(tid_file);
	inside_span();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	pace_init();

	if (argc < 3)
		return 2;
	tid_file = argv[2];
	if (start_span_threads(atoi(argv[1]), thread_main, &t))
		return 1;
	outside_span();
	pthread_join(t, NULL);
	return 0;
}
