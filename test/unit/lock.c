// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the send buffer's lock (preload/base/lock.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <time.h>

#include "../../preload/base/lock.c"

static void a_free_lock_is_taken_once_and_given_back(void **state)
{
	struct fl_lock l;

	(void)state;
	fl_lock_init(&l);
	assert_int_equal(fl_lock_try(&l), 0);
	assert_int_equal(fl_lock_try(&l), EBUSY);
	fl_unlock(&l);
	assert_int_equal(l.v, 0);
	fl_lock(&l);
	assert_int_equal(fl_lock_try(&l), EBUSY);
	fl_unlock(&l);
	assert_int_equal(fl_lock_try(&l), 0);
	fl_unlock(&l);
}

struct fl_counting {
	struct fl_lock l;
	uint64_t n; /* guarded by l, and deliberately not atomic */
	int rounds;
};

static void *fl_count_under_lock(void *arg)
{
	struct fl_counting *c = arg;
	int i;

	for (i = 0; i < c->rounds; i++) {
		fl_lock(&c->l);
		c->n++;
		fl_unlock(&c->l);
	}
	return NULL;
}

#define THREADS 4
#define ROUNDS 200000

static void four_threads_counting_under_the_lock_lose_no_increment(void **state)
{
	struct fl_counting c = { .rounds = ROUNDS };
	pthread_t th[THREADS];
	int i;

	(void)state;
	fl_lock_init(&c.l);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, fl_count_under_lock, &c), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(c.n, (uint64_t)THREADS * ROUNDS);
	assert_int_equal(c.l.v, 0);
}

struct fl_waiter {
	struct fl_lock l;
	int got; /* atomic */
};

static void *fl_wait_for_lock(void *arg)
{
	struct fl_waiter *w = arg;

	fl_lock(&w->l);
	__atomic_store_n(&w->got, 1, __ATOMIC_SEQ_CST);
	fl_unlock(&w->l);
	return NULL;
}

static void a_waiter_sleeps_until_the_holder_gives_the_lock_back(void **state)
{
	struct fl_waiter w = { .got = 0 };
	struct timespec ms = { 0, 1000000 };
	pthread_t th;
	int i;

	(void)state;
	fl_lock_init(&w.l);
	fl_lock(&w.l);
	assert_int_equal(pthread_create(&th, NULL, fl_wait_for_lock, &w), 0);
	/* The waiter marks the lock contended before it sleeps. */
	for (i = 0; i < 2000 && __atomic_load_n(&w.l.v, __ATOMIC_SEQ_CST) != 2; i++)
		nanosleep(&ms, NULL);
	assert_int_equal(__atomic_load_n(&w.l.v, __ATOMIC_SEQ_CST), 2);
	nanosleep(&ms, NULL);
	assert_int_equal(__atomic_load_n(&w.got, __ATOMIC_SEQ_CST), 0);
	fl_unlock(&w.l); /* finds 2: wakes it */
	pthread_join(th, NULL);
	assert_int_equal(w.got, 1);
	assert_int_equal(w.l.v, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_free_lock_is_taken_once_and_given_back),
		cmocka_unit_test(four_threads_counting_under_the_lock_lose_no_increment),
		cmocka_unit_test(a_waiter_sleeps_until_the_holder_gives_the_lock_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
