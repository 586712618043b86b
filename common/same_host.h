/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * same_host.h - is the other end of a nonce-keyed connection on this host,
 * in whatever network namespace?
 *
 * A peer address that is not one of this namespace's may still belong to
 * another namespace of this host (a container behind a bridge). Sockops
 * records every nonce-keyed connection end alive on the host in the pinned
 * map fl_established, under the end's own key; the peer is here exactly
 * when the mirror of our key is there. NAT or port mapping changes the
 * 4-tuple one end sees, so the mirror is never found: TCP, never
 * mis-paired. Used by the shim and by anything else that enrolls sockets
 * (it takes the map fd, not the shim's state).
 */
#ifndef FL_SAME_HOST_H
#define FL_SAME_HOST_H

#include <stdbool.h>

#include "fastlocal.h"

/* True if the other end of the connection keyed by key (scope already set,
 * ISNs filled) is established on this host. established_fd: the pinned
 * fl_established map. Always false for a key not scoped by a nonce. */
bool fl_peer_on_this_host(int established_fd, const struct fl_key *key);

#endif
