/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * flusher.h - the thread that bounds how long a byte stays buffered.
 *
 * Started the first time a socket buffers bytes. It sleeps until the
 * earliest deadline of the buffered batches (a new batch due earlier wakes
 * it), sends what is due, and with nothing buffered sleeps until the next
 * buffered byte kicks it, so an idle process, and batches the application
 * sends itself in time, cost nothing. It blocks every signal, never blocks on
 * a socket (MSG_DONTWAIT) and never waits for a lock an application thread
 * holds (trylock).
 */
#ifndef FL_FLUSHER_H
#define FL_FLUSHER_H

#include <stdbool.h>
#include <stdint.h>

/* What the thread does when it wakes (tx.c's fl_tx_flush_expired): sends
 * what is due at now_ns (CLOCK_MONOTONIC), returns the nanoseconds until the
 * next deadline (-1: none), and says in *left whether bytes are still
 * buffered (a writer held its lock: the thread looks again after the flush
 * delay). Passed in, not called by name, so that this file does not depend
 * on the send path that depends on it. */
typedef int64_t (*fl_flusher_work_fn)(int64_t now_ns, bool *left);

/* A socket buffered bytes that must go by deadline_ns (CLOCK_MONOTONIC);
 * work is what the thread runs (the same function on every call). */
void fl_flusher_kick(int64_t deadline_ns, fl_flusher_work_fn work);

#endif
