// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* flusher.c - the thread that bounds how long a byte stays buffered. */
#include "flusher.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/clock.h"
#include "base/config.h"
#include "base/init_hooks.h"
#include "base/log.h"

#define FL_NEVER INT64_MAX

/*
 * Owned by this file. fl_flusher_lock guards fl_flusher_started,
 * fl_flusher_work (set before the thread starts, the same function every
 * time) and the condition variable's waits. The thread sleeps until the earliest
 * deadline of the batches it knows of (fl_flusher_wake_ns, FL_NEVER when
 * it knows of none); a writer whose new batch is due earlier signals it.
 *
 * IMPORTANT: it does not wake every flush delay. A web server's responses
 * are batches that the server itself sends a few microseconds later (its
 * uncork); a thread waking every 200 us to find nothing due cost nginx a
 * context switch on its own CPU four times per request (strace: 10737
 * naps in 3 s against 2714 requests). Writers publish their deadline in
 * fl_flusher_min_ns before they look at fl_flusher_wake_ns, and the thread
 * takes fl_flusher_min_ns before it scans and looks at it again after
 * setting fl_flusher_wake_ns (seq_cst both ways): a batch listed during a
 * scan is either seen by the thread or signals it.
 */
static pthread_mutex_t fl_flusher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fl_flusher_cv;
static int fl_flusher_started;
static fl_flusher_work_fn fl_flusher_work;
static int64_t fl_flusher_wake_ns = FL_NEVER;
static int64_t fl_flusher_min_ns = FL_NEVER;

static int64_t fl_min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static void *fl_flusher_main(void *arg)
{
	int64_t delay = (int64_t)fl_config()->flush_usec * 1000, now, next, target;
	fl_flusher_work_fn work = fl_flusher_work; /* set before pthread_create */
	bool left;

	(void)arg;
	/* IMPORTANT: naps of tens of microseconds (the TCP_NODELAY catch-up
	 * poll, tx.c) would be stretched by the default 50 us timer slack. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	pthread_mutex_lock(&fl_flusher_lock);
	for (;;) {
		/* Awake: writers need not signal while it scans. */
		__atomic_store_n(&fl_flusher_wake_ns, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&fl_flusher_min_ns, FL_NEVER, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&fl_flusher_lock);
		now = fl_clock_ns(CLOCK_MONOTONIC);
		next = work(now, &left);
		pthread_mutex_lock(&fl_flusher_lock);
		if (next >= 0)
			target = now + next;
		else if (left)
			target = now + delay; /* a writer held its lock: look again */
		else
			target = FL_NEVER;
		__atomic_store_n(&fl_flusher_wake_ns, target, __ATOMIC_SEQ_CST);
		target = fl_min64(target, __atomic_load_n(&fl_flusher_min_ns, __ATOMIC_SEQ_CST));
		__atomic_store_n(&fl_flusher_wake_ns, target, __ATOMIC_SEQ_CST);
		if (target <= fl_clock_ns(CLOCK_MONOTONIC))
			continue;
		if (target == FL_NEVER) {
			pthread_cond_wait(&fl_flusher_cv, &fl_flusher_lock);
		} else {
			struct timespec ts = { target / 1000000000LL, target % 1000000000LL };

			pthread_cond_timedwait(&fl_flusher_cv, &fl_flusher_lock, &ts);
		}
	}
	return NULL;
}

static void fl_flusher_start_locked(fl_flusher_work_fn work)
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
	fl_flusher_work = work;
	if (pthread_create(&th, &attr, fl_flusher_main, NULL) == 0)
		fl_flusher_started = 1;
	else
		fl_log(FL_LOG_WARN, "cannot start the flusher thread: buffered bytes wait for the "
		       "next write, read or close");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

void fl_flusher_kick(int64_t deadline_ns, fl_flusher_work_fn work)
{
	int64_t cur = __atomic_load_n(&fl_flusher_min_ns, __ATOMIC_SEQ_CST);

	while (deadline_ns < cur &&
	       !__atomic_compare_exchange_n(&fl_flusher_min_ns, &cur, deadline_ns, true,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	if (__atomic_load_n(&fl_flusher_started, __ATOMIC_ACQUIRE) &&
	    deadline_ns >= __atomic_load_n(&fl_flusher_wake_ns, __ATOMIC_SEQ_CST))
		return; /* it wakes by then anyway (or is scanning: 0) */
	pthread_mutex_lock(&fl_flusher_lock);
	if (!fl_flusher_started)
		fl_flusher_start_locked(work);
	else if (deadline_ns < fl_flusher_wake_ns)
		pthread_cond_signal(&fl_flusher_cv);
	pthread_mutex_unlock(&fl_flusher_lock);
}

/* fork() (init.c): the thread does not exist in the child; it starts again
 * there when the child first buffers. */
void fl_flusher_fork_prepare(void)
{
	pthread_mutex_lock(&fl_flusher_lock);
}

void fl_flusher_fork_parent(void)
{
	pthread_mutex_unlock(&fl_flusher_lock);
}

void fl_flusher_fork_child(void)
{
	fl_flusher_started = 0;
	fl_flusher_wake_ns = FL_NEVER;
	fl_flusher_min_ns = FL_NEVER;
	pthread_mutex_unlock(&fl_flusher_lock);
}
