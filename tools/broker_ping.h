/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* broker_ping.h - is "fastlocal daemon" answering on a socket (for status). */
#ifndef FL_BROKER_PING_H
#define FL_BROKER_PING_H

#include <stdbool.h>
#include <linux/types.h>

/* True if a broker answered a PING on path within 1 s; *domains gets the
 * number of slot domains it serves (0 when it did not answer). */
bool fl_broker_ping(const char *path, __u32 *domains);

#endif
