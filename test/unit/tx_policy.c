// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the send buffer's hold and flush policy (preload/tx/tx_policy.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../preload/tx/tx_policy.h"

#define CAP (256u << 10) /* the default FASTLOCAL_FLUSH_BYTES */

static void a_small_write_is_held_only_if_the_reader_is_busy(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(0, false, false, 64, CAP), FL_TXP_IF_BUSY);
}

static void msg_more_holds_a_write_whatever_its_reader_does(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(0, false, true, 64, CAP), FL_TXP_HOLD);
}

static void tcp_cork_holds_even_a_large_write(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(FL_TXF_CORK, false, false, 1u << 20, CAP), FL_TXP_HOLD);
}

static void the_write_after_msg_more_ones_goes_now(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(FL_TXF_MORE, false, false, 64, CAP), FL_TXP_SEND);
}

static void a_write_with_msg_more_after_msg_more_is_held(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(FL_TXF_MORE, false, true, 64, CAP), FL_TXP_HOLD);
}

static void a_through_buffer_never_holds_even_under_cork(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(FL_TXF_THROUGH | FL_TXF_CORK, false, true, 64, CAP),
			 FL_TXP_SEND);
}

static void a_shared_socket_is_not_coalesced_on_our_initiative(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(0, true, false, 64, CAP), FL_TXP_SEND);
}

static void a_shared_socket_still_holds_what_msg_more_asks(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(0, true, true, 64, CAP), FL_TXP_HOLD);
}

static void a_write_of_32_kib_goes_now(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(0, false, false, 64u << 10, CAP), FL_TXP_SEND);
	assert_int_equal(fl_txp_hold(0, false, false, (64u << 10) - 1, CAP), FL_TXP_IF_BUSY);
}

static void a_write_of_half_a_small_buffer_goes_now(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_hold(0, false, false, 8192, 16384), FL_TXP_SEND);
	assert_int_equal(fl_txp_hold(0, false, false, 8191, 16384), FL_TXP_IF_BUSY);
}

static void large_means_32_kib_or_half_the_buffer(void **state)
{
	(void)state;
	assert_true(fl_txp_large(65536, CAP));
	assert_false(fl_txp_large(32768, CAP));
	assert_false(fl_txp_large(32767, CAP));
	assert_true(fl_txp_large(8192, 16384));
	assert_false(fl_txp_large(8191, 16384));
}

static void ending_a_msg_more_run_is_counted_as_an_option_flush(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_flush_why(FL_TXF_MORE, false, false, false, 64, CAP),
			 FL_USTAT_FLUSH_OPTION);
}

static void a_flush_with_nothing_forbidding_a_hold_is_the_reader_being_idle(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_flush_why(0, false, false, false, 64, CAP),
			 FL_USTAT_FLUSH_READER_IDLE);
}

static void a_flush_for_a_large_write_is_a_write_flush(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_flush_why(0, false, false, false, 64u << 10, CAP),
			 FL_USTAT_FLUSH_WRITE);
}

static void a_flush_under_nodelay_is_a_write_flush(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_flush_why(FL_TXF_NODELAY, false, false, false, 64, CAP),
			 FL_USTAT_FLUSH_WRITE);
}

static void a_flush_of_a_shared_socket_is_a_write_flush(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_flush_why(0, true, false, false, 64, CAP), FL_USTAT_FLUSH_WRITE);
}

static void a_full_buffer_that_would_hold_is_a_write_flush(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_flush_why(0, false, false, true, 64, CAP), FL_USTAT_FLUSH_WRITE);
}

static void the_reader_is_looked_at_when_a_batch_starts(void **state)
{
	(void)state;
	assert_true(fl_txp_peer_stale(0, 0, false));
	assert_true(fl_txp_peer_stale(0, 5000, false));
}

static void the_reader_is_looked_at_again_after_4_kib(void **state)
{
	(void)state;
	assert_false(fl_txp_peer_stale(100 + 4095, 100, false));
	assert_true(fl_txp_peer_stale(100 + 4096, 100, false));
}

static void the_reader_is_looked_at_on_every_write_once_a_waiting_thread_asked(void **state)
{
	(void)state;
	assert_true(fl_txp_peer_stale(100 + 64, 100, true));
	assert_true(fl_txp_peer_stale(100, 100, true));
}

static void buffered_bytes_wait_flush_usec(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_delay_ns(0, 200), 200000);
	assert_int_equal(fl_txp_delay_ns(FL_TXF_NODELAY, 200), 200000);
}

