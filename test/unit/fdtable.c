// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the fd table (preload/socket/fdtable.c): lookups, copies (dup),
 * forgetting (close) and the retry backoff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../preload/socket/fdtable.c"

/* Stand-ins for the socket object fdtable.c holds and releases (sock.h):
 * one object, whose identity the fd table reads (fl_fd_sock). */
static struct fl_sock fake_obj;
static struct fl_sock *fake_sock = &fake_obj;
static int sock_holds, sock_releases, sock_released_fd;

void fl_sock_hold(struct fl_sock *s)
{
	assert_ptr_equal(s, fake_sock);
	sock_holds++;
}

void fl_sock_release(struct fl_sock *s, int fd)
{
	assert_ptr_equal(s, fake_sock);
	sock_releases++;
	sock_released_fd = fd;
}

static int reset(void **state)
{
	(void)state;
	fl_fd_clear_range(0, FL_FD_MAX - 1);
	sock_holds = sock_releases = 0;
	sock_released_fd = -1;
	return 0;
}

/* fd enrolled in slot/gen with the fake socket object. */
static struct fl_fd *enrolled(int fd, uint32_t slot, uint64_t gen)
{
	struct fl_fd *e = fl_fd_get(fd);

	fake_obj.slot = slot;
	fake_obj.gen = gen;
	e->sock = fake_sock;
	__atomic_store_n(&e->state, FL_FD_ENROLLED, __ATOMIC_RELEASE);
	return e;
}

static void an_fd_never_recorded_near_has_no_entry(void **state)
{
	(void)state;
	assert_null(fl_fd_peek(500000));
	assert_int_equal(fl_fd_state(fl_fd_peek(500000)), FL_FD_UNKNOWN);
}

static void negative_and_too_large_fds_have_no_entry(void **state)
{
	(void)state;
	assert_null(fl_fd_get(-1));
	assert_null(fl_fd_get(FL_FD_MAX));
	assert_null(fl_fd_peek(FL_FD_MAX));
}

static void get_makes_the_entry_that_peek_then_finds(void **state)
{
	struct fl_fd *e = fl_fd_get(7);

	(void)state;
	assert_non_null(e);
	assert_ptr_equal(fl_fd_peek(7), e);
	assert_int_equal(fl_fd_state(e), FL_FD_UNKNOWN);
}

static void a_neighbour_in_the_same_chunk_has_a_zeroed_entry(void **state)
{
	(void)state;
	fl_fd_get(10);
	assert_non_null(fl_fd_peek(11));
	assert_int_equal(fl_fd_peek(11)->flags, 0);
}

static void a_copy_of_an_enrolled_fd_names_the_same_socket_and_holds_its_object(void **state)
{
	struct fl_sock_id id;
	struct fl_fd *d;

	(void)state;
	enrolled(3, 42, 9);
	fl_fd_copy(3, 4);
	d = fl_fd_peek(4);
	assert_int_equal(fl_fd_state(d), FL_FD_ENROLLED);
	assert_ptr_equal(fl_fd_sock(d, &id), fake_sock);
	assert_int_equal(id.slot, 42);
	assert_int_equal(id.gen, 9);
	assert_ptr_equal(d->sock, fake_sock);
	assert_int_equal(sock_holds, 1);
}

static void closing_an_enrolled_fd_releases_its_object_once(void **state)
{
	(void)state;
	enrolled(3, 42, 9);
	fl_fd_clear(3);
	assert_int_equal(sock_releases, 1);
	assert_int_equal(sock_released_fd, 3);
	assert_int_equal(fl_fd_state(fl_fd_peek(3)), FL_FD_UNKNOWN);
	assert_null(fl_fd_peek(3)->sock);
	fl_fd_clear(3);
	assert_int_equal(sock_releases, 1);
}

/* The identity is the object's alone: what the fd table reads through its
 * pointer follows the object, and an fd that let go names none. */
static void the_identity_read_through_an_fd_is_its_objects(void **state)
{
	struct fl_sock_id id;
	struct fl_fd *e = enrolled(3, 42, 9);

	(void)state;
	assert_ptr_equal(fl_fd_sock(e, &id), fake_sock);
	assert_int_equal(id.slot, 42);
	assert_int_equal(id.gen, 9);
	fake_obj.gen = FL_SOCK_GONE; /* released meanwhile (sock.c) */
	assert_ptr_equal(fl_fd_sock(e, &id), fake_sock);
	assert_true(id.gen == FL_SOCK_GONE);
	fl_fd_forget_socket(3);
	assert_null(fl_fd_sock(e, &id));
	assert_true(id.gen == FL_SOCK_GONE);
	assert_null(fl_fd_sock(NULL, &id));
}

