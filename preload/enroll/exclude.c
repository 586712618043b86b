// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* exclude.c - the port/address rules applied to one socket (exclude.h). */
#include "exclude.h"

#include <string.h>

#include "base/config.h"
#include "common/key.h"

bool fl_excluded(const struct sockaddr_storage *local, const struct sockaddr_storage *remote)
{
	uint8_t addrs[2][16];
	uint16_t ports[2];
	struct fl_key k;

	/* The key's form is the rules' form: 16-byte addresses, IPv4 as
	 * IPv4-mapped IPv6 (conf.h), ports in host order. Another family:
	 * not ours to judge; enrollment itself will refuse. */
	if (fl_key_build(&k, 0, local, remote))
		return false;
	memcpy(addrs[0], k.local_ip, 16);
	memcpy(addrs[1], k.remote_ip, 16);
	ports[0] = k.local_port;
	ports[1] = k.remote_port;
	return fl_conf_ports_excluded(fl_config(), ports) ||
	       fl_conf_addrs_excluded(fl_config(), (const uint8_t (*)[16])addrs);
}