static void corked_bytes_wait_up_to_200_ms(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_delay_ns(FL_TXF_CORK, 200), 200000000);
	assert_int_equal(fl_txp_delay_ns(FL_TXF_MORE, 200), 200000000);
}

static void a_batch_a_wait_or_the_timer_sent_with_one_write_is_lone(void **state)
{
	(void)state;
	assert_true(fl_txp_lone(FL_USTAT_FLUSH_WAIT, 1));
	assert_true(fl_txp_lone(FL_USTAT_FLUSH_TIMER, 1));
}

static void a_batch_of_two_writes_or_one_the_application_ended_is_not_lone(void **state)
{
	(void)state;
	assert_false(fl_txp_lone(FL_USTAT_FLUSH_WAIT, 2));
	assert_false(fl_txp_lone(FL_USTAT_FLUSH_OPTION, 1)); /* uncork, MSG_MORE's end */
	assert_false(fl_txp_lone(FL_USTAT_FLUSH_CLOSE, 1));
	assert_false(fl_txp_lone(FL_USTAT_FLUSH_FULL, 1));
	assert_false(fl_txp_lone(FL_USTAT_FLUSH_WAIT, 0)); /* the rest of a partial send */
}

static void lone_batches_in_a_row_count_up_to_the_limit(void **state)
{
	uint32_t lone = 0;
	int i;

	(void)state;
	for (i = 0; i < FL_LONE_BATCHES + 3; i++)
		lone = fl_txp_lone_streak(lone, FL_USTAT_FLUSH_WAIT, 1);
	assert_int_equal(lone, FL_LONE_BATCHES);
	assert_int_equal(fl_txp_lone_streak(lone, FL_USTAT_FLUSH_WAIT, 0), FL_LONE_BATCHES);
	assert_int_equal(fl_txp_lone_streak(3, FL_USTAT_FLUSH_OPTION, 1), 3);
}

static void a_batch_of_two_writes_ends_the_streak(void **state)
{
	(void)state;
	assert_int_equal(fl_txp_lone_streak(FL_LONE_BATCHES, FL_USTAT_FLUSH_WAIT, 2), 0);
	assert_int_equal(fl_txp_lone_streak(5, FL_USTAT_FLUSH_READER_IDLE, 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_small_write_is_held_only_if_the_reader_is_busy),
		cmocka_unit_test(msg_more_holds_a_write_whatever_its_reader_does),
		cmocka_unit_test(tcp_cork_holds_even_a_large_write),
		cmocka_unit_test(the_write_after_msg_more_ones_goes_now),
		cmocka_unit_test(a_write_with_msg_more_after_msg_more_is_held),
		cmocka_unit_test(a_through_buffer_never_holds_even_under_cork),
		cmocka_unit_test(a_shared_socket_is_not_coalesced_on_our_initiative),
		cmocka_unit_test(a_shared_socket_still_holds_what_msg_more_asks),
		cmocka_unit_test(a_write_of_32_kib_goes_now),
		cmocka_unit_test(a_write_of_half_a_small_buffer_goes_now),
		cmocka_unit_test(large_means_32_kib_or_half_the_buffer),
		cmocka_unit_test(ending_a_msg_more_run_is_counted_as_an_option_flush),
		cmocka_unit_test(a_flush_with_nothing_forbidding_a_hold_is_the_reader_being_idle),
		cmocka_unit_test(a_flush_for_a_large_write_is_a_write_flush),
		cmocka_unit_test(a_flush_under_nodelay_is_a_write_flush),
		cmocka_unit_test(a_flush_of_a_shared_socket_is_a_write_flush),
		cmocka_unit_test(a_full_buffer_that_would_hold_is_a_write_flush),
		cmocka_unit_test(the_reader_is_looked_at_when_a_batch_starts),
		cmocka_unit_test(the_reader_is_looked_at_again_after_4_kib),
		cmocka_unit_test(the_reader_is_looked_at_on_every_write_once_a_waiting_thread_asked),
		cmocka_unit_test(buffered_bytes_wait_flush_usec),
		cmocka_unit_test(corked_bytes_wait_up_to_200_ms),
		cmocka_unit_test(a_batch_a_wait_or_the_timer_sent_with_one_write_is_lone),
		cmocka_unit_test(a_batch_of_two_writes_or_one_the_application_ended_is_not_lone),
		cmocka_unit_test(lone_batches_in_a_row_count_up_to_the_limit),
		cmocka_unit_test(a_batch_of_two_writes_ends_the_streak),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
