// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* signals.c - knowing whether a signal handler ran during a call. */
#include "signals.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "libc.h"

#define FL_NSIG 65

/*
 * Owned by this file. fl_handlers[sig] is the application's handler and
 * flags for each signal whose kernel handler is our trampoline; written
 * under fl_sig_lock (sigaction), read by the trampoline with atomic loads.
 * The counters are per thread (initial-exec TLS: no allocation on first
 * use, safe in a handler).
 */
struct fl_handler {
	void *fn;
	int flags;
};
static struct fl_handler fl_handlers[FL_NSIG];
static pthread_mutex_t fl_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread unsigned fl_runs __attribute__((tls_model("initial-exec")));
static __thread int fl_last_restart __attribute__((tls_model("initial-exec")));

unsigned fl_sig_runs(void)
{
	return __atomic_load_n(&fl_runs, __ATOMIC_ACQUIRE);
}

bool fl_sig_last_restarts(void)
{
	return fl_last_restart;
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
}

static bool fl_is_function(const struct sigaction *act)
{
	return !(act->sa_flags & SA_SIGINFO) ?
		       act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN :
		       act->sa_sigaction != NULL;
}

int fl_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction mine, prev;
	struct fl_handler was;
	int r;

	if (sig <= 0 || sig >= FL_NSIG)
		return libc_sigaction(sig, act, old);
	pthread_mutex_lock(&fl_sig_lock);
	was = fl_handlers[sig];
	if (act && fl_is_function(act)) {
		/* The application's handler runs from our trampoline, with the
		 * flags and mask it asked for. */
		mine = *act;
		mine.sa_flags |= SA_SIGINFO;
		mine.sa_sigaction = fl_trampoline;
		__atomic_store_n(&fl_handlers[sig].flags, act->sa_flags, __ATOMIC_RELAXED);
		__atomic_store_n(&fl_handlers[sig].fn,
				 (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction :
								(void *)act->sa_handler,
				 __ATOMIC_RELEASE);
		r = libc_sigaction(sig, &mine, &prev);
	} else {
		r = libc_sigaction(sig, act, &prev);
	}
	if (r) {
		fl_handlers[sig] = was;
	} else if (old) {
		*old = prev;
		/* Report the application's handler, not our trampoline. */
		if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction == fl_trampoline) {
			old->sa_flags = was.flags;
			if (was.flags & SA_SIGINFO)
				old->sa_sigaction = (void (*)(int, siginfo_t *, void *))was.fn;
			else
				old->sa_handler = (sighandler_t)was.fn;
		}
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
