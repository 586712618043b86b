/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* exclude.h - whether the port/address rules keep a connection on TCP. */
#ifndef FL_EXCLUDE_H
#define FL_EXCLUDE_H

#include <stdbool.h>
#include <sys/socket.h>

/* True when ports/skip_ports/addresses/skip_addresses (conf.h) keep the
 * connection with these ends (getsockname/getpeername) on TCP. No system
 * call; callers ask only when fl_config()->has_rules, at enrollment. */
bool fl_excluded(const struct sockaddr_storage *local, const struct sockaddr_storage *remote);

#endif
