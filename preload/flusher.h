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

#include <stdint.h>

/* A socket buffered bytes that must go by deadline_ns (CLOCK_MONOTONIC). */
void fl_flusher_kick(int64_t deadline_ns);

#endif
