/* The unwind table compile worker (agent/unwind/worker.h): jobs come back in the order they were
 * given, each with its table or the reason it has none; waiting waits for every job; a worker
 * freed with jobs queued and running stops after the running one and frees the rest (ASan and
 * Valgrind see no leak and no race on the job lists); a finished table waits to be taken before
 * the next compile starts, and wait_busy waits for the one under way only. The queue, the
 * waits and unw_worker_yield's wait from another thread are lib/job_worker.h's, tested in
 * tests/unit/test_lib_job_worker.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/unwind/worker.h"
#include "tests/unit/wait_test.h"

static const char *const files[] = { "/usr/bin/python3.11", "/lib/x86_64-linux-gnu/libc.so.6" };

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void jobs_come_back_in_order(void **state)
{
	(void)state;
	struct unw_worker *w;
	struct np_err err;
	assert_int_equal(unw_worker_new(&w, &err), 0);
	for (uint32_t i = 0; i < 2; i++)
		assert_int_equal(unw_worker_submit(w, i + 1, files[i], open_ro(files[i]), -1, &err), 0);
	/* Not an ELF file: a job that fails, with its reason. */
	char path[] = "/tmp/np-unw-worker-XXXXXX";
	int junk = mkstemp(path);
	assert_true(junk >= 0);
	assert_int_equal(write(junk, "not an elf file at all", 22), 22);
	unlink(path);
	assert_int_equal(unw_worker_submit(w, 3, "junk", junk, -1, &err), 0);
	/* One finished table at a time: the next compile waits until it is taken. */
	struct unw_build *list = NULL, **tail = &list;
	size_t takes = 0;
	while (unw_worker_pending(w)) {
		unw_worker_wait(w);
		struct unw_build *got = unw_worker_take(w);
		assert_non_null(got);
		assert_null(got->next);
		*tail = got;
		tail = &got->next;
		takes++;
	}
	assert_int_equal(takes, 3);
	uint32_t id = 1;
	for (struct unw_build *j = list; j; j = j->next, id++) {
		assert_int_equal(j->id, id);
		assert_int_equal(j->fd, -1); /* closed once compiled */
		if (id <= 2) {
			assert_int_equal(j->rc, 0);
			assert_non_null(j->t);
			assert_true(j->t->nrows > 1000);
			assert_string_equal(j->key, files[id - 1]);
		} else {
			assert_int_equal(j->rc, -1);
			assert_null(j->t);
			assert_non_null(strstr(j->err.msg, "not an ELF"));
		}
	}
	assert_int_equal(id, 4);
	while (list) {
		struct unw_build *next = list->next;
		unw_build_free(list);
		list = next;
	}
	assert_null(unw_worker_take(w));
	unw_worker_free(w);
}

static void freed_with_work_left(void **state)
{
	(void)state;
	struct unw_worker *w;
	struct np_err err;
	assert_int_equal(unw_worker_new(&w, &err), 0);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(unw_worker_submit(w, i + 1, files[i % 2], open_ro(files[i % 2]), -1, &err), 0);
	unw_worker_free(w);
}

static int has_done(void *w)
{
	return unw_worker_done(w) > 0;
}

/* wait_busy returns once the job under way is done, which then waits to be taken (has_done),
 * and the next compile does not start until it is. */
static void busy_then_done(void **state)
{
	(void)state;
	struct unw_worker *w;
	struct np_err err;
	assert_int_equal(unw_worker_new(&w, &err), 0);
	assert_int_equal(unw_worker_done(w), 0);
	for (uint32_t i = 0; i < 2; i++)
		assert_int_equal(unw_worker_submit(w, i + 1, files[i], open_ro(files[i]), -1, &err), 0);
	for (uint32_t id = 1; id <= 2; id++) {
		assert_true(np_test_wait_until(has_done, w, 10000));
		unw_worker_wait_busy(w); /* at once: the next job waits for the take */
		assert_int_equal(unw_worker_done(w), 1);
		assert_int_equal(unw_worker_pending(w), 3 - id);
		struct unw_build *got = unw_worker_take(w);
		assert_non_null(got);
		assert_int_equal(got->id, id);
		assert_int_equal(unw_worker_done(w), 0);
		unw_build_free(got);
	}
	unw_worker_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(jobs_come_back_in_order),
		cmocka_unit_test(busy_then_done),
		cmocka_unit_test(freed_with_work_left),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
