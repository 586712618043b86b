// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the per-socket object (preload/socket/sock.c): its identity and
 * generation check, its references, the pool that recycles it, finding
 * it again for another fd, and the receive state it owns (with
 * preload/socket/rxq.c behind it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../../preload/socket/sock.c"
#include "../../preload/socket/rxq.c"
#include "../../preload/base/fault.c" /* the test-only lock hold rxq.c calls */

/* rxq.c's kernel calls and log: never reached here. */
int libc_ioctl(int fd, unsigned long req, void *arg)
{
	(void)fd;
	(void)req;
	(void)arg;
	fail();
	return -1;
}

ssize_t libc_recv(int fd, void *buf, size_t len, int flags)
{
	(void)fd;
	(void)buf;
	(void)len;
	(void)flags;
	fail();
	return -1;
}

int libc_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	(void)fd;
	(void)level;
	(void)name;
	(void)val;
	(void)len;
	fail();
	return -1;
}

void fl_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

/* A send buffer's owner that counts what a release asks of it. */
static int closings, closing_fd, retires;
static uint64_t gen_at_retire;

static void count_closing(struct fl_sock *s, int fd)
{
	(void)s;
	closings++;
	closing_fd = fd;
}

static void count_retire(struct fl_sock *s)
{
	retires++;
	gen_at_retire = __atomic_load_n(&s->gen, __ATOMIC_RELAXED);
}

static const struct fl_sock_ops counting = { .closing = count_closing, .retire = count_retire };

static int reset(void **state)
{
	(void)state;
	closings = retires = 0;
	closing_fd = -1;
	gen_at_retire = 0;
	return 0;
}

static struct fl_sock *made(uint32_t slot, uint64_t gen, uint64_t cookie)
{
	struct fl_sock *s = fl_sock_new(slot, gen, cookie, &counting);

	assert_non_null(s);
	return s;
}

static void held(struct fl_rxq *q, const char *p)
{
	pthread_mutex_lock(&q->lock);
	assert_true(fl_rxq_append_locked(q, p, strlen(p)));
	pthread_mutex_unlock(&q->lock);
}

static void a_new_object_has_the_identity_it_was_given(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	assert_int_equal(s->slot, 7);
	assert_int_equal(s->gen, 3);
	assert_int_equal(s->cookie, 99);
	assert_ptr_equal(s->ops, &counting);
	fl_sock_release(s, 1);
}

static void a_new_object_has_one_reference_and_is_not_shared(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	assert_int_equal(s->refs, 1);
	assert_int_equal(s->shared, 0);
	fl_sock_release(s, 1);
}

static void the_generation_check_accepts_the_recorded_generation_only(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	assert_true(fl_sock_is(s, 3));
	assert_false(fl_sock_is(s, 2));
	assert_false(fl_sock_is(s, 4));
	fl_sock_release(s, 1);
}

static void the_last_release_makes_the_generation_gone(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	fl_sock_release(s, 1);
	assert_int_equal(s->gen, FL_SOCK_GONE);
	assert_false(fl_sock_is(s, 3));
}

static void a_release_that_is_not_the_last_keeps_the_generation(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	fl_sock_hold(s);
	fl_sock_release(s, 1);
	assert_true(fl_sock_is(s, 3));
	assert_int_equal(s->refs, 1);
	fl_sock_release(s, 2);
}

static void every_release_asks_the_owner_to_flush_through_its_fd(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	fl_sock_hold(s);
	fl_sock_release(s, 5);
	assert_int_equal(closings, 1);
	assert_int_equal(closing_fd, 5);
	fl_sock_release(s, 6);
	assert_int_equal(closings, 2);
	assert_int_equal(closing_fd, 6);
}

static void only_the_last_release_retires_the_buffer(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	fl_sock_hold(s);
	fl_sock_release(s, 5);
	assert_int_equal(retires, 0);
	fl_sock_release(s, 6);
	assert_int_equal(retires, 1);
}

