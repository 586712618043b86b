/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fault.h - failures on demand, for testing the paths that handle them.
 *
 * Some kernel refusals cannot be caused from user space on a healthy
 * machine (ENOMEM from the sockhash insert needs kernel memory exhaustion,
 * E2BIG 65536 enrolled sockets). FASTLOCAL_TEST_FAULT_INSERT=ERRNO_NAME makes
 * every sockhash insert of this process fail with that errno instead of
 * being tried, so the tests can show that each such fallback keeps the
 * connection on TCP and is counted. Unset, it costs one load per enrollment.
 */
#ifndef FL_FAULT_H
#define FL_FAULT_H

/* 0, or the -errno the next sockhash insert must fail with. */
int fl_fault_insert(void);

/*
 * FASTLOCAL_TEST_FAULT_LOCK_MS=N: the shim holds, N milliseconds longer,
 * two locks a test could not otherwise catch held: a socket's held receive
 * bytes' (rxq.c, while an SO_PEEK_OFF is set) and the signal handlers'
 * (signals.c, in sigaction). So a test can fork while another thread holds
 * one, and show the child does not wait for it (init.c's fork hooks). Read
 * at each of those two calls, neither on the send/receive path, so that a
 * test can set it for one call only.
 */
void fl_fault_lock_hold(void);

#endif
