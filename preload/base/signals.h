/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * signals.h - knowing whether a signal handler ran during a call.
 *
 * The redirect path answers a blocking receive interrupted by a signal with
 * EAGAIN, not EINTR (docs/kernel.md#spurious-eagain), and the shim repeats
 * spurious EAGAINs. To give what TCP gives (EINTR when the handler lacks
 * SA_RESTART, a transparent restart when it has it), the shim installs its
 * own trampoline in front of the application's handlers (sigaction, signal)
 * and counts their runs.
 */
#ifndef FL_SIGNALS_H
#define FL_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

/* Handler runs on this thread so far; compare before and after a call. */
unsigned fl_sig_runs(void);

/* Whether the last handler that ran on this thread had SA_RESTART. */
bool fl_sig_last_restarts(void);

/* A handler ran while a socket call waited: whether it ends the call with
 * EINTR, as it ends TCP's wait (sock_intr_errno(), signal(7)): without
 * SA_RESTART, or on a socket with a timeout for that wait (SO_RCVTIMEO,
 * SO_SNDTIMEO); else TCP restarts the call. */
static inline bool fl_sig_ends_socket_wait(bool timeout_set)
{
	return !fl_sig_last_restarts() || timeout_set;
}

int fl_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/*
 * Fronts: a handler of the shim's own that runs first for a signal (the
 * crash handler, crash.h), whatever the application installs afterwards.
 * The application's sigaction()/signal() then only choose what the front
 * chains to; what they report as the old action is the application's
 * view, never the front. SIG_IGN is passed to the kernel as is (the front
 * steps aside until a handler or SIG_DFL is set again).
 */
typedef void (*fl_sig_front_fn)(int sig, siginfo_t *si, void *uc);

/* Puts front in front of sig's current action, which becomes the chained
 * one. Not signal-safe. 0 or -1. */
int fl_sig_set_front(int sig, fl_sig_front_fn front);

/* What a front's fl_sig_chain() will run for sig. Signal-safe. */
enum fl_sig_next {
	FL_SIG_NEXT_DEFAULT, /* nothing: the caller takes the default action */
	FL_SIG_NEXT_APP,     /* a handler the application set through us */
	FL_SIG_NEXT_PRIOR,   /* the handler that was there before the front */
};
enum fl_sig_next fl_sig_next(int sig);

/* Runs the chained handler (as the trampoline would, SA_RESETHAND
 * honoured). False if there is none: then the caller takes the default
 * action. Signal-safe. */
bool fl_sig_chain(int sig, siginfo_t *si, void *uc);

/* Sets sig's kernel action to SIG_DFL (before re-raising). Signal-safe. */
void fl_sig_default(int sig);
sighandler_t fl_signal(int sig, sighandler_t handler);

#endif
