/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* key.h - the sockhash key of a socket, from its addresses. */
#ifndef FL_KEY_H
#define FL_KEY_H

#include <stdbool.h>
#include <linux/types.h>
#include <sys/socket.h>

#include "fastlocal.h"

/* Fills *k (zeroing padding) from the socket's own and its peer's address,
 * exactly as fl_verdict mirrors it. 0, or -EAFNOSUPPORT for a family other
 * than AF_INET/AF_INET6. */
int fl_key_build(struct fl_key *k, __u64 scope, const struct sockaddr_storage *local,
		 const struct sockaddr_storage *remote);

/* Either address of the key is loopback (127.0.0.0/8, ::1): the connection
 * never left its network namespace. sockops applies the same rule. */
bool fl_key_is_loopback(const struct fl_key *k);

/* Sets k->scope (docs/design.md section 1): the namespace cookie for a
 * loopback connection, the SYN nonce for any other. 0, -ENODATA when a
 * non-loopback connection has no nonce, -ENOPROTOOPT when a loopback one
 * has no namespace cookie: either cannot be keyed, so stays on TCP. */
int fl_key_set_scope(struct fl_key *k, __u64 netns_cookie, __u64 nonce);

/* The key of the other end of the same connection: addresses, ports and
 * ISNs swapped. */
void fl_key_mirror(struct fl_key *out, const struct fl_key *k);

/* The port of an inet address, as a key holds it (host order): 0 or
 * -EAFNOSUPPORT. */
int fl_key_port(const struct sockaddr_storage *sa, __u16 *port);

/* The bucket of k in struct fl_joined (fastlocal.h): a hash of the whole
 * key, the same in the shim and the broker. */
__u32 fl_key_joined_idx(const struct fl_key *k);

#endif
