// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_iov.c - what the kernel refuses in an iovec array, on both paths:
 * more than IOV_MAX (1024) iovecs, a negative count, a count too large for
 * an int, no array; zero-length writes and reads. writev/readv refuse with
 * EINVAL, sendmsg/recvmsg with EMSGSIZE, a missing array with EFAULT, and
 * none of it moves a byte: the stream afterwards holds exactly the bytes of
 * the calls that succeeded, in order.
 *
 * Each scenario runs twice: right after connect (on TCP in the default
 * configuration) and after 8 KiB each way (enrolled, redirecting). Bytes
 * the reader has not read yet are queued first, as a writer's buffer and
 * flow control look at them.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

#include "conformance.h"

#define IOV_SEED 171
#define IOV_N 1025

/* Read at run time, so that the compiler does not refuse the calls the
 * scenarios make on purpose. */
static volatile int iov_minus_one = -1;
static struct iovec *volatile iov_null;

static void iov_guard(int fd)
{
	struct timeval tv = { 3, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Reads and checks n pattern bytes at off; traced. */
static void iov_check(int fd, uint64_t off, size_t n, const char *what)
{
	int64_t bad;
	ssize_t r = fl_sc_read_pattern(fd, off, n, IOV_SEED, &bad);

	fl_trace("%s: read %zd of %zu, first wrong byte %lld", what, r, n, (long long)bad);
}

/* The pair; with warm, 8 KiB each way and back first (read in full). */
static int iov_pair(int family, int *c, int *s, uint64_t *pos, int warm)
{
	*pos = 0;
	if (fl_sc_pair(family, c, s))
		return -1;
	iov_guard(*c);
	iov_guard(*s);
	if (!warm)
		return 0;
	if (fl_sc_write_pattern(*c, 0, 8192, IOV_SEED) || fl_sc_write_pattern(*s, 0, 8192, IOV_SEED))
		return -1;
	iov_check(*s, 0, 8192, "warm-up c -> s");
	iov_check(*c, 0, 8192, "warm-up s -> c");
	if (fl_sc_write_pattern(*c, 8192, 100, IOV_SEED) || fl_sc_write_pattern(*s, 8192, 100, IOV_SEED))
		return -1;
	iov_check(*s, 8192, 100, "warm-up c -> s");
	iov_check(*c, 8192, 100, "warm-up s -> c");
	*pos = 8292;
	return 0;
}

/* iov[i] is the one pattern byte at pos + i. */
static void iov_point(struct iovec *iov, uint8_t *bytes, uint64_t pos, int n)
{
	int i;

	fl_sc_fill(bytes, pos, (size_t)n, IOV_SEED);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = bytes + i;
		iov[i].iov_len = 1;
	}
}

/* Writes that the kernel refuses, and the ones next to them it takes. */
static int iov_send(int family, int warm)
{
	static struct iovec iov[IOV_N];
	static uint8_t bytes[IOV_N];
	struct msghdr m;
	uint64_t pos;
	ssize_t r;
	int c, s;

	if (iov_pair(family, &c, &s, &pos, warm))
		return -1;
	/* 3000 bytes the reader has not read yet. */
	if (fl_sc_write_pattern(c, pos, 3000, IOV_SEED))
		return -1;
	pos += 3000;

	iov_point(iov, bytes, pos, IOV_N);
	fl_trace("writev(%d iovecs) -> %s", IOV_N, fl_ret(writev(c, iov, IOV_N)));
	r = writev(c, iov, IOV_N - 1);
	fl_trace("writev(%d iovecs) -> %s", IOV_N - 1, fl_ret(r));
	if (r > 0)
		pos += (uint64_t)r;
	iov_point(iov, bytes, pos, IOV_N);
	fl_trace("writev(-1 iovecs) -> %s", fl_ret(writev(c, iov, iov_minus_one)));
	fl_trace("writev(NULL, 0) -> %s", fl_ret(writev(c, iov_null, 0)));
	fl_trace("writev(iov, 0) -> %s", fl_ret(writev(c, iov, 0)));
	fl_trace("writev(NULL, 1) -> %s", fl_ret(writev(c, iov_null, 1)));

	memset(&m, 0, sizeof(m));
	m.msg_iov = iov;
	m.msg_iovlen = IOV_N;
	fl_trace("sendmsg(%d iovecs) -> %s", IOV_N, fl_ret(sendmsg(c, &m, MSG_NOSIGNAL)));
	m.msg_iovlen = (size_t)1 << 40;
	fl_trace("sendmsg(2^40 iovecs) -> %s", fl_ret(sendmsg(c, &m, MSG_NOSIGNAL)));
	m.msg_iovlen = ((size_t)1 << 32) + 1; /* 1 as an int */
	fl_trace("sendmsg(2^32 + 1 iovecs) -> %s", fl_ret(sendmsg(c, &m, MSG_NOSIGNAL)));
	m.msg_iovlen = IOV_N - 1;
	r = sendmsg(c, &m, MSG_NOSIGNAL);
	fl_trace("sendmsg(%d iovecs) -> %s", IOV_N - 1, fl_ret(r));
	if (r > 0)
		pos += (uint64_t)r;
	iov_point(iov, bytes, pos, IOV_N);
	m.msg_iov = NULL;
	m.msg_iovlen = 0;
	fl_trace("sendmsg(NULL iov, 0) -> %s", fl_ret(sendmsg(c, &m, MSG_NOSIGNAL)));
	m.msg_iov = NULL;
	m.msg_iovlen = 1;
	fl_trace("sendmsg(NULL iov, 1) -> %s", fl_ret(sendmsg(c, &m, MSG_NOSIGNAL)));
	fl_trace("sendmsg(NULL) -> %s", fl_ret(sendmsg(c, NULL, MSG_NOSIGNAL)));
	fl_trace("send(0 bytes) -> %s", fl_ret(send(c, bytes, 0, MSG_NOSIGNAL)));
	fl_trace("write(0 bytes) -> %s", fl_ret(write(c, bytes, 0)));

	if (fl_sc_write_pattern(c, pos, 10, IOV_SEED))
		return -1;
	pos += 10;
	shutdown(c, SHUT_WR);
	iov_check(s, warm ? 8292 : 0, (size_t)(pos - (warm ? 8292 : 0)), "stream");
	fl_trace("then EOF: %s", fl_ret(read(s, bytes, 1)));
	close(c);
	close(s);
	return 0;
}

static int iov_send_tcp(int family)
{
	return iov_send(family, 0);
}
FL_SCENARIO("io-iov-limits-send", 0, iov_send_tcp)

static int iov_send_redirected(int family)
{
	return iov_send(family, 1);
}
FL_SCENARIO("io-iov-limits-send-redirected", FL_SC_REDIRECTS, iov_send_redirected)

/* Reads that the kernel refuses, with bytes queued; SO_PEEK_OFF set (which
 * a later peek would use) makes the shim serve the reads itself. */
static int iov_recv(int family, int warm)
{
	static struct iovec iov[IOV_N];
	static uint8_t bytes[IOV_N];
	struct pollfd p;
	struct msghdr m;
	uint64_t pos;
	int c, s, zero = 0;

	if (iov_pair(family, &c, &s, &pos, warm))
		return -1;
	fl_trace("SO_PEEK_OFF 0 -> %s",
		 fl_ret(setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero))));
	if (fl_sc_write_pattern(c, pos, 2000, IOV_SEED))
		return -1;
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	fl_trace("readable within 1 s: %d", poll(&p, 1, 1000));
	iov_point(iov, bytes, 0, IOV_N);
	fl_trace("readv(%d iovecs) -> %s", IOV_N, fl_ret(readv(s, iov, IOV_N)));
	fl_trace("readv(-1 iovecs) -> %s", fl_ret(readv(s, iov, iov_minus_one)));
	fl_trace("readv(iov, 0) -> %s", fl_ret(readv(s, iov, 0)));
	memset(&m, 0, sizeof(m));
	m.msg_iov = iov;
	m.msg_iovlen = IOV_N;
	fl_trace("recvmsg(%d iovecs) -> %s", IOV_N, fl_ret(recvmsg(s, &m, 0)));
	m.msg_iovlen = ((size_t)1 << 32) + 1;
	fl_trace("recvmsg(2^32 + 1 iovecs) -> %s", fl_ret(recvmsg(s, &m, 0)));
	m.msg_iovlen = IOV_N;
	fl_trace("recvmsg(%d iovecs, MSG_PEEK) -> %s", IOV_N, fl_ret(recvmsg(s, &m, MSG_PEEK)));
	m.msg_iovlen = 0;
	fl_trace("recvmsg(0 iovecs) -> %s", fl_ret(recvmsg(s, &m, 0)));
	iov_check(s, pos, 2000, "stream");
	close(c);
	close(s);
	return 0;
}

static int iov_recv_tcp(int family)
{
	return iov_recv(family, 0);
}
FL_SCENARIO("io-iov-limits-recv", 0, iov_recv_tcp)

static int iov_recv_redirected(int family)
{
	return iov_recv(family, 1);
}
FL_SCENARIO("io-iov-limits-recv-redirected", FL_SC_REDIRECTS, iov_recv_redirected)
