/* Unit tests for the call-instruction check behind the frameless-leaf caller recovery,
 * with byte sequences assembled by hand from the x86-64 encoding tables, and for the
 * /proc/PID/mem path on this very process. */
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/profile/leaf_caller.h"

/* realloc with injected failures: when fail_at counts down to 1, that realloc fails
 * (the executable's definition comes first; the real one, libc's or ASan's, is next). */
static int fail_at;

void *realloc(void *p, size_t n)
{
	static void *(*real)(void *, size_t);

	if (fail_at && --fail_at == 0)
		return NULL;
	if (!real)
		real = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	return real(p, n);
}

/* Right-aligns an instruction in the 8 bytes before a return address, padding with nops. */
static int ends(const uint8_t *insn, size_t n)
{
	uint8_t b[8];

	memset(b, 0x90, sizeof(b));
	memcpy(b + 8 - n, insn, n);
	return np_ends_with_call(b);
}

static void recognises_calls(void **state)
{
	const uint8_t rel32[] = { 0xe8, 0x10, 0x20, 0x30, 0x40 };	       /* call rel32 */
	const uint8_t reg[] = { 0xff, 0xd0 };				       /* call rax */
	const uint8_t rex_reg[] = { 0x41, 0xff, 0xd3 };			       /* call r11 */
	const uint8_t mem[] = { 0xff, 0x10 };				       /* call [rax] */
	const uint8_t sib[] = { 0xff, 0x14, 0xc5 };			       /* call [rax*8] form */
	const uint8_t disp8[] = { 0xff, 0x50, 0x08 };			       /* call [rax+8] */
	const uint8_t sib_disp8[] = { 0xff, 0x54, 0x24, 0x08 };		       /* call [rsp+8] */
	const uint8_t rip[] = { 0xff, 0x15, 0x00, 0x10, 0x00, 0x00 };	       /* call [rip+0x1000] */
	const uint8_t disp32[] = { 0xff, 0x90, 0x00, 0x01, 0x00, 0x00 };       /* call [rax+0x100] */
	const uint8_t sib_disp32[] = { 0xff, 0x94, 0x24, 0x00, 0x01, 0x00, 0x00 }; /* call [rsp+0x100] */

	assert_true(ends(rel32, sizeof(rel32)));
	assert_true(ends(reg, sizeof(reg)));
	assert_true(ends(rex_reg, sizeof(rex_reg)));
	assert_true(ends(mem, sizeof(mem)));
	assert_true(ends(sib, sizeof(sib)));
	assert_true(ends(disp8, sizeof(disp8)));
	assert_true(ends(sib_disp8, sizeof(sib_disp8)));
	assert_true(ends(rip, sizeof(rip)));
	assert_true(ends(disp32, sizeof(disp32)));
	assert_true(ends(sib_disp32, sizeof(sib_disp32)));
}

static void rejects_non_calls(void **state)
{
	const uint8_t jmp_reg[] = { 0xff, 0xe0 };		 /* jmp rax: FF /4 */
	const uint8_t push_mem[] = { 0xff, 0x30 };		 /* push [rax]: FF /6 */
	const uint8_t mov[] = { 0x48, 0x89, 0xc7 };		 /* mov rdi, rax */
	const uint8_t ret[] = { 0xc3 };
	const uint8_t zeros[8] = { 0 };

	assert_false(ends(jmp_reg, sizeof(jmp_reg)));
	assert_false(ends(push_mem, sizeof(push_mem)));
	assert_false(ends(mov, sizeof(mov)));
	assert_false(ends(ret, sizeof(ret)));
	assert_false(np_ends_with_call(zeros));
}

__attribute__((noinline)) static uintptr_t return_address_of_this_call(void)
{
	return (uintptr_t)__builtin_return_address(0);
}

static void checks_live_memory(void **state)
{
	struct np_leaf_checker c = NP_LEAF_CHECKER_INIT;
	uintptr_t ret = return_address_of_this_call();
	static const uint8_t data[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

	/* A real return address in this process follows the call that produced it. */
	assert_true(np_leaf_caller_ok(&c, (uint32_t)getpid(), ret));
	assert_true(np_leaf_caller_ok(&c, (uint32_t)getpid(), ret)); /* cached */
	assert_false(np_leaf_caller_ok(&c, (uint32_t)getpid(), (uint64_t)(uintptr_t)(data + 8)));
	/* An unreadable address or a process that does not exist is never a caller. */
	assert_false(np_leaf_caller_ok(&c, (uint32_t)getpid(), 8));
	assert_false(np_leaf_caller_ok(&c, 4000000, ret));
	np_leaf_checker_reset(&c);
}

static int fds_open(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fcntl(fds[i], F_GETFD) < 0)
			return 0;
	return 1;
}

/* A growth that fails must not leave an id whose descriptor slot or verdict is unset:
 * later lookups would read a random descriptor and the reset would close it. Each round
 * fails a different one of the reallocations that adding the 65th process makes. */
static void allocation_failure_leaves_no_unset_slot(void **state)
{
	uintptr_t ret = return_address_of_this_call();
	int sentinel[256];
	const size_t ns = sizeof(sentinel) / sizeof(sentinel[0]);

	for (size_t i = 0; i < ns; i++)
		assert_true((sentinel[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
	for (int k = 1; k <= 8; k++) {
		struct np_leaf_checker c = NP_LEAF_CHECKER_INIT;
		uint32_t fake = 4100000; /* above PID_MAX_LIMIT: never a process */
		for (int i = 0; i < 64; i++)
			assert_false(np_leaf_caller_ok(&c, fake++, ret + (uint64_t)i));
		fail_at = k;
		(void)np_leaf_caller_ok(&c, (uint32_t)getpid(), ret); /* maybe refused: no memory */
		fail_at = 0;
		for (int i = 0; i < 300; i++)
			assert_false(np_leaf_caller_ok(&c, fake++, ret + (uint64_t)i));
		/* The process is checked properly now, and again from the cache. */
		assert_true(np_leaf_caller_ok(&c, (uint32_t)getpid(), ret));
		assert_true(np_leaf_caller_ok(&c, (uint32_t)getpid(), ret));
		np_leaf_checker_reset(&c);
		/* The reset closed only what the checker opened. */
		assert_true(fds_open(sentinel, ns));
		assert_true(fcntl(0, F_GETFD) >= 0 && fcntl(1, F_GETFD) >= 0 && fcntl(2, F_GETFD) >= 0);
	}
	for (size_t i = 0; i < ns; i++)
		close(sentinel[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recognises_calls),
		cmocka_unit_test(rejects_non_calls),
		cmocka_unit_test(checks_live_memory),
		cmocka_unit_test(allocation_failure_leaves_no_unset_slot),
	};
	return cmocka_run_group_tests_name("leaf_caller", tests, NULL, NULL);
}
