// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* flusher.c - the thread that bounds how long a byte stays buffered. */
#include "flusher.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "tx.h"

#define FL_IDLE_NS (20 * 1000000LL)

/*
 * Owned by this file, guarded by fl_flusher_lock: whether the thread exists
 * in this process (a forked child has none until it buffers) and whether it
 * is in its deep sleep on fl_flusher_cv. fl_flusher_sleeping is also read
 * without the lock by writers (seq_cst, paired with the pending counter).
 */
static pthread_mutex_t fl_flusher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fl_flusher_cv;
static int fl_flusher_started;
static int fl_flusher_sleeping;

static int64_t fl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *fl_flusher_main(void *arg)
{
	int64_t delay = (int64_t)fl_config()->flush_usec * 1000, idle_since = 0, now, next, nap;

	(void)arg;
	/* IMPORTANT: naps of tens of microseconds (the TCP_NODELAY catch-up
	 * poll, tx.c) would be stretched by the default 50 us timer slack. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	for (;;) {
		now = fl_now_ns();
		next = fl_tx_flush_expired(now);
		if (next < 0 && !fl_tx_any_pending()) {
			if (!idle_since)
				idle_since = now;
			if (now - idle_since > FL_IDLE_NS) {
				/* Deep sleep until a writer buffers again. */
				pthread_mutex_lock(&fl_flusher_lock);
				__atomic_store_n(&fl_flusher_sleeping, 1, __ATOMIC_SEQ_CST);
				while (!fl_tx_any_pending())
					pthread_cond_wait(&fl_flusher_cv, &fl_flusher_lock);
				__atomic_store_n(&fl_flusher_sleeping, 0, __ATOMIC_SEQ_CST);
				pthread_mutex_unlock(&fl_flusher_lock);
				idle_since = 0;
				continue;
			}
			nap = delay;
		} else {
			idle_since = 0;
			nap = next >= 0 && next < delay ? next : delay;
		}
		if (nap > 0) {
			struct timespec ts = { nap / 1000000000LL, nap % 1000000000LL };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void fl_flusher_start_locked(void)
{
	pthread_condattr_t ca;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fl_flusher_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* IMPORTANT: the default stack size, not a small one: glibc carves the
	 * program's static TLS out of the thread's stack, and a program with
	 * large __thread data would make a small stack fail. Untouched stack
	 * pages cost nothing. */
	/* The application's signals are not ours to receive. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&th, &attr, fl_flusher_main, NULL) == 0)
		fl_flusher_started = 1;
	else
		fl_log(FL_LOG_WARN, "cannot start the flusher thread: buffered bytes wait for the "
		       "next write, read or close");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

void fl_flusher_kick(int64_t deadline_ns)
{
	(void)deadline_ns; /* the thread wakes every delay while anything waits */
	if (__atomic_load_n(&fl_flusher_started, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&fl_flusher_sleeping, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&fl_flusher_lock);
	if (!fl_flusher_started)
		fl_flusher_start_locked();
	else if (fl_flusher_sleeping)
		pthread_cond_signal(&fl_flusher_cv);
	pthread_mutex_unlock(&fl_flusher_lock);
}

/* fork(): the thread does not exist in the child; it starts again there
 * when the child first buffers. */
static void fl_flusher_fork_prepare(void)
{
	pthread_mutex_lock(&fl_flusher_lock);
}

static void fl_flusher_fork_parent(void)
{
	pthread_mutex_unlock(&fl_flusher_lock);
}

static void fl_flusher_fork_child(void)
{
	fl_flusher_started = 0;
	fl_flusher_sleeping = 0;
	pthread_mutex_unlock(&fl_flusher_lock);
}

__attribute__((constructor)) static void fl_flusher_init(void)
{
	pthread_atfork(fl_flusher_fork_prepare, fl_flusher_fork_parent, fl_flusher_fork_child);
}
