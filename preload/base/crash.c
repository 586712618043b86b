// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* crash.c - a backtrace in the log on a fatal signal, then the chain. */
#include "crash.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "backtrace.h"
#include "config.h"
#include "init_hooks.h"
#include "log.h"
#include "sbuf.h"
#include "signals.h"

/* More crashes than this in one process (a handler that returns into the
 * same fault, a runtime that uses SIGSEGV on purpose) are chained without
 * a backtrace: the log must not fill up with the same trace. */
#define FL_CRASH_MAX_TRACES 8

static const int fl_crash_sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };

/*
 * Owned by this file, lock-free (they are used in the signal handler).
 * fl_crash_owner is the thread id writing a backtrace now (0: none), so
 * that two threads crashing at once do not interleave their frames and a
 * fault inside the tracing itself does not recurse. fl_crash_traces counts
 * the traces written (atomic add).
 */
static long fl_crash_owner;
static int fl_crash_traces;

static const char *fl_crash_signame(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGABRT: return "SIGABRT";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	default: return "signal";
	}
}

static void fl_crash_frame(void *arg, int n, const struct fl_bt_frame *f)
{
	char line[600];
	struct fl_sbuf b;

	(void)arg;
	fl_sb_init(&b, line, sizeof(line));
	fl_sb_str(&b, "  #");
	fl_sb_u64(&b, (uint64_t)n);
	fl_sb_str(&b, n < 10 ? "  " : " ");
	fl_bt_format(&b, f, true);
	if (f->ours)
		fl_sb_str(&b, " [libfastlocal]");
	fl_log_raw(line, b.len);
}

static void fl_crash_trace(int sig, siginfo_t *si, void *uc, long tid)
{
	char line[600];
	struct fl_sbuf b;
	enum fl_sig_next next = fl_sig_next(sig);

	fl_sb_init(&b, line, sizeof(line));
	fl_sb_str(&b, "fatal signal ");
	fl_sb_str(&b, fl_crash_signame(sig));
	if (si->si_code > 0) { /* raised by the hardware: where */
		fl_sb_str(&b, " (code ");
		fl_sb_i64(&b, si->si_code);
		fl_sb_str(&b, ", address ");
		fl_sb_hex(&b, (uintptr_t)si->si_addr, 1);
		fl_sb_ch(&b, ')');
	} else { /* sent: by whom */
		fl_sb_str(&b, " (sent by pid ");
		fl_sb_i64(&b, si->si_pid);
		fl_sb_ch(&b, ')');
	}
	fl_sb_str(&b, " in thread ");
	fl_sb_i64(&b, tid);
	if (fl_bt_loaded()) {
		fl_sb_str(&b, "; backtrace (frames in libfastlocal marked [libfastlocal]):");
		fl_log_raw(line, b.len);
		fl_bt_walk(uc, fl_crash_frame, NULL);
	} else {
		/* Still say where: the faulting instruction, from dladdr. */
		fl_sb_str(&b, "; no backtrace: ");
		fl_sb_str(&b, fl_bt_error());
#ifdef __x86_64__
		fl_sb_str(&b, "; faulting instruction at ");
		fl_bt_describe_ip(&b, (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP]);
#endif
		fl_log_raw(line, b.len);
	}
	fl_sb_init(&b, line, sizeof(line));
	fl_sb_str(&b, "end of backtrace; next: ");
	fl_sb_str(&b, next == FL_SIG_NEXT_APP ? "the application's handler" :
		      next == FL_SIG_NEXT_PRIOR ? "the handler installed before fastlocal" :
						  "the default action of ");
	if (next == FL_SIG_NEXT_DEFAULT)
		fl_sb_str(&b, fl_crash_signame(sig));
	fl_log_raw(line, b.len);
}

/* Waits (at most about 2 s) for another thread's trace to end. */
static void fl_crash_wait_other(void)
{
	struct timespec ms = { 0, 1000000 };
	int i;

	for (i = 0; i < 2000 && __atomic_load_n(&fl_crash_owner, __ATOMIC_ACQUIRE); i++)
		nanosleep(&ms, NULL);
}

static void fl_crash_handler(int sig, siginfo_t *si, void *uc)
{
	long tid = syscall(SYS_gettid), none = 0;
	int saved = errno;

	if (__atomic_compare_exchange_n(&fl_crash_owner, &none, tid, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED)) {
		if (__atomic_fetch_add(&fl_crash_traces, 1, __ATOMIC_RELAXED) < FL_CRASH_MAX_TRACES)
			fl_crash_trace(sig, si, uc, tid);
		__atomic_store_n(&fl_crash_owner, 0, __ATOMIC_RELEASE);
	} else if (none != tid) {
		fl_crash_wait_other();
	} /* else: a fatal signal while this thread traces: no second trace */
	errno = saved;

	/* The application's (or the earlier) handler, exactly as it would
	 * have run without us. If it returns, so do we: a fault re-executes
	 * its instruction, as it would have. */
	if (fl_sig_chain(sig, si, uc))
		return;
	/* The default action. A fault re-executes its instruction on return
	 * and gets it; a sent signal (kill, raise, abort) is sent again and,
	 * blocked while we run, arrives as we return. */
	fl_sig_default(sig);
	if (si->si_code <= 0)
		syscall(SYS_tgkill, getpid(), tid, sig);
}

/* At load (init.c). */
void fl_crash_init(void)
{
	size_t i;

	if (!fl_config()->backtrace)
		return;
	/* Everything the handler needs is made ready here, outside any signal
	 * handler: the log file, libunwind (dlopen), our own code's range. */
	fl_log_fd();
	fl_bt_init(fl_config()->unwind_lib);
	for (i = 0; i < sizeof(fl_crash_sigs) / sizeof(fl_crash_sigs[0]); i++)
		fl_sig_set_front(fl_crash_sigs[i], fl_crash_handler);
}