static void closing_an_fd_forgets_its_option_flags(void **state)
{
	struct fl_fd *e = fl_fd_get(5);

	(void)state;
	e->flags = FL_FDF_RCVBUF_SET | FL_FDF_ZEROCOPY;
	fl_fd_clear(5);
	assert_int_equal(e->flags, 0);
}

static void forgetting_the_socket_keeps_the_option_flags(void **state)
{
	struct fl_fd *e = enrolled(5, 1, 1);

	(void)state;
	e->flags = FL_FDF_RCVBUF_SET;
	fl_fd_forget_socket(5);
	assert_int_equal(fl_fd_state(e), FL_FD_UNKNOWN);
	assert_int_equal(e->flags, FL_FDF_RCVBUF_SET);
	assert_int_equal(sock_releases, 1);
}

static void a_copy_of_an_untracked_fd_clears_the_target(void **state)
{
	(void)state;
	enrolled(6, 2, 2);
	fl_fd_copy(100, 6); /* 100: nothing recorded, no flags */
	assert_int_equal(fl_fd_state(fl_fd_peek(6)), FL_FD_UNKNOWN);
	assert_int_equal(sock_releases, 1);
}

static void a_copy_of_an_untracked_fd_with_flags_carries_them(void **state)
{
	(void)state;
	fl_fd_get(8)->flags = FL_FDF_THROUGH;
	fl_fd_copy(8, 9);
	assert_int_equal(fl_fd_peek(9)->flags, FL_FDF_THROUGH);
	assert_int_equal(fl_fd_state(fl_fd_peek(9)), FL_FD_UNKNOWN);
	assert_null(fl_fd_peek(9)->sock);
}

static void a_copy_of_a_pending_fd_marks_both_as_copies(void **state)
{
	struct fl_fd *e = fl_fd_get(12);

	(void)state;
	e->pend_read = 100 | (1ULL << 63);
	e->pend_moved = 300;
	__atomic_store_n(&e->state, FL_FD_PENDING, __ATOMIC_RELEASE);
	fl_fd_copy(12, 13);
	assert_true(fl_fd_peek(12)->flags & FL_FDF_DUP);
	assert_true(fl_fd_peek(13)->flags & FL_FDF_DUP);
	assert_int_equal(fl_fd_peek(13)->pend_read, 100); /* without the enrolling bit */
	assert_int_equal(fl_fd_peek(13)->pend_moved, 300);
	assert_null(fl_fd_peek(13)->sock);
	assert_int_equal(sock_holds, 0);
}

static void closing_a_pending_copy_makes_the_other_copy_check_at_once(void **state)
{
	struct fl_fd *e = fl_fd_get(12);

	(void)state;
	__atomic_store_n(&e->state, FL_FD_PENDING, __ATOMIC_RELEASE);
	fl_fd_copy(12, 13);
	e->retry_gap_us = 5000;
	fl_fd_clear(13);
	assert_int_equal(e->retry_gap_us, 0);
}

static void clear_range_forgets_every_fd_in_it_and_no_other(void **state)
{
	(void)state;
	enrolled(20, 1, 1);
	enrolled(21, 1, 1);
	enrolled(22, 1, 1);
	fl_fd_clear_range(20, 21);
	assert_int_equal(fl_fd_state(fl_fd_peek(20)), FL_FD_UNKNOWN);
	assert_int_equal(fl_fd_state(fl_fd_peek(21)), FL_FD_UNKNOWN);
	assert_int_equal(fl_fd_state(fl_fd_peek(22)), FL_FD_ENROLLED);
	assert_int_equal(sock_releases, 2);
}

static void next_enrolled_skips_other_states_and_empty_chunks(void **state)
{
	(void)state;
	fl_fd_get(30)->state = FL_FD_PENDING;
	enrolled(5000, 1, 1);
	assert_int_equal(fl_fd_next_enrolled(0), 5000);
	assert_int_equal(fl_fd_next_enrolled(5001), -1);
}

static void the_first_three_checks_are_free(void **state)
{
	struct fl_fd *e = fl_fd_get(40);

	(void)state;
	fl_fd_retry_reset(e);
	assert_true(fl_fd_retry_due(e));
	assert_true(fl_fd_retry_due(e));
	assert_true(fl_fd_retry_due(e));
	assert_int_equal(e->retry_gap_us, FL_RETRY_FREE);
}

/* The next check's time, relative to the clock read just before the call
 * that set it (a range: the clock moves meanwhile). */
static void assert_next_check_in(const struct fl_fd *e, uint32_t before, uint32_t after,
				 uint32_t us)
{
	assert_true(e->retry_at_us - before >= us);
	assert_true(e->retry_at_us - after <= us);
}

