// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the throttle's decisions (preload/tx/throttle.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../preload/tx/throttle.h"

#define BUDGET 1000000u

static void a_write_that_stays_within_the_budget_does_not_wait(void **state)
{
	(void)state;
	assert_false(fl_throttle_needed(true, 400000, 600000, BUDGET));
}

static void a_write_that_passes_the_budget_waits(void **state)
{
	(void)state;
	assert_true(fl_throttle_needed(true, 400001, 600000, BUDGET));
}

static void a_reader_with_nothing_unread_is_never_waited_for(void **state)
{
	(void)state;
	assert_false(fl_throttle_needed(true, 0, 5 * BUDGET, BUDGET));
}

static void a_direction_on_tcp_is_never_throttled(void **state)
{
	(void)state;
	assert_false(fl_throttle_needed(false, 2 * BUDGET, 100, BUDGET));
}

static void a_small_write_waits_until_half_the_budget_is_free(void **state)
{
	(void)state;
	assert_int_equal(fl_throttle_target(100, BUDGET), 500000);
	assert_int_equal(fl_throttle_target(500000, BUDGET), 500000);
}

static void a_write_over_half_the_budget_waits_for_room_for_itself(void **state)
{
	(void)state;
	assert_int_equal(fl_throttle_target(700000, BUDGET), 300000);
}

static void a_write_of_the_whole_budget_waits_for_an_empty_queue(void **state)
{
	(void)state;
	assert_int_equal(fl_throttle_target(BUDGET, BUDGET), 0);
	assert_int_equal(fl_throttle_target(2 * BUDGET, BUDGET), 0);
}

static void the_first_failed_hold_backs_off_one_millisecond(void **state)
{
	(void)state;
	assert_int_equal(fl_hold_gap_next(0), 1000);
}

static void each_further_failed_hold_doubles_the_backoff(void **state)
{
	(void)state;
	assert_int_equal(fl_hold_gap_next(1000), 2000);
	assert_int_equal(fl_hold_gap_next(256000), 512000);
}

static void the_backoff_stops_at_one_second(void **state)
{
	(void)state;
	assert_int_equal(fl_hold_gap_next(500000), 1000000);
	assert_int_equal(fl_hold_gap_next(512000), 1000000);
	assert_int_equal(fl_hold_gap_next(1000000), 1000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_write_that_stays_within_the_budget_does_not_wait),
		cmocka_unit_test(a_write_that_passes_the_budget_waits),
		cmocka_unit_test(a_reader_with_nothing_unread_is_never_waited_for),
		cmocka_unit_test(a_direction_on_tcp_is_never_throttled),
		cmocka_unit_test(a_small_write_waits_until_half_the_budget_is_free),
		cmocka_unit_test(a_write_over_half_the_budget_waits_for_room_for_itself),
		cmocka_unit_test(a_write_of_the_whole_budget_waits_for_an_empty_queue),
		cmocka_unit_test(the_first_failed_hold_backs_off_one_millisecond),
		cmocka_unit_test(each_further_failed_hold_doubles_the_backoff),
		cmocka_unit_test(the_backoff_stops_at_one_second),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
