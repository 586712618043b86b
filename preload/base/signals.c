// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* signals.c - knowing whether a signal handler ran during a call. */
#include "signals.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "fault.h"
#include "libc.h"

#define FL_NSIG 65

/*
 * Owned by this file. fl_handlers[sig] is the application's handler and
 * flags for each signal whose kernel handler is our trampoline or a front
 * (fn NULL: the default action); written under fl_sig_lock (sigaction,
 * fl_sig_set_front), read by the handlers with atomic loads. fl_fronts[sig]
 * is the shim's own handler that runs first for sig (the crash handler),
 * set once under fl_sig_lock and never cleared; fl_prior[sig] says that
 * fl_handlers[sig] is what was installed before the front (not set by the
 * application through us since), also under fl_sig_lock.
 * The counters are per thread (initial-exec TLS: no allocation on first
 * use, safe in a handler).
 */
struct fl_handler {
	void *fn;
	int flags;
};
static struct fl_handler fl_handlers[FL_NSIG];
static fl_sig_front_fn fl_fronts[FL_NSIG];
static bool fl_prior[FL_NSIG];
static pthread_mutex_t fl_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread unsigned fl_runs __attribute__((tls_model("initial-exec")));
static __thread int fl_last_restart __attribute__((tls_model("initial-exec")));

/* fork(): a thread in the application's sigaction() holds fl_sig_lock for
 * a moment; a child of a fork() at that moment would wait for it forever at
 * its own first sigaction() (a child about to exec resets its handlers).
 * A leaf: its holder takes no other lock, so it is taken last (init.c). */
void fl_sig_fork_prepare(void)
{
	pthread_mutex_lock(&fl_sig_lock);
}

void fl_sig_fork_release(void)
{
	pthread_mutex_unlock(&fl_sig_lock);
}

unsigned fl_sig_runs(void)
{
	return __atomic_load_n(&fl_runs, __ATOMIC_ACQUIRE);
}

bool fl_sig_last_restarts(void)
{
	return fl_last_restart;
}

static bool fl_is_function(const struct sigaction *act)
{
	return !(act->sa_flags & SA_SIGINFO) ?
		       act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN :
		       act->sa_sigaction != NULL;
}

static void fl_trampoline(int sig, siginfo_t *si, void *uc)
{
	void *fn = __atomic_load_n(&fl_handlers[sig].fn, __ATOMIC_ACQUIRE);
	int flags = __atomic_load_n(&fl_handlers[sig].flags, __ATOMIC_RELAXED);

	fl_last_restart = !!(flags & SA_RESTART);
	__atomic_fetch_add(&fl_runs, 1, __ATOMIC_RELEASE);
	if (!fn)
		return;
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))fn)(sig, si, uc);
	else
		((void (*)(int))fn)(sig);
	/* IMPORTANT: not a tail call, so that a backtrace from inside the
	 * application's handler shows that it ran from the shim. */
	__asm__ volatile("" ::: "memory");
}

enum fl_sig_next fl_sig_next(int sig)
{
	if (sig <= 0 || sig >= FL_NSIG || !__atomic_load_n(&fl_handlers[sig].fn, __ATOMIC_ACQUIRE))
		return FL_SIG_NEXT_DEFAULT;
	return __atomic_load_n(&fl_prior[sig], __ATOMIC_RELAXED) ? FL_SIG_NEXT_PRIOR : FL_SIG_NEXT_APP;
}

bool fl_sig_chain(int sig, siginfo_t *si, void *uc)
{
	int flags;

	if (sig <= 0 || sig >= FL_NSIG || !__atomic_load_n(&fl_handlers[sig].fn, __ATOMIC_ACQUIRE))
		return false;
	flags = __atomic_load_n(&fl_handlers[sig].flags, __ATOMIC_RELAXED);
	/* SA_RESETHAND, which the kernel no longer sees (the front is what it
	 * calls): the handler runs once, then the default action. */
	if (flags & SA_RESETHAND) {
		void *fn = __atomic_exchange_n(&fl_handlers[sig].fn, NULL, __ATOMIC_ACQ_REL);

		if (!fn)
			return false;
		__atomic_fetch_add(&fl_runs, 1, __ATOMIC_RELEASE);
		if (flags & SA_SIGINFO)
			((void (*)(int, siginfo_t *, void *))fn)(sig, si, uc);
		else
			((void (*)(int))fn)(sig);
		return true;
	}
	fl_trampoline(sig, si, uc);
	return true;
}

/* The kernel's action for a front: the front, with the mask and flags the
 * application (or whoever was before) asked for, minus SA_RESETHAND (the
 * front must stay), plus SA_ONSTACK (an overflowed stack can still be
 * reported where the application set up an alternate one). */
