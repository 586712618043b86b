// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the held receive bytes and the emulated SO_PEEK_OFF
 * (preload/rx/rxq.c), with a fake kernel queue behind libc_ioctl/libc_recv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "../../preload/socket/rxq.c"
#include "../../preload/base/fault.c" /* the test-only lock hold rxq.c calls */

/* The fake redirected queue fl_rxq_fill_locked reads, and the last
 * SO_OOBINLINE it set. */
static char kernel_q[64];
static size_t kernel_len;
static int oobinline = -1;

int libc_ioctl(int fd, unsigned long req, void *arg)
{
	(void)fd;
	assert_int_equal(req, FIONREAD);
	*(int *)arg = (int)kernel_len;
	return 0;
}

ssize_t libc_recv(int fd, void *buf, size_t len, int flags)
{
	size_t n = len < kernel_len ? len : kernel_len;

	(void)fd;
	assert_true(flags & MSG_DONTWAIT);
	memcpy(buf, kernel_q, n);
	memmove(kernel_q, kernel_q + n, kernel_len - n);
	kernel_len -= n;
	return (ssize_t)n;
}

int libc_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	(void)fd;
	(void)len;
	assert_int_equal(level, SOL_SOCKET);
	assert_int_equal(name, SO_OOBINLINE);
	oobinline = *(const int *)val;
	return 0;
}

void fl_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

/* Each test has a state of its own (static: what it holds stays
 * reachable). Finding a socket's state is the socket object's
 * (test/unit/sock.c). */
static struct fl_rxq states[32];

static struct fl_rxq *fresh(unsigned int i)
{
	struct fl_rxq *q = &states[i];

	fl_rxq_init(q);
	return q;
}

static void held(struct fl_rxq *q, const char *s)
{
	pthread_mutex_lock(&q->lock);
	assert_true(fl_rxq_append_locked(q, s, strlen(s)));
	pthread_mutex_unlock(&q->lock);
}

/* A put that takes at most its limit. */
static char put_out[64];
static size_t put_limit, put_calls;

static ssize_t put(void *ctx, const void *p, size_t n)
{
	size_t k = n < put_limit ? n : put_limit;

	(void)ctx;
	put_calls++;
	memcpy(put_out, p, k);
	return (ssize_t)k;
}

static void a_new_state_holds_nothing_and_has_no_peek_offset(void **state)
{
	struct fl_rxq *q = fresh(2);

	(void)state;
	assert_int_equal(fl_rxq_held(q), 0);
	assert_int_equal(fl_rxq_peek_off(q), -1);
	assert_false(fl_rxq_active(q));
}

static void reset_drops_the_held_bytes_and_the_peek_offset(void **state)
{
	struct fl_rxq *q = fresh(5);

	(void)state;
	held(q, "old");
	fl_rxq_set_peek_off(q, 2);
	q->inline_forced = true;
	fl_rxq_reset(q);
	assert_int_equal(fl_rxq_held(q), 0);
	assert_int_equal(fl_rxq_peek_off(q), -1);
	assert_null(q->buf);
	assert_int_equal(q->off, 0);
	assert_false(q->inline_forced);
	assert_false(fl_rxq_active(q));
}

static void a_reset_state_holds_new_bytes_again(void **state)
{
	struct fl_rxq *q = fresh(4);

	(void)state;
	held(q, "old");
	fl_rxq_reset(q);
	held(q, "new");
	assert_int_equal(fl_rxq_held(q), 3);
	assert_memory_equal(q->buf + q->off, "new", 3);
}

static void appended_bytes_are_held_in_order(void **state)
{
	struct fl_rxq *q = fresh(6);

	(void)state;
	held(q, "abc");
	held(q, "de");
	assert_int_equal(fl_rxq_held(q), 5);
	assert_memory_equal(q->buf + q->off, "abcde", 5);
	assert_true(fl_rxq_active(q));
}

static void dropping_some_bytes_keeps_the_rest(void **state)
{
	struct fl_rxq *q = fresh(7);

	(void)state;
	held(q, "abcde");
	assert_false(fl_rxq_drop_locked(q, 2));
	assert_int_equal(fl_rxq_held(q), 3);
	assert_memory_equal(q->buf + q->off, "cde", 3);
}

static void dropping_every_byte_empties_the_state(void **state)
{
	struct fl_rxq *q = fresh(8);

	(void)state;
	held(q, "abc");
	assert_true(fl_rxq_drop_locked(q, 3));
	assert_int_equal(fl_rxq_held(q), 0);
	assert_null(q->buf);
	assert_false(fl_rxq_active(q));
}

static void a_peek_offset_alone_makes_reads_go_through_the_state(void **state)
{
	struct fl_rxq *q = fresh(9);

	(void)state;
	fl_rxq_set_peek_off(q, 0);
	assert_true(fl_rxq_active(q));
	fl_rxq_set_peek_off(q, -5);
	assert_int_equal(fl_rxq_peek_off(q), -1);
	assert_false(fl_rxq_active(q));
}

