// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tcp_inq.c - TCP's own unread byte count of a socket, in O(1) (tcp_inq.h). */
#include "tcp_inq.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "base/libc.h"

/* The head of struct tcp_zerocopy_receive (linux/tcp.h; glibc's copy of
 * it stops at recv_skip_hint). Asking for exactly up to inq (20 bytes)
 * makes the kernel fill inq and skip the fields after it: at err's length
 * (24, this struct's size with its padding) it would also take the
 * socket's pending error (sock_error), which belongs to the application. */
struct fl_zc_head {
	uint64_t address;
	uint32_t length;
	uint32_t recv_skip_hint;
	uint32_t inq;
};

/*
 * Owned by this file: one read-only page mapped from a TCP socket of the
 * shim's own, made on first use and kept for the life of the process
 * (forks inherit it). 0: not made yet; 1: it could not be made; else its
 * address. Set once with a compare-and-swap; no lock.
 *
 * IMPORTANT: with 4 KiB or more unread, TCP_ZEROCOPY_RECEIVE fails with
 * EINVAL unless its address lies in a mapping of some TCP socket
 * (find_tcp_vma checks the mapping's operations, not whose socket it
 * is). With length 0 it maps nothing there and consumes nothing; the
 * mapping only lets the call reach the point where it reports inq.
 */
static uintptr_t fl_zc_page;

static uintptr_t fl_zc_area(void)
{
	uintptr_t a = __atomic_load_n(&fl_zc_page, __ATOMIC_ACQUIRE), want, seen = 0;
	long pg = sysconf(_SC_PAGESIZE);
	void *p = MAP_FAILED;
	int s;

	if (a)
		return a;
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, s, 0);
		libc_close(s); /* the mapping keeps its file */
	}
	want = p == MAP_FAILED ? 1 : (uintptr_t)p;
	if (__atomic_compare_exchange_n(&fl_zc_page, &seen, want, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return want;
	if (p != MAP_FAILED)
		munmap(p, (size_t)pg); /* another thread made one first */
	return seen;
}

int fl_tcp_inq_hint(int fd, int *out)
{
	struct fl_zc_head zc = { 0 };
	/* Not sizeof(zc): its padding makes it err's length. */
	const socklen_t want = offsetof(struct fl_zc_head, inq) + sizeof(zc.inq);
	socklen_t len = want;
	uintptr_t a = fl_zc_area();
	int saved = errno;

	if (a == 1)
		return -1;
	zc.address = a;
	if (libc_getsockopt(fd, IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, &zc, &len) || len != want) {
		errno = saved;
		return -1;
	}
	*out = (int)(zc.inq > INT32_MAX ? INT32_MAX : zc.inq);
	return 0;
}

bool fl_tcp_done(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int saved = errno;
	bool done;

	if (libc_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) || len < 1) {
		errno = saved;
		return false;
	}
	switch (ti.tcpi_state) {
	case TCP_CLOSE_WAIT:
	case TCP_LAST_ACK:
	case TCP_CLOSING:
	case TCP_TIME_WAIT:
	case TCP_CLOSE:
		done = true;
		break;
	default:
		done = false;
	}
	return done;
}
