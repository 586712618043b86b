/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * crash.h - with FASTLOCAL_BACKTRACE=1, a fatal signal (SIGSEGV, SIGBUS,
 * SIGABRT, SIGFPE, SIGILL) writes a symbolized backtrace to the log, frames
 * inside libfastlocal marked, before anything else happens to it.
 *
 * The handler is a front (signals.h): it runs first, then chains to the
 * application's handler (set before or after ours), or to the handler that
 * was there before the shim (a sanitizer's), or takes the default action.
 * It never swallows a signal. Installed by a constructor; nothing to call.
 */
#ifndef FL_CRASH_H
#define FL_CRASH_H

#endif