static void the_buffer_is_retired_after_the_generation_is_gone(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	fl_sock_release(s, 5);
	assert_int_equal(gen_at_retire, FL_SOCK_GONE);
}

static void a_released_object_is_given_to_the_next_socket(void **state)
{
	struct fl_sock *s = made(7, 3, 99), *t;

	(void)state;
	fl_sock_release(s, 1);
	t = made(8, 5, 100);
	assert_ptr_equal(t, s);
	assert_int_equal(t->slot, 8);
	assert_int_equal(t->gen, 5);
	assert_int_equal(t->cookie, 100);
	assert_int_equal(t->refs, 1);
	fl_sock_release(t, 1);
}

static void an_object_still_held_is_not_given_again(void **state)
{
	struct fl_sock *s = made(7, 3, 99), *t;

	(void)state;
	fl_sock_hold(s);
	fl_sock_release(s, 1);
	t = made(8, 5, 100);
	assert_ptr_not_equal(t, s);
	fl_sock_release(t, 1);
	fl_sock_release(s, 2);
}

static void a_slot_given_to_a_new_socket_gets_an_object_of_its_own(void **state)
{
	struct fl_sock *old = made(4, 1, 10), *new = made(4, 2, 11);

	(void)state;
	assert_ptr_not_equal(new, old);
	assert_true(fl_sock_is(old, 1));
	assert_true(fl_sock_is(new, 2));
	held(&old->rxq, "old");
	assert_null(fl_sock_rxq(new, 2, false));
	assert_int_equal(fl_rxq_held(&old->rxq), 3);
	assert_int_equal(fl_rxq_held(&new->rxq), 0);
	fl_sock_release(new, 2);
	fl_sock_release(old, 1);
}

static void a_lone_reference_is_the_last_copy(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	assert_true(fl_sock_last_copy(s));
	fl_sock_release(s, 1);
}

static void a_second_reference_is_not_the_last_copy(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	fl_sock_hold(s);
	assert_false(fl_sock_last_copy(s));
	fl_sock_release(s, 1);
	fl_sock_release(s, 2);
}

static void a_shared_socket_is_not_the_last_copy(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	s->shared = 1;
	assert_false(fl_sock_last_copy(s));
	fl_sock_release(s, 1);
}

static void the_receive_state_is_none_until_asked_to_make_it(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	assert_null(fl_sock_rxq(s, 3, false));
	assert_ptr_equal(fl_sock_rxq(s, 3, true), &s->rxq);
	assert_ptr_equal(fl_sock_rxq(s, 3, false), &s->rxq);
	fl_sock_release(s, 1);
}

static void a_new_receive_state_holds_nothing_and_has_no_peek_offset(void **state)
{
	struct fl_sock *s = made(7, 3, 99);
	struct fl_rxq *q = fl_sock_rxq(s, 3, true);

	(void)state;
	assert_int_equal(fl_rxq_held(q), 0);
	assert_int_equal(fl_rxq_peek_off(q), -1);
	assert_false(fl_rxq_active(q));
	fl_sock_release(s, 1);
}

static void another_generation_has_no_receive_state_even_when_asked(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	assert_null(fl_sock_rxq(s, 4, true));
	assert_null(fl_sock_rxq(s, 4, false));
	assert_null(fl_sock_rxq(s, 3, false)); /* and asking made none */
	fl_sock_release(s, 1);
}

static void no_object_has_no_receive_state(void **state)
{
	(void)state;
	assert_null(fl_sock_rxq(NULL, 3, true));
}

