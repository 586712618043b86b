/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * reset.h - a connection reset is reported once, as TCP reports it.
 *
 * After a send or receive on an enrolled socket failed with ECONNRESET,
 * the redirect path leaves the error pending (every call reports it again
 * and SO_ERROR keeps it); TCP reports it once.
 */
#ifndef FL_RESET_H
#define FL_RESET_H

#include <sys/types.h>

/* r: what the call on fd returned (errno as it left it). Consumes a
 * pending ECONNRESET; errno is kept. */
void fl_reset_report_once(int fd, ssize_t r);

#endif
