// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sc_basic.c - streams, FIONREAD and MSG_WAITALL. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "conformance.h"

/* 1 MiB each way, in odd-sized writes: every byte, in order, then EOF. */
static int sc_stream_both_ways(int family)
{
	int c, s;
	int64_t bad;
	ssize_t n;

	if (fl_sc_pair(family, &c, &s))
		return -1;
	if (fl_sc_write_pattern(c, 0, 1 << 20, 1) || fl_sc_write_pattern(s, 0, 1 << 20, 2))
		return -1;
	shutdown(c, SHUT_WR);
	shutdown(s, SHUT_WR);
	n = fl_sc_read_pattern(s, 0, (1 << 20) + 1, 1, &bad);
	fl_trace("server read %zd bytes, first wrong byte %lld", n, (long long)bad);
	n = fl_sc_read_pattern(c, 0, (1 << 20) + 1, 2, &bad);
	fl_trace("client read %zd bytes, first wrong byte %lld", n, (long long)bad);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("stream-both-ways", FL_SC_REDIRECTS, sc_stream_both_ways)

/* Bytes that went over TCP before accept() (the server was not enrolled
 * yet) must be counted by FIONREAD and SIOCINQ (docs/kernel.md#fionread). */
static int sc_fionread_tcp_queue(int family)
{
	int port, l = fl_sc_listen(family, &port), c, s, n = -1;
	int64_t bad;

	c = fl_sc_connect(family, port);
	if (l < 0 || c < 0 || fl_sc_write_pattern(c, 0, 1000, 3))
		return -1;
	fl_sc_sleep_ms(20);
	s = accept(l, NULL, NULL);
	fl_trace("FIONREAD -> %s, %d bytes", fl_ret(ioctl(s, FIONREAD, &n)), n);
	fl_trace("SIOCINQ -> %s, %d bytes", fl_ret(ioctl(s, SIOCINQ, &n)), n);
	fl_trace("read %zd", fl_sc_read_pattern(s, 0, 1000, 3, &bad));
	/* Now redirected (the gate is open): counted as well. Under deferred
	 * enrollment the warm-up takes both ends past the threshold first. */
	if (fl_sc_warmup(c, s) || fl_sc_write_pattern(c, 1000, 700, 3))
		return -1;
	fl_sc_sleep_ms(20);
	fl_trace("FIONREAD -> %s, %d bytes", fl_ret(ioctl(s, FIONREAD, &n)), n);
	fl_trace("read %zd, first wrong byte %lld", fl_sc_read_pattern(s, 1000, 700, 3, &bad),
		 (long long)bad);
	fl_trace("FIONREAD -> %s, %d bytes", fl_ret(ioctl(s, FIONREAD, &n)), n);
	close(c);
	close(s);
	close(l);
	return 0;
}
FL_SCENARIO("fionread-tcp-then-redirected", FL_SC_REDIRECTS, sc_fionread_tcp_queue)

struct sc_dribble {
	int fd, pieces, gap_ms;
};

static void *sc_dribbler(void *arg)
{
	struct sc_dribble *d = arg;
	int i;

	for (i = 0; i < d->pieces; i++) {
		fl_sc_sleep_ms(d->gap_ms);
		fl_sc_write_pattern(d->fd, (uint64_t)i * 10, 10, 4);
	}
	return NULL;
}

/* recv(MSG_WAITALL) waits for all 30 bytes sent in three pieces
 * (docs/kernel.md#waitall). */
static int sc_waitall(int family)
{
	struct sc_dribble d = { .pieces = 3, .gap_ms = 30 };
	unsigned char buf[30], want[30];
	pthread_t th;
	ssize_t r;
	int c, s;

	if (fl_sc_pair(family, &c, &s))
		return -1;
	d.fd = c;
	pthread_create(&th, NULL, sc_dribbler, &d);
	r = recv(s, buf, sizeof(buf), MSG_WAITALL);
	fl_sc_fill(want, 0, sizeof(want), 4);
	fl_trace("recv(30, MSG_WAITALL) -> %s, bytes %s", fl_ret(r),
		 r == 30 && !memcmp(buf, want, 30) ? "ok" : "wrong");
	pthread_join(th, NULL);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("recv-waitall", FL_SC_REDIRECTS, sc_waitall)

/* sendto() with an address on a connected socket: TCP ignores the address,
 * and the bytes follow every byte written before. A small write the shim
 * holds (its reader has unread bytes) must not be overtaken. */
static int sc_sendto_address_after_small_write(int family)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	unsigned char buf[111], want[111];
	int c, s, ok;

	if (fl_sc_pair(family, &c, &s) ||
	    getpeername(c, (struct sockaddr *)&peer, &plen))
		return -1;
	memset(want, 'a', 100);
	memset(want + 100, 'b', 10);
	want[110] = 'C';
	if (write(c, want, 100) != 100 || write(c, want + 100, 10) != 10)
		return -1;
	fl_trace("sendto(1 byte, the peer's address) -> %s",
		 fl_ret(sendto(c, "C", 1, 0, (struct sockaddr *)&peer, plen)));
	ok = recv(s, buf, sizeof(buf), MSG_WAITALL) == (ssize_t)sizeof(buf) &&
	     !memcmp(buf, want, sizeof(buf));
	fl_trace("111 bytes read in the order written: %s", ok ? "yes" : "no");
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-sendto-address-after-small-write", FL_SC_REDIRECTS, sc_sendto_address_after_small_write)
