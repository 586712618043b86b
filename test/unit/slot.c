// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: slot allocation, generations and the consumed counter, on a
 * private array standing in for the mmap-ed fl_slots map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../preload/kernel/slot.c"

/* Stand-ins for the shim pieces slot.c uses. */
static struct fl_maps fake_maps;
static struct fl_ustats fake_ustats;

const struct fl_maps *fl_maps_if_open(void)
{
	return fake_maps.slots ? &fake_maps : NULL;
}

void fl_ustat_add(enum fl_ustat idx, uint64_t v)
{
	fake_ustats.c[idx] += v;
}

void fl_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

static int setup(void **state)
{
	(void)state;
	fake_maps.slots = calloc(FL_SLOTS_MAX, sizeof(struct fl_slot));
	fake_maps.nslots = FL_SLOTS_MAX;
	memset(&fake_ustats, 0, sizeof(fake_ustats));
	return fake_maps.slots ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(fake_maps.slots);
	fake_maps.slots = NULL;
	return 0;
}

static void alloc_claims_a_free_slot_and_initialises_it(void **state)
{
	uint64_t gen = 0;
	int idx = fl_slot_alloc(42, 1000, 99, 0, &gen);
	struct fl_slot *s;

	(void)state;
	assert_true(idx >= 0);
	s = fl_slot_at((uint32_t)idx);
	assert_int_equal(s->owner, 42);
	assert_int_equal(s->budget, 1000);
	assert_int_equal(s->last_write_seq, 100); /* ISN + 1: after the SYN */
	assert_int_equal(s->consumed & FL_CONSUMED_MASK, 0);
	assert_int_equal(s->consumed >> FL_CONSUMED_BITS, gen);
	assert_int_equal(s->dir, FL_DIR_TCP);
}

static void consume_counts_bytes_of_the_current_generation(void **state)
{
	uint64_t gen;
	int idx = fl_slot_alloc(7, 1000, 0, 0, &gen);

	(void)state;
	fl_slot_consume((uint32_t)idx, gen, 10);
	fl_slot_consume((uint32_t)idx, gen, 5);
	assert_int_equal(fl_slot_at((uint32_t)idx)->consumed & FL_CONSUMED_MASK, 15);
}

static void a_late_consume_for_a_previous_owner_is_refused(void **state)
{
	uint64_t gen1, gen2;
	int idx = fl_slot_alloc(7, 1000, 0, 0, &gen1), idx2;
	struct fl_slot *s = fl_slot_at((uint32_t)idx);

	(void)state;
	fl_slot_consume((uint32_t)idx, gen1, 10);
	/* The socket dies (sockops frees the slot) and another one gets it. */
	s->owner = 0;
	do
		idx2 = fl_slot_alloc(8, 1000, 0, 0, &gen2);
	while (idx2 != idx && idx2 >= 0);
	assert_int_equal(idx2, idx);
	assert_int_not_equal(gen1, gen2);
	assert_int_equal(s->consumed & FL_CONSUMED_MASK, 0);
	fl_slot_consume((uint32_t)idx, gen1, 1000); /* a read of the old socket, finishing late */
	assert_int_equal(s->consumed & FL_CONSUMED_MASK, 0);
	fl_slot_consume((uint32_t)idx, gen2, 3);
	assert_int_equal(s->consumed & FL_CONSUMED_MASK, 3);
}

static void alloc_fails_when_every_slot_is_taken(void **state)
{
	uint64_t gen;
	uint32_t i;

	(void)state;
	for (i = 0; i < FL_SLOTS_MAX; i++)
		fake_maps.slots[i].owner = 1000 + i;
	assert_int_equal(fl_slot_alloc(5, 1, 0, 0, &gen), -1);
}

static void counter_overflow_blinds_the_slot(void **state)
{
	uint64_t gen;
	int idx = fl_slot_alloc(9, 1000, 0, 0, &gen);
	struct fl_slot *s = fl_slot_at((uint32_t)idx);

	(void)state;
	s->consumed = (gen << FL_CONSUMED_BITS) | (FL_CONSUMED_MASK - 1);
	fl_slot_consume((uint32_t)idx, gen, 2);
	assert_true(s->flags & FL_SLOT_BLIND);
	assert_int_equal(s->consumed >> FL_CONSUMED_BITS, gen); /* the generation survives */
	assert_int_equal(fake_ustats.c[FL_USTAT_BLIND], 1);
}

static void peer_unread_is_sent_minus_what_the_peer_read(void **state)
{
	uint64_t ga, gb;
	int a = fl_slot_alloc(1, 1000, 0, 0, &ga), b = fl_slot_alloc(2, 5000, 0, 0, &gb);
	struct fl_slot *sa = fl_slot_at((uint32_t)a);
	uint32_t budget;
	bool redirecting;

	(void)state;
	/* What the verdict program would have written for a -> b. */
	sa->peer_slot = (uint32_t)b + 1;
	sa->peer_owner = 2;
	sa->tcp_sent = 100;
	sa->redirected = 900;
	sa->dir = FL_DIR_REDIRECT;
	fl_slot_consume((uint32_t)b, gb, 250);
	assert_int_equal(fl_slot_peer_unread((uint32_t)a, &budget, &redirecting), 750);
	assert_int_equal(budget, 5000);
	assert_true(redirecting);
	/* A peer slot that changed hands means: unknown. */
	fl_slot_at((uint32_t)b)->owner = 3;
	assert_int_equal(fl_slot_peer_unread((uint32_t)a, &budget, &redirecting), 0);
	assert_false(redirecting);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(alloc_claims_a_free_slot_and_initialises_it, setup, teardown),
		cmocka_unit_test_setup_teardown(consume_counts_bytes_of_the_current_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(a_late_consume_for_a_previous_owner_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(alloc_fails_when_every_slot_is_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(counter_overflow_blinds_the_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_unread_is_sent_minus_what_the_peer_read, setup, teardown),
	};

	return cmocka_run_group_tests_name("slot", tests, NULL, NULL);
}