static void a_read_moves_the_peek_offset_back(void **state)
{
	struct fl_rxq *q = fresh(10);

	(void)state;
	fl_rxq_set_peek_off(q, 10);
	fl_rxq_read_done(q, 4);
	assert_int_equal(fl_rxq_peek_off(q), 6);
}

static void a_read_past_the_peek_offset_leaves_it_at_zero(void **state)
{
	struct fl_rxq *q = fresh(11);

	(void)state;
	fl_rxq_set_peek_off(q, 3);
	fl_rxq_read_done(q, 10);
	assert_int_equal(fl_rxq_peek_off(q), 0);
}

static void a_read_leaves_a_disabled_peek_offset_disabled(void **state)
{
	struct fl_rxq *q = fresh(12);

	(void)state;
	fl_rxq_read_done(q, 10);
	assert_int_equal(fl_rxq_peek_off(q), -1);
}

static void give_hands_the_oldest_bytes_and_drops_what_was_taken(void **state)
{
	struct fl_rxq *q = fresh(13);

	(void)state;
	held(q, "abcdef");
	fl_rxq_set_peek_off(q, 5);
	put_limit = 4;
	assert_int_equal(fl_rxq_give(q, 100, put, NULL), 4);
	assert_memory_equal(put_out, "abcd", 4);
	assert_int_equal(fl_rxq_held(q), 2);
	assert_int_equal(fl_rxq_peek_off(q), 1);
}

static void give_offers_at_most_len_bytes(void **state)
{
	struct fl_rxq *q = fresh(14);

	(void)state;
	held(q, "abcdef");
	put_limit = 100;
	assert_int_equal(fl_rxq_give(q, 2, put, NULL), 2);
	assert_int_equal(fl_rxq_held(q), 4);
}

static void give_with_nothing_held_does_not_call_put(void **state)
{
	struct fl_rxq *q = fresh(15);

	(void)state;
	put_calls = 0;
	assert_int_equal(fl_rxq_give(q, 10, put, NULL), 0);
	assert_int_equal(put_calls, 0);
}

static void fill_moves_the_redirected_queue_behind_the_held_bytes(void **state)
{
	struct fl_rxq *q = fresh(16);

	(void)state;
	held(q, "ab");
	memcpy(kernel_q, "cdef", 4);
	kernel_len = 4;
	pthread_mutex_lock(&q->lock);
	assert_int_equal(fl_rxq_fill_locked(3, q, "test"), 0);
	pthread_mutex_unlock(&q->lock);
	assert_int_equal(kernel_len, 0);
	assert_int_equal(fl_rxq_held(q), 6);
	assert_memory_equal(q->buf + q->off, "abcdef", 6);
}

static void the_applications_oobinline_is_taken_only_while_the_shim_forces_it(void **state)
{
	struct fl_rxq *q = fresh(17);

	(void)state;
	assert_false(fl_rxq_set_oobinline(q, 1));
	q->inline_forced = true;
	assert_true(fl_rxq_set_oobinline(q, 0));
	assert_true(fl_rxq_inline_forced(q));
	assert_true(fl_rxq_set_oobinline(q, 1));
	assert_false(fl_rxq_inline_forced(q));
}

static void unforcing_turns_oobinline_off_for_the_kernel(void **state)
{
	struct fl_rxq *q = fresh(18);

	(void)state;
	q->inline_forced = true;
	oobinline = -1;
	pthread_mutex_lock(&q->lock);
	fl_rxq_unforce_locked(3, q);
	pthread_mutex_unlock(&q->lock);
	assert_int_equal(oobinline, 0);
	assert_false(q->inline_forced);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_new_state_holds_nothing_and_has_no_peek_offset),
		cmocka_unit_test(reset_drops_the_held_bytes_and_the_peek_offset),
		cmocka_unit_test(a_reset_state_holds_new_bytes_again),
		cmocka_unit_test(appended_bytes_are_held_in_order),
		cmocka_unit_test(dropping_some_bytes_keeps_the_rest),
		cmocka_unit_test(dropping_every_byte_empties_the_state),
		cmocka_unit_test(a_peek_offset_alone_makes_reads_go_through_the_state),
		cmocka_unit_test(a_read_moves_the_peek_offset_back),
		cmocka_unit_test(a_read_past_the_peek_offset_leaves_it_at_zero),
		cmocka_unit_test(a_read_leaves_a_disabled_peek_offset_disabled),
		cmocka_unit_test(give_hands_the_oldest_bytes_and_drops_what_was_taken),
		cmocka_unit_test(give_offers_at_most_len_bytes),
		cmocka_unit_test(give_with_nothing_held_does_not_call_put),
		cmocka_unit_test(fill_moves_the_redirected_queue_behind_the_held_bytes),
		cmocka_unit_test(the_applications_oobinline_is_taken_only_while_the_shim_forces_it),
		cmocka_unit_test(unforcing_turns_oobinline_off_for_the_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