static void a_recycled_object_starts_with_no_receive_state(void **state)
{
	struct fl_sock *s = made(7, 3, 99), *t;
	struct fl_rxq *q;

	(void)state;
	held(fl_sock_rxq(s, 3, true), "old");
	fl_rxq_set_peek_off(&s->rxq, 2);
	fl_sock_release(s, 1);
	t = made(7, 4, 100);
	assert_ptr_equal(t, s);
	assert_null(fl_sock_rxq(t, 4, false));
	q = fl_sock_rxq(t, 4, true);
	assert_int_equal(fl_rxq_held(q), 0);
	assert_int_equal(fl_rxq_peek_off(q), -1);
	assert_null(q->buf);
	fl_sock_release(t, 1);
}

static void a_published_live_object_is_found_with_one_more_reference(void **state)
{
	struct fl_sock *s = made(9, 3, 99);

	(void)state;
	fl_sock_publish(s);
	assert_ptr_equal(fl_sock_find(9, 3, 99), s);
	assert_int_equal(s->refs, 2);
	fl_sock_release(s, 1);
	fl_sock_release(s, 2);
}

static void an_object_not_published_is_not_found(void **state)
{
	struct fl_sock *s = made(10, 3, 99);

	(void)state;
	assert_null(fl_sock_find(10, 3, 99));
	assert_int_equal(s->refs, 1);
	fl_sock_release(s, 1);
}

static void another_generation_or_cookie_is_not_found(void **state)
{
	struct fl_sock *s = made(11, 3, 99);

	(void)state;
	fl_sock_publish(s);
	assert_null(fl_sock_find(11, 4, 99));
	assert_null(fl_sock_find(11, 3, 98));
	assert_int_equal(s->refs, 1);
	fl_sock_release(s, 1);
}

static void a_slot_reference_of_another_domain_is_not_found(void **state)
{
	struct fl_sock *s = made(12, 3, 99);

	(void)state;
	fl_sock_publish(s);
	assert_null(fl_sock_find(12 | (1u << FL_SLOT_IDX_BITS), 3, 99));
	fl_sock_release(s, 1);
}

static void a_released_object_is_not_found(void **state)
{
	struct fl_sock *s = made(13, 3, 99);

	(void)state;
	fl_sock_publish(s);
	fl_sock_release(s, 1);
	assert_null(fl_sock_find(13, 3, 99));
	assert_int_equal(s->refs, 0);
}

static void a_recycled_object_is_not_found_before_it_is_published_again(void **state)
{
	struct fl_sock *s = made(14, 3, 99), *t;

	(void)state;
	fl_sock_publish(s);
	fl_sock_release(s, 1);
	t = made(14, 4, 100);
	assert_ptr_equal(t, s);
	assert_null(fl_sock_find(14, 4, 100));
	fl_sock_publish(t);
	assert_ptr_equal(fl_sock_find(14, 4, 100), t);
	fl_sock_release(t, 1);
	fl_sock_release(t, 2);
}

static void the_old_socket_of_a_reused_slot_keeps_its_object(void **state)
{
	struct fl_sock *old = made(15, 1, 10), *new = made(15, 2, 11);

	(void)state;
	fl_sock_publish(old);
	fl_sock_publish(new);
	assert_ptr_equal(fl_sock_find(15, 2, 11), new);
	assert_null(fl_sock_find(15, 1, 10)); /* a hint only: a fresh object then */
	assert_true(fl_sock_is(old, 1));
	assert_int_equal(old->refs, 1);
	fl_sock_release(new, 1);
	fl_sock_release(new, 2);
	fl_sock_release(old, 1);
}

static void found(struct fl_sock *s, void *arg)
{
	struct fl_sock **want = arg;

	if (s == want[0])
		want[1] = s;
}

static void every_object_made_is_visited(void **state)
{
	struct fl_sock *s = made(7, 3, 99), *t = made(8, 4, 100);
	struct fl_sock *want_s[2] = { s, NULL }, *want_t[2] = { t, NULL };

	(void)state;
	fl_sock_for_each(found, want_s);
	fl_sock_for_each(found, want_t);
	assert_ptr_equal(want_s[1], s);
	assert_ptr_equal(want_t[1], t);
	fl_sock_release(t, 1);
	fl_sock_release(s, 1);
}

