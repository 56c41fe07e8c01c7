/* Unit tests for lib/procfs_text: /proc/PID/status fields and the cmdline join,
 * on texts as the kernel prints them and on hostile ones (a process names itself). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/procfs_text.h"

static const char status[] = "Name:\tUid: 0\n"
			     "Umask:\t0022\n"
			     "State:\tS (sleeping)\n"
			     "Tgid:\t4242\n"
			     "NSpid:\t4242\t17\n"
			     "Uid:\t1000\t1001\t1002\t1003\n"
			     "Gid:\t100\t100\t100\t100\n";

static void status_fields(void **state)
{
	unsigned long uid = 0;
	const char *v;
	size_t n;

	/* The process's name cannot pass for a field: fields start a line. */
	assert_int_equal(np_procfs_status_uid(status, strlen(status), &uid), 1);
	assert_int_equal(uid, 1000);
	assert_int_equal(np_procfs_status_nspid(status, strlen(status)), 17);
	assert_int_equal(np_procfs_status_field(status, strlen(status), "State", &v, &n), 1);
	assert_int_equal(n, strlen("S (sleeping)"));
	assert_memory_equal(v, "S (sleeping)", n);
	assert_int_equal(np_procfs_status_field(status, strlen(status), "Sta", &v, &n), 0);
	/* Cut before the Uid line: no UID, and nothing read past the length. */
	assert_int_equal(np_procfs_status_uid(status, (size_t)(strstr(status, "Uid:\t1000") - status), &uid), 0);
}

static void status_hostile(void **state)
{
	unsigned long uid = 7;

	assert_int_equal(np_procfs_status_uid("Uid:\t99999999999999999999\n", 26, &uid), 0);
	assert_int_equal(np_procfs_status_uid("Uid:\t4294967296\n", 16, &uid), 0);
	assert_int_equal(np_procfs_status_uid("Uid:\n", 5, &uid), 0);
	assert_int_equal(np_procfs_status_uid("Uid:", 4, &uid), 0);
	assert_int_equal(np_procfs_status_uid("Uid:\t4294967295", 15, &uid), 1);
	assert_int_equal(uid, 4294967295ul);
	assert_int_equal(np_procfs_status_nspid("NSpid:\t12\tx\n", 12), 0);
	assert_int_equal(np_procfs_status_nspid("NSpid:\t12 13 \t\n", 15), 13);
	assert_int_equal(np_procfs_status_nspid("NSpid:\t5000000000\n", 18), 0);
	assert_int_equal(np_procfs_status_nspid("", 0), 0);
}

static void cmdline_join(void **state)
{
	static const char raw[] = "python3\0\0-m\0http.server\0\0";
	struct np_buf whole = NP_BUF_INIT;
	struct np_cmdline_join j = NP_CMDLINE_JOIN_INIT;

	np_procfs_cmdline_feed(&j, raw, sizeof(raw) - 1, &whole);
	np_buf_putc(&whole, '\0');
	assert_string_equal(whole.p, "python3 -m http.server");
	/* Any chunking gives the same result. */
	for (size_t cut = 0; cut < sizeof(raw); cut++) {
		struct np_buf b = NP_BUF_INIT;
		struct np_cmdline_join k = NP_CMDLINE_JOIN_INIT;
		np_procfs_cmdline_feed(&k, raw, cut, &b);
		np_procfs_cmdline_feed(&k, raw + cut, sizeof(raw) - 1 - cut, &b);
		np_buf_putc(&b, '\0');
		assert_string_equal(b.p, whole.p);
		np_buf_free(&b);
	}
	np_buf_free(&whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(status_fields),
		cmocka_unit_test(status_hostile),
		cmocka_unit_test(cmdline_join),
	};
	return cmocka_run_group_tests_name("procfs_text", tests, NULL, NULL);
}
