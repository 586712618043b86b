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

#endif