static void a_released_object_is_still_visited(void **state)
{
	struct fl_sock *s = made(7, 3, 99);
	struct fl_sock *want[2] = { s, NULL };

	(void)state;
	fl_sock_release(s, 1);
	fl_sock_for_each(found, want);
	assert_ptr_equal(want[1], s);
}

static void fork_marks_every_socket_shared(void **state)
{
	struct fl_sock *s = made(7, 3, 99);

	(void)state;
	fl_sock_fork_prepare();
	fl_sock_fork_release();
	assert_int_equal(s->shared, 1);
	assert_false(fl_sock_last_copy(s));
	fl_sock_release(s, 1);
}

static void a_new_object_is_not_shared_after_a_fork(void **state)
{
	struct fl_sock *s = made(7, 3, 99), *t;

	(void)state;
	fl_sock_release(s, 1);
	fl_sock_fork_prepare();
	fl_sock_fork_release();
	t = made(7, 4, 100);
	assert_ptr_equal(t, s);
	assert_int_equal(t->shared, 0);
	fl_sock_release(t, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(a_new_object_has_the_identity_it_was_given, reset),
		cmocka_unit_test_setup(a_new_object_has_one_reference_and_is_not_shared, reset),
		cmocka_unit_test_setup(the_generation_check_accepts_the_recorded_generation_only, reset),
		cmocka_unit_test_setup(the_last_release_makes_the_generation_gone, reset),
		cmocka_unit_test_setup(a_release_that_is_not_the_last_keeps_the_generation, reset),
		cmocka_unit_test_setup(every_release_asks_the_owner_to_flush_through_its_fd, reset),
		cmocka_unit_test_setup(only_the_last_release_retires_the_buffer, reset),
		cmocka_unit_test_setup(the_buffer_is_retired_after_the_generation_is_gone, reset),
		cmocka_unit_test_setup(a_released_object_is_given_to_the_next_socket, reset),
		cmocka_unit_test_setup(an_object_still_held_is_not_given_again, reset),
		cmocka_unit_test_setup(a_slot_given_to_a_new_socket_gets_an_object_of_its_own, reset),
		cmocka_unit_test_setup(a_lone_reference_is_the_last_copy, reset),
		cmocka_unit_test_setup(a_second_reference_is_not_the_last_copy, reset),
		cmocka_unit_test_setup(a_shared_socket_is_not_the_last_copy, reset),
		cmocka_unit_test_setup(the_receive_state_is_none_until_asked_to_make_it, reset),
		cmocka_unit_test_setup(a_new_receive_state_holds_nothing_and_has_no_peek_offset, reset),
		cmocka_unit_test_setup(another_generation_has_no_receive_state_even_when_asked, reset),
		cmocka_unit_test_setup(no_object_has_no_receive_state, reset),
		cmocka_unit_test_setup(a_recycled_object_starts_with_no_receive_state, reset),
		cmocka_unit_test_setup(a_published_live_object_is_found_with_one_more_reference, reset),
		cmocka_unit_test_setup(an_object_not_published_is_not_found, reset),
		cmocka_unit_test_setup(another_generation_or_cookie_is_not_found, reset),
		cmocka_unit_test_setup(a_slot_reference_of_another_domain_is_not_found, reset),
		cmocka_unit_test_setup(a_released_object_is_not_found, reset),
		cmocka_unit_test_setup(a_recycled_object_is_not_found_before_it_is_published_again, reset),
		cmocka_unit_test_setup(the_old_socket_of_a_reused_slot_keeps_its_object, reset),
		cmocka_unit_test_setup(every_object_made_is_visited, reset),
		cmocka_unit_test_setup(a_released_object_is_still_visited, reset),
		cmocka_unit_test_setup(fork_marks_every_socket_shared, reset),
		cmocka_unit_test_setup(a_new_object_is_not_shared_after_a_fork, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
