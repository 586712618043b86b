/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* key.h - the sockhash key of a socket, from its addresses. */
#ifndef FL_KEY_H
#define FL_KEY_H

#include <linux/types.h>
#include <sys/socket.h>

#include "fastlocal.h"

/* Fills *k (zeroing padding) from the socket's own and its peer's address,
 * exactly as fl_verdict mirrors it. 0, or -EAFNOSUPPORT for a family other
 * than AF_INET/AF_INET6. */
int fl_key_build(struct fl_key *k, __u64 netns_cookie, const struct sockaddr_storage *local,
		 const struct sockaddr_storage *remote);

/* The key of the other end of the same connection: addresses, ports and
 * ISNs swapped. */
void fl_key_mirror(struct fl_key *out, const struct fl_key *k);

#endif
