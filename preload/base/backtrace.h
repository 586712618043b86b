/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * backtrace.h - symbolized backtraces through libunwind, loaded at run time.
 *
 * IMPORTANT: the shim links only libc (it is loaded into every program, and
 * a program may carry an unwinder of its own), so libunwind.so.8 is
 * dlopen()ed by fl_bt_init(), never at load time and never inside a signal
 * handler. After a successful fl_bt_init() the walks are signal-safe: no
 * malloc, no stdio (libunwind's local unwinder is built for signal handlers).
 */
#ifndef FL_BACKTRACE_H
#define FL_BACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"

/* Loads libunwind (unwind_lib: the setting FASTLOCAL_UNWIND_LIB, default
 * libunwind.so.8; only the first call's counts) and finds the shim's own
 * code. Idempotent, thread-safe, not signal-safe. 0, or -1 with
 * fl_bt_error() saying why. */
int fl_bt_init(const char *unwind_lib);

/* True once fl_bt_init() has succeeded. Signal-safe (fl_bt_init is not). */
bool fl_bt_loaded(void);

/* Why fl_bt_init() failed ("" if it did not). */
const char *fl_bt_error(void);

/* True if ip lies in libfastlocal's own code. Signal-safe. */
bool fl_bt_ours(uintptr_t ip);

/* Appends "0x00007f.. name+0xoff (module)" for ip, from the dynamic symbol
 * table only (dladdr): the one frame a crash can show without libunwind. */
void fl_bt_describe_ip(struct fl_sbuf *b, uintptr_t ip);

/* One frame, innermost first. name is "" when no symbol covers ip. */
struct fl_bt_frame {
	uintptr_t ip;
	const char *name;   /* from libunwind: static functions too */
	uintptr_t off;      /* ip - the symbol's start */
	const char *module; /* basename of the object, "" if unknown */
	bool ours;          /* inside libfastlocal */
};

typedef void (*fl_bt_frame_fn)(void *arg, int n, const struct fl_bt_frame *f);

/* Appends "0x00007f.. name+0xoff (module)" (with_ip) or "name+0xoff
 * (module)". Signal-safe. */
void fl_bt_format(struct fl_sbuf *b, const struct fl_bt_frame *f, bool with_ip);

/* Walks the stack of a signal's ucontext (uc, so that frame 0 is the
 * faulting function) or, with uc NULL, of the caller. Returns the frames
 * reported, or -1 if fl_bt_init() has not succeeded. Signal-safe. */
int fl_bt_walk(void *uc, fl_bt_frame_fn fn, void *arg);

/* The application's call that led into the shim, on one line:
 * "connect() <- f+0x1c (prog) <- main+0x55 (prog) <- ...". Loads libunwind
 * on first use (fl_bt_init). Returns the length written to buf, 0 if
 * unavailable. */
size_t fl_bt_caller(char *buf, size_t cap, const char *unwind_lib);

#endif