static void fl_front_action(struct sigaction *k, fl_sig_front_fn front, const sigset_t *mask,
			    int flags)
{
	memset(k, 0, sizeof(*k));
	k->sa_sigaction = front;
	k->sa_flags = (flags & ~SA_RESETHAND) | SA_SIGINFO | SA_ONSTACK;
	if (mask)
		k->sa_mask = *mask;
	else
		sigemptyset(&k->sa_mask);
}

int fl_sig_set_front(int sig, fl_sig_front_fn front)
{
	struct sigaction prev, k;
	int r;

	if (sig <= 0 || sig >= FL_NSIG)
		return -1;
	pthread_mutex_lock(&fl_sig_lock);
	r = libc_sigaction(sig, NULL, &prev);
	if (!r) {
		bool fn = fl_is_function(&prev);
		bool ours = (prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction == fl_trampoline;

		/* A handler installed before the front (a preloaded sanitizer's,
		 * say: ASan's comes through our sigaction, so it may already be in
		 * fl_handlers) becomes the one the front chains to. */
		if (fn && !ours) {
			fl_handlers[sig].flags = prev.sa_flags;
			__atomic_store_n(&fl_handlers[sig].fn,
					 (prev.sa_flags & SA_SIGINFO) ? (void *)prev.sa_sigaction :
									(void *)prev.sa_handler,
					 __ATOMIC_RELEASE);
		}
		__atomic_store_n(&fl_prior[sig], fn, __ATOMIC_RELAXED);
		__atomic_store_n(&fl_fronts[sig], front, __ATOMIC_RELEASE);
		/* An ignored signal stays ignored: nothing to report or chain. */
		if (fn || prev.sa_handler == SIG_DFL) {
			fl_front_action(&k, front, &prev.sa_mask,
					!fn ? 0 : ours ? fl_handlers[sig].flags : prev.sa_flags);
			r = libc_sigaction(sig, &k, NULL);
		}
	}
	pthread_mutex_unlock(&fl_sig_lock);
	return r;
}

void fl_sig_default(int sig)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	libc_sigaction(sig, &dfl, NULL);
}

int fl_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction mine, prev;
	struct fl_handler was;
	fl_sig_front_fn front;
	bool was_prior;
	int r;

	if (sig <= 0 || sig >= FL_NSIG)
		return libc_sigaction(sig, act, old);
	pthread_mutex_lock(&fl_sig_lock);
	was = fl_handlers[sig];
	was_prior = fl_prior[sig];
	front = fl_fronts[sig];
	if (act && (fl_is_function(act) || (front && act->sa_handler == SIG_DFL))) {
		/* The application's handler runs from our trampoline (or after
		 * the front), with the flags and mask it asked for. SIG_DFL under
		 * a front: the front stays and then takes the default action. */
		bool fn = fl_is_function(act);

		if (front) {
			fl_front_action(&mine, front, &act->sa_mask, fn ? act->sa_flags : 0);
		} else {
			mine = *act;
			mine.sa_flags |= SA_SIGINFO;
			mine.sa_sigaction = fl_trampoline;
		}
		__atomic_store_n(&fl_handlers[sig].flags, fn ? act->sa_flags : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fl_handlers[sig].fn,
				 !fn ? NULL :
				 (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction :
								(void *)act->sa_handler,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&fl_prior[sig], false, __ATOMIC_RELAXED);
		r = libc_sigaction(sig, &mine, &prev);
	} else {
		if (act && front) {
			/* SIG_IGN: the kernel ignores it; nothing left to chain. */
			__atomic_store_n(&fl_handlers[sig].fn, NULL, __ATOMIC_RELEASE);
			__atomic_store_n(&fl_prior[sig], false, __ATOMIC_RELAXED);
		}
		r = libc_sigaction(sig, act, &prev);
	}
	if (r) {
		fl_handlers[sig] = was;
		__atomic_store_n(&fl_prior[sig], was_prior, __ATOMIC_RELAXED);
	} else if (old) {
		*old = prev;
		/* Report the application's handler, not our trampoline or front. */
		if ((prev.sa_flags & SA_SIGINFO) &&
		    (prev.sa_sigaction == fl_trampoline || (front && prev.sa_sigaction == front))) {
			old->sa_flags = was.flags;
			if (was.fn && (was.flags & SA_SIGINFO))
				old->sa_sigaction = (void (*)(int, siginfo_t *, void *))was.fn;
			else
				old->sa_handler = was.fn ? (sighandler_t)was.fn : SIG_DFL;
		}
	}
	if (act) {
		int saved = errno;

		fl_fault_lock_hold(); /* tests only (fault.h) */
		errno = saved;
	}
	pthread_mutex_unlock(&fl_sig_lock);
	return r;
}

/* glibc's signal(): BSD semantics, SA_RESTART and the signal not masked
 * beyond itself. Implemented on fl_sigaction so the handler is counted. */
sighandler_t fl_signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	if (fl_sigaction(sig, &act, &old))
		return SIG_ERR;
	return old.sa_handler; /* one union with sa_sigaction in glibc */
}
