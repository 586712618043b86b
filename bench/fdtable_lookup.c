// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fdtable_lookup - why the shim's per-fd table is a flat two-level array:
 * the lookup every read()/write() pays, against uthash (Debian's uthash-dev)
 * keyed by fd. Run: make bench-fdtable (prints ns per lookup for both).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <uthash.h>

#include "../common/clock.h"
#include "../preload/socket/fdtable.h"

/* The fd table hands enrolled fds to the socket objects; none here. */
void fl_sock_hold(struct fl_sock *s);
void fl_sock_release(struct fl_sock *s, int fd);
void fl_sock_hold(struct fl_sock *s) { (void)s; }
void fl_sock_release(struct fl_sock *s, int fd) { (void)s; (void)fd; }

struct fl_hash_fd {
	int fd;
	struct fl_fd e;
	UT_hash_handle hh;
};

int main(void)
{
	enum { FDS = 1000, LOOKUPS = 50000000 };
	struct fl_hash_fd *table = NULL, *h;
	volatile uint32_t sink = 0;
	uint32_t x = 12345;
	double t0, flat, hash;
	int i;

	for (i = 3; i < FDS; i++) {
		fl_fd_get(i)->flags = (uint32_t)i;
		h = calloc(1, sizeof(*h));
		h->fd = i;
		h->e.flags = (uint32_t)i;
		HASH_ADD_INT(table, fd, h);
	}
	t0 = fl_clock_s(CLOCK_MONOTONIC);
	for (i = 0; i < LOOKUPS; i++) {
		struct fl_fd *e;

		x = x * 1103515245u + 12345u;
		e = fl_fd_peek((int)(x % FDS));
		sink += e ? e->flags : 0;
	}
	flat = (fl_clock_s(CLOCK_MONOTONIC) - t0) / LOOKUPS * 1e9;
	t0 = fl_clock_s(CLOCK_MONOTONIC);
	for (i = 0; i < LOOKUPS; i++) {
		int fd;

		x = x * 1103515245u + 12345u;
		fd = (int)(x % FDS);
		HASH_FIND_INT(table, &fd, h);
		sink += h ? h->e.flags : 0;
	}
	hash = (fl_clock_s(CLOCK_MONOTONIC) - t0) / LOOKUPS * 1e9;
	printf("per lookup, %d fds, random order: flat array %.2f ns, uthash %.2f ns (%.1fx)\n",
	       FDS, flat, hash, hash / flat);
	printf("(uthash would also need a lock or RCU for threads; the array needs neither)\n");
	return (int)(sink & 0);
}
