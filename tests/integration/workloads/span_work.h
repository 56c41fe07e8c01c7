/* What the trace-context workloads share (span_threads.c, otel_thread_ctx.c): the main thread
 * spins in outside_span and a second thread in inside_span, paced (pace.h); the second thread's
 * ID goes to a file once it runs (whole: a temp file renamed), so that a test can set a trace
 * context for that thread alone; a timer thread ends both after some seconds. One translation
 * unit each: the functions are defined here. */
#ifndef WORKLOAD_SPAN_WORK_H
#define WORKLOAD_SPAN_WORK_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

/* This thread's ID into path; exits 2 when it cannot be written. */
static void write_tid_file(const char *path)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)gettid()) < 0 || fclose(f) || rename(tmp, path))
		exit(2);
}

static void *span_timer(void *arg)
{
	sleep((unsigned)(long)arg);
	stop = 1;
	return NULL;
}

/* Starts the timer (seconds) and the span thread (span_main, which calls write_tid_file and
 * inside_span): 0, or -1 when a thread cannot be started. */
static int start_span_threads(int seconds, void *(*span_main)(void *), pthread_t *span)
{
	pthread_t tm;

	return pthread_create(&tm, NULL, span_timer, (void *)(long)seconds) ||
	       pthread_create(span, NULL, span_main, NULL) ? -1 : 0;
}

#endif
