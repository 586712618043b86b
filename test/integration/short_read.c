// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * short_read - a read that returns fewer bytes than asked means, as in TCP,
 * that nothing more was there to read.
 *
 * After a flow-control fallback an enrolled socket holds its peer's bytes
 * in two queues: the redirected one, older, and TCP's behind it. The
 * kernel's tcp_bpf_recvmsg serves the redirected queue alone, so a read
 * that empties it returns short while TCP's queue still holds bytes.
 * Programs read meaning into a short read: libuv (node) takes a short read
 * with POLLHUP for the end of the stream and closes, losing the rest
 * (seen: 2-8 of 10 node connections ended at about 33 MiB of 50 MiB); an
 * edge-triggered reader stops reading and waits for an edge that already
 * came. Plain TCP's read takes every byte queued, up to the length asked.
 *
 * Each subtest: an enrolled pair whose reader (SO_RCVBUF 256 KiB: a budget
 * of 128 KiB, a quarter of the buffer the kernel keeps) reads nothing while 124 KiB
 * are redirected and 8 KiB more go over TCP as a flow-control fallback,
 * then the FIN. Once the FIN is in,
 * one call of the kind named must return all 144 KiB, in order, and the
 * next one 0. The reader's shim decides from the writer's slot when it
 * knows it, else asks the kernel: both ways are tested.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "fltest.h"

#define KiB 1024
#define FL_REDIRECTED (124 * KiB)
#define FL_OVER_TCP (8 * KiB)
#define FL_TOTAL (FL_REDIRECTED + FL_OVER_TCP)
#define FL_SEED 0x5407

enum fl_call { FL_READ, FL_RECV, FL_READV, FL_RECVMSG };

static ssize_t fl_call(enum fl_call how, int fd, uint8_t *buf, size_t len)
{
	struct iovec v[2] = { { buf, len / 3 }, { buf + len / 3, len - len / 3 } };
	struct msghdr m = { .msg_iov = v, .msg_iovlen = 2 };

	switch (how) {
	case FL_READ:
		return read(fd, buf, len);
	case FL_RECV:
		return recv(fd, buf, len, 0);
	case FL_READV:
		return readv(fd, v, 2);
	case FL_RECVMSG:
		break;
	}
	return recvmsg(fd, &m, 0);
}

/* The pair, warmed up (both ends enrolled), the reader's budget 128 KiB:
 * 124 KiB redirected, 8 KiB over TCP (flow control), then the FIN. *c is
 * the writer, *s the reader: the connecting and the accepting end, or the
 * other way round (reversed). The accepting end answered the warm-up once
 * enrolled, so its shim knows the other's slot (its verdict found it) and
 * asks it; the connecting end has sent nothing since it enrolled, so as a
 * reader its shim knows nothing of the writer's slot and asks the kernel.
 * Both ways are tested. */
