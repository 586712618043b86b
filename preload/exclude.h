/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* exclude.h - whether the port/address rules keep a connection on TCP. */
#ifndef FL_EXCLUDE_H
#define FL_EXCLUDE_H

#include <stdbool.h>

/* True when ports/skip_ports/addresses/skip_addresses (conf.h) keep this
 * connected TCP socket on TCP. Costs getsockname+getpeername, so callers
 * ask only when fl_config()->has_rules; never on the send/recv path. */
bool fl_excluded(int fd);

#endif
