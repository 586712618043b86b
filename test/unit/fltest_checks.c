// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the check macros of test/lib/fltest.h fail when their
 * comparison does not hold, pass when it does, and say both values (or the
 * first differing offset) in the reason; a setup step that fails counts as
 * a failure. A check that cannot fail would prove nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../lib/fltest.c"

static void reset(void)
{
	fl_t_why[0] = '\0';
}

static int eq_int(int a, int b) { FL_T_CHECK_EQ(a, b, "the %s", "count"); return 0; }
static int ne_u64(uint64_t a, uint64_t b) { FL_T_CHECK_NE(a, b, "cookie"); return 0; }
static int lt_size(size_t a, int b) { FL_T_CHECK_LT(a, b, "size"); return 0; }
static int le_long(long a, long b) { FL_T_CHECK_LE(a, b, "le"); return 0; }
static int gt_ssize(ssize_t a, ssize_t b) { FL_T_CHECK_GT(a, b, "gt"); return 0; }
static int ge_u32(uint32_t a, uint32_t b) { FL_T_CHECK_GE(a, b, "ge"); return 0; }
static int str_eq(const char *a, const char *b) { FL_T_CHECK_STR_EQ(a, b, "name"); return 0; }
static int mem_eq(const void *a, const void *b, size_t n)
{
	FL_T_CHECK_MEM_EQ(a, b, n, "buffer");
	return 0;
}

static void has(const char *needle)
{
	if (!strstr(fl_t_reason(), needle))
		fail_msg("reason \"%s\" lacks \"%s\"", fl_t_reason(), needle);
}

static void comparisons_fail_and_print_both_values(void **state)
{
	(void)state;
	reset();
	assert_int_equal(eq_int(3, 4), -1);
	has("the count: a == b does not hold: a is 3, b is 4");
	reset();
	assert_int_equal(eq_int(-7, 4), -1);
	has("a is -7, b is 4");
	reset();
	assert_int_equal(ne_u64(0x123456789ull, 0x123456789ull), -1);
	has("cookie: a != b does not hold: a is 4886718345 (0x123456789), b is 4886718345");
	reset();
	assert_int_equal(lt_size(9, 9), -1);
	has("size: a < b does not hold: a is 9, b is 9");
	reset();
	assert_int_equal(le_long(2, -1), -1);
	has("a is 2, b is -1");
	reset();
	assert_int_equal(gt_ssize(-1, 0), -1);
	has("a is -1, b is 0");
	reset();
	assert_int_equal(ge_u32(1, 2), -1);
	has("ge: a >= b does not hold: a is 1, b is 2");
	/* The first reason stays. */
	assert_int_equal(eq_int(5, 6), -1);
	has("a is 1, b is 2");
	reset();
}

static void comparisons_pass_when_they_hold(void **state)
{
	(void)state;
	reset();
	assert_int_equal(eq_int(4, 4), 0);
	assert_int_equal(ne_u64(1, 2), 0);
	assert_int_equal(lt_size(1, 2), 0);
	assert_int_equal(le_long(-3, -3), 0);
	assert_int_equal(gt_ssize(1, -1), 0);
	assert_int_equal(ge_u32(2, 2), 0);
	assert_int_equal(str_eq("x", "x"), 0);
	assert_int_equal(str_eq(NULL, NULL), 0);
	assert_int_equal(mem_eq("abc", "abc", 3), 0);
	assert_string_equal(fl_t_reason(), "");
}

static void strings_and_memory_print_where_they_differ(void **state)
{
	(void)state;
	reset();
	assert_int_equal(str_eq("lo", "eth0"), -1);
	has("name: a is \"lo\", b is \"eth0\"");
	reset();
	assert_int_equal(str_eq("lo", NULL), -1);
	has("a is \"lo\", b is NULL");
	reset();
	assert_int_equal(mem_eq("abcdef", "abcxef", 6), -1);
	has("buffer: a and b differ at offset 3 of 6: 0x64 vs 0x78");
	reset();
}

/* What fl_t_setup printed (its lines go to a file, not to the runner,
 * which would count the FAIL: line). */
static bool setup_quietly(bool ok, const char *what, char *out, size_t len)
{
	FILE *f = tmpfile();
	int saved = dup(1);
	bool r;
	size_t n;

	assert_non_null(f);
	fflush(stdout);
	dup2(fileno(f), 1);
	r = fl_t_setup(ok, what);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(f);
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	fclose(f);
	return r;
}

static void a_failed_setup_fails_the_program(void **state)
{
	int before = fl_t_failed;
	char out[256];

	(void)state;
	reset();
	assert_true(setup_quietly(true, "a step that worked", out, sizeof(out)));
	assert_string_equal(out, "setup: a step that worked\n");
	assert_int_equal(fl_t_failed, before);
	fl_t_fail("f.c", 1, "no namespace");
	assert_false(setup_quietly(false, "a step that did not", out, sizeof(out)));
	assert_string_equal(out, "FAIL: setup: a step that did not: f.c:1: no namespace\n");
	assert_int_equal(fl_t_failed, before + 1);
	assert_int_equal(fl_t_exit_status(), 1);
	fl_t_failed = before;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(comparisons_fail_and_print_both_values),
		cmocka_unit_test(comparisons_pass_when_they_hold),
		cmocka_unit_test(strings_and_memory_print_where_they_differ),
		cmocka_unit_test(a_failed_setup_fails_the_program),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
