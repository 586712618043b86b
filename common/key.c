// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* key.c - the sockhash key of a socket, from its addresses. */
#include "key.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/* IPv4 becomes ::ffff:a.b.c.d so both families share one key space. */
static int fl_addr16(const struct sockaddr_storage *sa, __u32 ip[4], __u16 *port)
{
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		ip[0] = ip[1] = 0;
		ip[2] = htonl(0x0000ffff);
		ip[3] = in->sin_addr.s_addr;
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(ip, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int fl_key_port(const struct sockaddr_storage *sa, __u16 *port)
{
	__u32 ip[4];

	return fl_addr16(sa, ip, port);
}

int fl_key_build(struct fl_key *k, __u64 scope, const struct sockaddr_storage *local,
		 const struct sockaddr_storage *remote)
{
	memset(k, 0, sizeof(*k));
	k->scope = scope;
	if (fl_addr16(local, k->local_ip, &k->local_port) ||
	    fl_addr16(remote, k->remote_ip, &k->remote_port))
		return -EAFNOSUPPORT;
	return 0;
}

void fl_key_mirror(struct fl_key *out, const struct fl_key *k)
{
	memset(out, 0, sizeof(*out));
	out->scope = k->scope;
	memcpy(out->local_ip, k->remote_ip, sizeof(out->local_ip));
	memcpy(out->remote_ip, k->local_ip, sizeof(out->remote_ip));
	out->local_port = k->remote_port;
	out->remote_port = k->local_port;
	out->snd_isn = k->rcv_isn;
	out->rcv_isn = k->snd_isn;
}

__u32 fl_key_joined_idx(const struct fl_key *k)
{
	__u64 w[sizeof(*k) / 8], h = 0;
	unsigned int i;

	_Static_assert(sizeof(*k) % 8 == 0, "fl_key is hashed in 64-bit words");
	memcpy(w, k, sizeof(w));
	for (i = 0; i < sizeof(w) / 8; i++)
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15ULL;
	return (__u32)(h >> 32) % FL_JOINED_BUCKETS;
}

/* 127.0.0.0/8 (IPv4-mapped) or ::1, in the key's 16-byte form. */
static bool fl_key_ip_loopback(const __u32 ip[4])
{
	if (ip[0] || ip[1])
		return false;
	if (!ip[2] && ip[3] == htonl(1))
		return true;
	return ip[2] == htonl(0x0000ffff) && (ntohl(ip[3]) >> 24) == 127;
}

bool fl_key_is_loopback(const struct fl_key *k)
{
	return fl_key_ip_loopback(k->local_ip) || fl_key_ip_loopback(k->remote_ip);
}

int fl_key_set_scope(struct fl_key *k, __u64 netns_cookie, __u64 nonce)
{
	if (fl_key_is_loopback(k)) {
		k->scope = netns_cookie;
		return netns_cookie ? 0 : -ENOPROTOOPT;
	}
	k->scope = nonce;
	return nonce ? 0 : -ENODATA;
}
