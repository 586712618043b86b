// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* spin.c - looking for work a little while before sleeping (spin.h). */
#include "spin.h"

#include <sched.h>
#include <time.h>

#include "common/clock.h"
#include "config.h"

#define FL_SPIN_MISSES 8 /* looks in a row that found nothing ... */
#define FL_SPIN_SKIP 64  /* ... make the thread sleep at once for this many waits */
#define FL_SPIN_CPUS_EVERY_NS 1000000000LL /* affinity looked at again after a second */

/* Each thread's own (initial-exec TLS: no allocation, no lock): waits to
 * sleep at once before the next look, and the misses in a row. */
static __thread unsigned fl_spin_skip __attribute__((tls_model("initial-exec")));
static __thread unsigned fl_spin_misses __attribute__((tls_model("initial-exec")));

/* The process's: whether it may run on two CPUs or more, and when that was
 * last asked (the coarse clock: a load in the vDSO, rx_retry.c says why
 * that matters). Any thread may refresh them (relaxed atomics; a race only
 * asks twice). */
static int fl_spin_cpus_ok;
static int64_t fl_spin_cpus_at = -FL_SPIN_CPUS_EVERY_NS;

static bool fl_spin_cpus(void)
{
	int64_t now = fl_clock_ns(CLOCK_MONOTONIC_COARSE);

	if (now - __atomic_load_n(&fl_spin_cpus_at, __ATOMIC_RELAXED) >= FL_SPIN_CPUS_EVERY_NS) {
		cpu_set_t set;
		int ok = !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) >= 2;

		__atomic_store_n(&fl_spin_cpus_ok, ok, __ATOMIC_RELAXED);
		__atomic_store_n(&fl_spin_cpus_at, now, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&fl_spin_cpus_ok, __ATOMIC_RELAXED);
}

bool fl_spin_may(void)
{
	if (!fl_config()->spin_usec)
		return false;
	if (fl_spin_skip) {
		fl_spin_skip--;
		return false;
	}
	return fl_spin_cpus();
}

int64_t fl_spin_until(int64_t t0)
{
	return t0 + (int64_t)fl_config()->spin_usec * 1000;
}

void fl_spin_missed(void)
{
	if (++fl_spin_misses < FL_SPIN_MISSES)
		return;
	fl_spin_misses = 0;
	fl_spin_skip = FL_SPIN_SKIP;
}

void fl_spin_paid(void)
{
	fl_spin_misses = 0;
}
