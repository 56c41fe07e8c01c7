/* Waiting on another thread in unit tests (tests/unit/helpers/wait.c): poll a condition
 * until a deadline instead of sleeping for a guessed time, so that a test is as fast as
 * the code allows on an idle machine and still passes on a loaded one. */
#ifndef NP_TESTS_WAIT_TEST_H
#define NP_TESTS_WAIT_TEST_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
int64_t np_test_mono_ms(void);

/* Calls cond(ud) every millisecond until it returns nonzero or timeout_ms have passed;
 * returns cond's last answer (checked once more at the deadline). */
int np_test_wait_until(int (*cond)(void *ud), void *ud, int timeout_ms);

#endif