static void after_the_free_checks_the_next_waits_50_us(void **state)
{
	struct fl_fd *e = fl_fd_get(40);
	uint32_t before, after;

	(void)state;
	e->retry_gap_us = FL_RETRY_FREE;
	e->retry_at_us = fl_fd_now_us() - 1;
	before = fl_fd_now_us();
	assert_true(fl_fd_retry_due(e));
	after = fl_fd_now_us();
	assert_int_equal(e->retry_gap_us, 50);
	assert_next_check_in(e, before, after, 50);
}

static void a_check_before_its_time_is_not_due(void **state)
{
	struct fl_fd *e = fl_fd_get(40);

	(void)state;
	e->retry_gap_us = 50;
	e->retry_at_us = fl_fd_now_us() + FL_RETRY_MAX_US; /* 10 ms ahead */
	assert_false(fl_fd_retry_due(e));
	assert_int_equal(e->retry_gap_us, 50);
}

static void each_later_check_doubles_the_wait_up_to_10_ms(void **state)
{
	struct fl_fd *e = fl_fd_get(40);

	(void)state;
	e->retry_gap_us = 50;
	e->retry_at_us = fl_fd_now_us() - 1;
	assert_true(fl_fd_retry_due(e));
	assert_int_equal(e->retry_gap_us, 100);
	e->retry_gap_us = 5000;
	e->retry_at_us = fl_fd_now_us() - 1;
	assert_true(fl_fd_retry_due(e));
	assert_int_equal(e->retry_gap_us, 10000);
	e->retry_at_us = fl_fd_now_us() - 1;
	assert_true(fl_fd_retry_due(e));
	assert_int_equal(e->retry_gap_us, 10000);
}

static void a_check_further_ahead_than_10_ms_is_due_at_once(void **state)
{
	struct fl_fd *e = fl_fd_get(40);

	(void)state;
	e->retry_gap_us = 50;
	e->retry_at_us = fl_fd_now_us() + FL_RETRY_MAX_US + 1000; /* a wrapped clock */
	assert_true(fl_fd_retry_due(e));
}

static void retry_soon_restarts_the_backoff_after_us(void **state)
{
	struct fl_fd *e = fl_fd_get(40);
	uint32_t before, after;

	(void)state;

	e->retry_gap_us = 10000;
	before = fl_fd_now_us();
	fl_fd_retry_soon(e, 5000);
	after = fl_fd_now_us();
	assert_int_equal(e->retry_gap_us, FL_RETRY_FREE);
	assert_next_check_in(e, before, after, 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(an_fd_never_recorded_near_has_no_entry, reset),
		cmocka_unit_test_setup(negative_and_too_large_fds_have_no_entry, reset),
		cmocka_unit_test_setup(get_makes_the_entry_that_peek_then_finds, reset),
		cmocka_unit_test_setup(a_neighbour_in_the_same_chunk_has_a_zeroed_entry, reset),
		cmocka_unit_test_setup(a_copy_of_an_enrolled_fd_names_the_same_socket_and_holds_its_object, reset),
		cmocka_unit_test_setup(closing_an_enrolled_fd_releases_its_object_once, reset),
		cmocka_unit_test_setup(the_identity_read_through_an_fd_is_its_objects, reset),
		cmocka_unit_test_setup(closing_an_fd_forgets_its_option_flags, reset),
		cmocka_unit_test_setup(forgetting_the_socket_keeps_the_option_flags, reset),
		cmocka_unit_test_setup(a_copy_of_an_untracked_fd_clears_the_target, reset),
		cmocka_unit_test_setup(a_copy_of_an_untracked_fd_with_flags_carries_them, reset),
		cmocka_unit_test_setup(a_copy_of_a_pending_fd_marks_both_as_copies, reset),
		cmocka_unit_test_setup(closing_a_pending_copy_makes_the_other_copy_check_at_once, reset),
		cmocka_unit_test_setup(clear_range_forgets_every_fd_in_it_and_no_other, reset),
		cmocka_unit_test_setup(next_enrolled_skips_other_states_and_empty_chunks, reset),
		cmocka_unit_test_setup(the_first_three_checks_are_free, reset),
		cmocka_unit_test_setup(after_the_free_checks_the_next_waits_50_us, reset),
		cmocka_unit_test_setup(a_check_before_its_time_is_not_due, reset),
		cmocka_unit_test_setup(each_later_check_doubles_the_wait_up_to_10_ms, reset),
		cmocka_unit_test_setup(a_check_further_ahead_than_10_ms_is_due_at_once, reset),
		cmocka_unit_test_setup(retry_soon_restarts_the_backoff_after_us, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
