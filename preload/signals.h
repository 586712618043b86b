/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * signals.h - knowing whether a signal handler ran during a call.
 *
 * The redirect path answers a blocking receive interrupted by a signal with
 * EAGAIN, not EINTR (trap 5), and the shim repeats spurious EAGAINs. To give
 * what TCP gives (EINTR when the handler lacks SA_RESTART, a transparent
 * restart when it has it), the shim installs its own trampoline in front of
 * the application's handlers (sigaction, signal) and counts their runs.
 */
#ifndef FL_SIGNALS_H
#define FL_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

/* Handler runs on this thread so far; compare before and after a call. */
unsigned fl_sig_runs(void);

/* Whether the last handler that ran on this thread had SA_RESTART. */
bool fl_sig_last_restarts(void);

int fl_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
sighandler_t fl_signal(int sig, sighandler_t handler);

#endif
