// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fdtable.c - what the shim knows about each file descriptor. */
#include "fdtable.h"
#include "sock.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define FL_CHUNK_SHIFT 10
#define FL_CHUNK_SIZE (1 << FL_CHUNK_SHIFT)
#define FL_CHUNKS (FL_FD_MAX >> FL_CHUNK_SHIFT)

/*
 * Owned by this file. Each pointer is published once with a CAS (release)
 * and then never changes or goes away, so readers only need an acquire load.
 * Entries themselves are written by the thread that enrolls/closes the fd;
 * the state word is stored last with release semantics.
 */
static struct fl_fd *fl_chunks[FL_CHUNKS];

struct fl_fd *fl_fd_peek(int fd)
{
	struct fl_fd *c;

	if (fd < 0 || fd >= FL_FD_MAX)
		return NULL;
	c = __atomic_load_n(&fl_chunks[fd >> FL_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
	return c ? &c[fd & (FL_CHUNK_SIZE - 1)] : NULL;
}

struct fl_fd *fl_fd_get(int fd)
{
	struct fl_fd *c, *expect = NULL;
	size_t len = sizeof(struct fl_fd) * FL_CHUNK_SIZE;

	if (fd < 0 || fd >= FL_FD_MAX)
		return NULL;
	c = __atomic_load_n(&fl_chunks[fd >> FL_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
	if (!c) {
		/* mmap, not malloc: no allocator lock, zeroed, never freed. */
		c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
		if (!__atomic_compare_exchange_n(&fl_chunks[fd >> FL_CHUNK_SHIFT], &expect, c, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			munmap(c, len); /* another thread won */
			c = expect;
		}
	}
	return &c[fd & (FL_CHUNK_SIZE - 1)];
}

void fl_fd_forget_socket(int fd)
{
	struct fl_fd *e = fl_fd_peek(fd);
	struct fl_sock *s;

	if (!e)
		return;
	s = __atomic_exchange_n(&e->sock, NULL, __ATOMIC_ACQ_REL);
	__atomic_store_n(&e->state, FL_FD_UNKNOWN, __ATOMIC_RELEASE);
	if (s)
		fl_sock_release(s, fd);
}

/*
 * A pending copy of a socket was closed: the other copies may be alone with
 * their socket now, and enrollment, put off while another fd held it, is
 * due again at their next call rather than at the next backoff point. Which
 * entries are copies of the same socket is not recorded; every pending one
 * marked FL_FDF_DUP is asked (one getsockopt each, at its next call). Only
 * after a copy closes, so never on an ordinary close.
 */
static void fl_fd_dup_closed(void)
{
	int ch, i;

	for (ch = 0; ch < FL_CHUNKS; ch++) {
		struct fl_fd *c = __atomic_load_n(&fl_chunks[ch], __ATOMIC_ACQUIRE);

		for (i = 0; c && i < FL_CHUNK_SIZE; i++)
			if ((__atomic_load_n(&c[i].flags, __ATOMIC_RELAXED) & FL_FDF_DUP) &&
			    fl_fd_state(&c[i]) == FL_FD_PENDING)
				fl_fd_retry_reset(&c[i]);
	}
}

void fl_fd_clear(int fd)
{
	struct fl_fd *e = fl_fd_peek(fd);
	bool dup;

	if (!e)
		return;
	dup = (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_DUP) &&
	      fl_fd_state(e) == FL_FD_PENDING;
	fl_fd_forget_socket(fd);
	__atomic_store_n(&e->flags, 0, __ATOMIC_RELAXED);
	e->unpaired_us = 0;
	e->unpaired_mark = 0;
	if (dup)
		fl_fd_dup_closed();
}

void fl_fd_clear_range(unsigned int first, unsigned int last)
{
	unsigned int c, i, lo, hi;

	if (first >= FL_FD_MAX)
		return;
	if (last >= FL_FD_MAX)
		last = FL_FD_MAX - 1;
	/* Only chunks that exist can hold anything to forget. */
	for (c = first >> FL_CHUNK_SHIFT; c <= last >> FL_CHUNK_SHIFT; c++) {
		struct fl_fd *chunk = __atomic_load_n(&fl_chunks[c], __ATOMIC_ACQUIRE);

		if (!chunk)
			continue;
		lo = c << FL_CHUNK_SHIFT;
		hi = lo + FL_CHUNK_SIZE - 1;
		for (i = lo < first ? first : lo; i <= (hi > last ? last : hi); i++)
			fl_fd_clear((int)i);
	}
}

int fl_fd_next_enrolled(int from)
{
	int fd;

	for (fd = from < 0 ? 0 : from; fd < FL_FD_MAX; fd++) {
		struct fl_fd *c = __atomic_load_n(&fl_chunks[fd >> FL_CHUNK_SHIFT], __ATOMIC_ACQUIRE);

		if (!c) {
			fd |= FL_CHUNK_SIZE - 1; /* skip the whole empty chunk */
			continue;
		}
		if (fl_fd_state(&c[fd & (FL_CHUNK_SIZE - 1)]) == FL_FD_ENROLLED)
			return fd;
	}
	return -1;
}

void fl_fd_copy(int oldfd, int newfd)
{
	struct fl_fd *src = fl_fd_peek(oldfd), *dst;
	uint32_t state = fl_fd_state(src);

	if (state == FL_FD_UNKNOWN && (!src || !__atomic_load_n(&src->flags, __ATOMIC_RELAXED))) {
		fl_fd_clear(newfd);
		return;
	}
	fl_fd_clear(newfd); /* whatever newfd named before is gone */
	dst = fl_fd_get(newfd);
	if (!dst)
		return;
	/* A pending copy starts from what the original has counted: reads
	 * through the original from now on are not seen here, which can only
	 * keep its gate shut (design.md), never open it early. */
	/* (without the bit an enrollment in progress sets, enroll.c) */
	dst->pend_read = __atomic_load_n(&src->pend_read, __ATOMIC_SEQ_CST) & ~(1ULL << 63);
	dst->pend_moved = __atomic_load_n(&src->pend_moved, __ATOMIC_RELAXED);
	dst->peer_bucket = __atomic_load_n(&src->peer_bucket, __ATOMIC_RELAXED);
	dst->peer_seen = __atomic_load_n(&src->peer_seen, __ATOMIC_RELAXED);
	dst->server_port = __atomic_load_n(&src->server_port, __ATOMIC_RELAXED);
	dst->pend_readers = 0;
	dst->retry_at_us = fl_fd_now_us(); /* due at once */
	dst->retry_gap_us = 0;
	dst->inflight = 0;
	dst->sock = state == FL_FD_ENROLLED ? src->sock : NULL;
	if (dst->sock)
		fl_sock_hold(dst->sock);
	if (state == FL_FD_PENDING)
		__atomic_fetch_or(&src->flags, FL_FDF_DUP, __ATOMIC_RELAXED);
	__atomic_store_n(&dst->flags, __atomic_load_n(&src->flags, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&dst->state, state, __ATOMIC_RELEASE);
}
