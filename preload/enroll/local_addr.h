/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * local_addr.h - is the other end of a connection on this host?
 *
 * Loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104), the socket's own
 * address, and every address of this network namespace's interfaces. The
 * interface list is read once and re-read only when a netlink notification
 * says it changed (checked at most every 100 ms) or the socket belongs to
 * another namespace than the list (after setns()), never per connect.
 */
#ifndef FL_LOCAL_ADDR_H
#define FL_LOCAL_ADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* True if peer is an address of this host. self is the socket's own address,
 * netns its namespace cookie (0: unknown, assume the process's). */
bool fl_peer_is_local(const struct sockaddr_storage *peer, const struct sockaddr_storage *self,
		      uint64_t netns);

/* The pure part: 16-byte (IPv4-mapped) address a is loopback. */
bool fl_addr_is_loopback(const unsigned char a[16]);

/* The 16-byte form of an AF_INET/AF_INET6 address; false for other families. */
bool fl_addr16_of(const struct sockaddr_storage *ss, unsigned char out[16]);

#endif
