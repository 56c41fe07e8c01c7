/* Two threads that spin for argv[1] seconds: the main thread in outside_span, a second one in
 * inside_span. The second thread's ID is written to the file argv[2] once it runs, so that a
 * test can put a trace context for that thread (and only it) into OBI's map. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pace.h"

static volatile unsigned long sink;
static volatile int stop;

__attribute__((noipa)) static void spin(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
	pace();
}

__attribute__((noipa)) void inside_span(void)
{
	while (!stop)
		spin();
}

__attribute__((noipa)) void outside_span(void)
{
	while (!stop)
		spin();
}

static const char *tid_file;

static void *thread_main(void *arg)
{
	char tmp[4096];
	FILE *f;

	(void)arg;
	snprintf(tmp, sizeof(tmp), "%s.tmp", tid_file);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)gettid()) < 0 || fclose(f) || rename(tmp, tid_file))
		exit(2);
	inside_span();
	return NULL;
}

static void *timer(void *arg)
{
	sleep((unsigned)(long)arg);
	stop = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t, tm;

	pace_init();

	if (argc < 3)
		return 2;
	tid_file = argv[2];
	if (pthread_create(&tm, NULL, timer, (void *)(long)atoi(argv[1])) ||
	    pthread_create(&t, NULL, thread_main, NULL))
		return 1;
	outside_span();
	pthread_join(t, NULL);
	return 0;
}
