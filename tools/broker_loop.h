/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * broker_loop.h - the broker's event loop: many connections pending at
 * once, each served as soon as its request is there, so that a caller who
 * connects and says nothing delays nobody (docs/security.md).
 */
#ifndef FL_BROKER_LOOP_H
#define FL_BROKER_LOOP_H

#include <signal.h>

#include "broker_serve.h"

/* Serves connections on the non-blocking listener until *stop is set. */
void fl_broker_loop(struct fl_broker *b, int listener, volatile sig_atomic_t *stop);

#endif
