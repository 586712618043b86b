// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* same_host.c - is the other end of a nonce-keyed connection on this host? */
#include "same_host.h"

#include "bpf_sys.h"
#include "key.h"

bool fl_peer_on_this_host(int established_fd, const struct fl_key *key)
{
	struct fl_key peer;
	__u64 cookie;

	/* A loopback key's scope is a namespace cookie, which sockops never
	 * records: only a nonce proves the other end saw our SYN. */
	if (established_fd < 0 || !key->scope || fl_key_is_loopback(key))
		return false;
	fl_key_mirror(&peer, key);
	return fl_bpf_map_lookup(established_fd, &peer, &cookie) == 0 && cookie;
}