static int fl_split_pair(int *c, int *s, uint8_t *buf, bool reversed)
{
	int rcvbuf = 256 * KiB, t;
	uint64_t flow0, flow1, red0, red1;
	struct pollfd p;

	FL_T_CHECK(fl_t_tcp_pair(AF_INET, c, s) == 0 && fl_t_warmup(*c, *s) == 0,
		   "connect and warm up a pair");
	if (reversed) {
		t = *c;
		*c = *s;
		*s = t;
	}
	FL_T_CHECK(!setsockopt(*s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), "SO_RCVBUF");
	fl_t_pattern(buf, 0, FL_TOTAL, FL_SEED);
	red0 = fl_t_status_u64("redirected_bytes");
	flow0 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	FL_T_CHECK(write(*c, buf, FL_REDIRECTED) == FL_REDIRECTED, "write the redirected part");
	/* Without waiting: a blocking write would wait for the reader. */
	FL_T_CHECK(send(*c, buf + FL_REDIRECTED, FL_OVER_TCP, MSG_DONTWAIT) == FL_OVER_TCP,
		   "send the part that falls back to TCP: %s", strerror(errno));
	FL_T_CHECK(!shutdown(*c, SHUT_WR), "shutdown");
	p = (struct pollfd){ .fd = *s, .events = POLLIN | POLLRDHUP };
	if (poll(&p, 1, 5000) != 1 || !(p.revents & POLLRDHUP)) {
		struct sockaddr_in a;
		socklen_t al = sizeof(a);

		getsockname(*s, (struct sockaddr *)&a, &al);
		fl_t_sh("ss -tnmi '( sport = :%d or dport = :%d )' >&2", ntohs(a.sin_port), ntohs(a.sin_port));
		FL_T_CHECK(0, "the FIN did not come");
	}
	red1 = fl_t_status_u64("redirected_bytes");
	flow1 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	/* The setup itself: else this would prove nothing. */
	FL_T_CHECK(red1 - red0 >= FL_REDIRECTED && flow1 - flow0 >= FL_OVER_TCP,
		   "setup: %llu bytes redirected and %llu over TCP by flow control, want %d and %d",
		   (unsigned long long)(red1 - red0), (unsigned long long)(flow1 - flow0),
		   FL_REDIRECTED, FL_OVER_TCP);
	return 0;
}

static int fl_one_call_takes_both_queues(enum fl_call how, const char *name, bool reversed)
{
	static uint8_t sent[FL_TOTAL], got[2 * FL_TOTAL];
	int c = -1, s = -1, rc = -1;
	ssize_t n, more;
	int64_t bad;

	if (fl_split_pair(&c, &s, sent, reversed))
		goto out;
	n = fl_call(how, s, got, sizeof(got));
	more = n >= 0 ? fl_call(how, s, got + n, sizeof(got) - (size_t)n) : -1;
	printf("  %s of %zu bytes: %zd, then %zd\n", name, sizeof(got), n, more);
	if (n != FL_TOTAL) {
		fl_t_fail(__FILE__, __LINE__,
			  "%s returned %zd of the %d bytes queued (the next call %zd): a short read with more to read",
			  name, n, FL_TOTAL, more);
		goto out;
	}
	bad = fl_t_pattern_check(got, 0, FL_TOTAL, FL_SEED);
	if (bad >= 0) {
		fl_t_fail(__FILE__, __LINE__, "%s: wrong byte at offset %lld", name, (long long)bad);
		goto out;
	}
	if (more != 0) {
		fl_t_fail(__FILE__, __LINE__, "%s after the last byte returned %zd, want 0 (EOF)", name,
			  more);
		goto out;
	}
	rc = 0;
out:
	if (c >= 0)
		close(c);
	if (s >= 0)
		close(s);
	return rc;
}

static int test_read(void)
{
	return fl_one_call_takes_both_queues(FL_READ, "read()", false);
}

static int test_recv(void)
{
	return fl_one_call_takes_both_queues(FL_RECV, "recv()", false);
}

static int test_readv(void)
{
	return fl_one_call_takes_both_queues(FL_READV, "readv() of two iovecs", false);
}

static int test_recvmsg(void)
{
	return fl_one_call_takes_both_queues(FL_RECVMSG, "recvmsg() of two iovecs", false);
}

static int test_read_by_the_connecting_end(void)
{
	return fl_one_call_takes_both_queues(FL_READ, "read() by the connecting end", true);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	FL_T_RUN("read() after a flow-control fallback takes TCP's bytes behind the redirected ones",
		 test_read);
	FL_T_RUN("so does recv()", test_recv);
	FL_T_RUN("so does readv()", test_readv);
	FL_T_RUN("so does recvmsg()", test_recvmsg);
	FL_T_RUN("so does read() of a reader that has sent nothing since it enrolled (its shim asks "
		 "the kernel, not the writer's slot)",
		 test_read_by_the_connecting_end);
	return fl_t_exit_status();
}
