// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fallback_stall - after a flow-control fallback to a reader that slept,
 * TCP takes the writer's bytes as it would have without the shim: none is
 * dropped at the reader, so none waits for a retransmission.
 *
 * The redirected bytes a reader has not read are charged to its socket's
 * receive memory, and TCP drops a segment that arrives while that memory is
 * above the socket's receive buffer. With a budget of the whole buffer (the
 * maximum of net.ipv4.tcp_rmem, or the application's SO_RCVBUF as the
 * kernel keeps it), or one message larger than the budget, every fallback
 * to a sleeping reader lost the writer's first TCP segments; its
 * retransmissions backed off, and the reader, awake and caught up with the
 * redirected bytes, waited for the next one: 1.5 s after a 2 s sleep, 13 s
 * for the fourth of four connections read one after another.
 *
 * Each subtest: an enrolled pair in a network namespace of its own; the
 * writer sends more than the reader's budget while the reader sleeps (until
 * the writer is blocked, then 600 ms more, so that a lost segment's
 * retransmission has been lost again and backed off); the reader then reads
 * every byte and checks it. Must hold: the fallback happened (else the
 * subtest proves nothing), and TCP's counts of segments dropped for want of
 * receive memory (TcpExt, this namespace's: fl_rcv_mem_drops) did not move. The
 * longest wait in a read is printed, not checked (speed is bench/'s).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "fltest.h"
#include "fltest_netns.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)
#define FL_SEED 0xfa11
#define FL_READ_CHUNK (64 * KiB)

struct fl_writer {
	int fd;
	const uint8_t *buf;
	size_t total;
	bool nonblocking;
	pid_t tid;    /* the writer thread, for fl_t_thread_syscall */
	size_t sent;  /* result */
	int err;      /* errno of a failed call, 0 if none */
};

static void *fl_write_all(void *arg)
{
	struct fl_writer *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLOUT };
	size_t len;
	ssize_t n;

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (w->sent < w->total) {
		/* An event loop's writes: 64 KiB each; a blocking writer's one. */
		len = w->total - w->sent;
		if (w->nonblocking && len > 64 * KiB)
			len = 64 * KiB;
		n = send(w->fd, w->buf + w->sent, len, w->nonblocking ? MSG_DONTWAIT : 0);
		if (n > 0) {
			w->sent += (size_t)n;
		} else if (n < 0 && w->nonblocking && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (poll(&p, 1, 20000) != 1) {
				w->err = ETIMEDOUT;
				break;
			}
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			w->err = n < 0 ? errno : EIO;
			break;
		}
	}
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* The largest receive buffer TCP autotunes to, in this namespace. */
static uint64_t fl_tcp_rmem_max(void)
{
	unsigned long long v[3] = { 0, 0, 0 };
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_rmem", "r");

	if (f) {
		if (fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]) != 3)
			v[2] = 0;
		fclose(f);
	}
	return v[2];
}

/* Segments TCP dropped in this namespace for want of receive memory: in
 * order (TCPRcvQDrop), out of order (TCPOFODrop), after a prune of the
 * queue failed (RcvPruned), or for a closed window (TCPZeroWindowDrop).
 * UINT64_MAX if a count cannot be read. */
static uint64_t fl_rcv_mem_drops(void)
{
	static const char *const names[] = { "TCPRcvQDrop", "TCPOFODrop", "RcvPruned",
					     "TCPZeroWindowDrop" };
	uint64_t sum = 0, v;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		v = fl_t_net_counter("/proc/net/netstat", "TcpExt", names[i]);
		if (v == UINT64_MAX)
			return UINT64_MAX;
		sum += v;
	}
	return sum;
}

/* Sleeps until the writer is blocked in the kernel (its budget passed and
 * the rest handed to TCP), at most 10 s, then 600 ms more. */
static void fl_sleep_past_the_fallback(struct fl_writer *w)
{
	double until = fl_t_now() + 10;
	pid_t tid;

	while (fl_t_now() < until) {
		tid = __atomic_load_n(&w->tid, __ATOMIC_ACQUIRE);
		if (tid && fl_t_thread_syscall(tid) >= 0 &&
		    fl_t_status_u64("passed_bytes_by_reason.flow_control") != 0)
			break;
		usleep(20000);
	}
	usleep(600000);
}

/* Reads to EOF, checking each byte; the longest wait in one read in *gap. */
static int fl_read_all(int fd, size_t total, double *gap)
{
	static uint8_t chunk[FL_READ_CHUNK];
	uint64_t off = 0;
	double last = fl_t_now(), now;
	int64_t bad;
	ssize_t n;

	*gap = 0;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		now = fl_t_now();
		if (now - last > *gap)
			*gap = now - last;
		last = now;
		if (n < 0 && errno == EINTR)
			continue;
		FL_T_CHECK(n >= 0, "read at offset %llu: %s", (unsigned long long)off, strerror(errno));
		if (n == 0)
			break;
		FL_T_CHECK(off + (uint64_t)n <= total, "more bytes than were sent");
		bad = fl_t_pattern_check(chunk, off, (size_t)n, FL_SEED);
		FL_T_CHECK(bad < 0, "wrong byte at offset %llu", (unsigned long long)(off + (uint64_t)bad));
		off += (uint64_t)n;
	}
	FL_T_CHECK(off == total, "the stream ended at %llu of %zu bytes", (unsigned long long)off,
		   total);
	return 0;
}

/* A connected, warmed-up pair whose listener set SO_RCVBUF to rcvbuf
 * before the handshake, as servers do (nginx's listen rcvbuf=, haproxy's
 * tune.rcvbuf): the accepted end inherits it, with the windows of a big
 * buffer from the start. 0 or -1. */
static int fl_pair_listener_rcvbuf(int rcvbuf, int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), rc = -1;

	*c = *s = -1;
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		goto out;
	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	*s = accept(l, NULL, NULL);
	if (*s >= 0 && !fl_t_warmup(*c, *s))
		rc = 0;
out:
	if (l >= 0)
		close(l);
	return rc;
}

/*
 * One subtest: the reader's SO_RCVBUF is rcvbuf (0: none, autotuned), set
 * by the reader (the connecting end) after the warm-up, or, with
 * on_listener, by the listener before the handshake (the accepted end
 * reads, the connecting end writes).
 */
static int fl_no_drop_after_fallback(size_t total, int rcvbuf, bool on_listener, bool nonblocking)
{
	struct fl_writer w = { .fd = -1, .total = total, .nonblocking = nonblocking };
	uint64_t flow0, flow1, drops0, drops1;
	int c = -1, s = -1, rc = -1;
	bool started = false;
	uint8_t *buf = NULL;
	pthread_t th;
	double gap = 0;

	buf = malloc(total);
	if (!buf) {
		fl_t_fail(__FILE__, __LINE__, "setup: malloc(%zu)", total);
		return -1;
	}
	fl_t_pattern(buf, 0, total, FL_SEED);
	if (on_listener ? fl_pair_listener_rcvbuf(rcvbuf, &s, &c) :
			  fl_t_tcp_pair(AF_INET, &c, &s) || fl_t_warmup(c, s)) {
		fl_t_fail(__FILE__, __LINE__, "setup: connect and warm up a pair");
		goto out;
	}
	if (rcvbuf && !on_listener && setsockopt(c, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))) {
		fl_t_fail(__FILE__, __LINE__, "setup: SO_RCVBUF: %s", strerror(errno));
		goto out;
	}
	flow0 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	drops0 = fl_rcv_mem_drops();
	w.fd = s;
	w.buf = buf;
	if (pthread_create(&th, NULL, fl_write_all, &w)) {
		fl_t_fail(__FILE__, __LINE__, "setup: pthread_create");
		goto out;
	}
	started = true;
	fl_sleep_past_the_fallback(&w);
	if (fl_read_all(c, total, &gap))
		goto out;
	pthread_join(th, NULL);
	started = false;
	flow1 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	drops1 = fl_rcv_mem_drops();
	printf("  %zu bytes, %s writer: %llu over TCP by flow control, %llu segments dropped, "
	       "longest wait in a read %.3f s\n",
	       total, nonblocking ? "non-blocking" : "blocking",
	       (unsigned long long)(flow1 - flow0), (unsigned long long)(drops1 - drops0), gap);
	if (w.err || w.sent != total) {
		fl_t_fail(__FILE__, __LINE__, "the writer sent %zu of %zu bytes: %s", w.sent, total,
			  strerror(w.err));
		goto out;
	}
	if (flow0 == UINT64_MAX || flow1 == UINT64_MAX || flow1 == flow0) {
		fl_t_fail(__FILE__, __LINE__, "setup: no flow-control fallback happened");
		goto out;
	}
	if (drops0 == UINT64_MAX || drops1 == UINT64_MAX) {
		fl_t_fail(__FILE__, __LINE__, "setup: the TcpExt drop counts cannot be read");
		goto out;
	}
	if (drops1 != drops0) {
		fl_t_fail(__FILE__, __LINE__,
			  "TCP dropped %llu segments for want of receive memory (redirected bytes "
			  "filled it); the reader waited %.3f s for a retransmission",
			  (unsigned long long)(drops1 - drops0), gap);
		goto out;
	}
	rc = 0;
out:
	if (started) {
		/* A failed read: let the writer end (its peer goes away). */
		if (c >= 0)
			close(c);
		c = -1;
		pthread_join(th, NULL);
	}
	if (c >= 0)
		close(c);
	if (s >= 0)
		close(s);
	free(buf);
	return rc;
}

static int test_blocking_writer_autotuned_reader(void)
{
	return fl_no_drop_after_fallback(fl_tcp_rmem_max() + 8 * MiB, 0, false, false);
}

static int test_nonblocking_writer_autotuned_reader(void)
{
	return fl_no_drop_after_fallback(fl_tcp_rmem_max() + 8 * MiB, 0, false, true);
}

static int test_blocking_writer_reader_with_so_rcvbuf(void)
{
	return fl_no_drop_after_fallback(4 * MiB, 64 * KiB, false, false);
}

static int test_nonblocking_writer_reader_with_so_rcvbuf(void)
{
	return fl_no_drop_after_fallback(4 * MiB, 64 * KiB, false, true);
}

static int test_blocking_writer_reader_with_listener_so_rcvbuf(void)
{
	return fl_no_drop_after_fallback(48 * MiB, 4 * MiB, true, false);
}

static int test_nonblocking_writer_reader_with_listener_so_rcvbuf(void)
{
	return fl_no_drop_after_fallback(48 * MiB, 1 * MiB, true, true);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fl_t_private_netns()) {
		printf("FAIL: setup: a network namespace of its own\n");
		return 1;
	}
	if (!fl_tcp_rmem_max()) {
		printf("FAIL: setup: /proc/sys/net/ipv4/tcp_rmem cannot be read\n");
		return 1;
	}
	FL_T_RUN("a blocking writer past the budget of a sleeping reader: TCP drops nothing after "
		 "the fallback",
		 test_blocking_writer_autotuned_reader);
	FL_T_RUN("so with a non-blocking writer", test_nonblocking_writer_autotuned_reader);
	FL_T_RUN("so with a reader that set SO_RCVBUF to 64 KiB (a fixed buffer; writes larger than "
		 "its budget)",
		 test_blocking_writer_reader_with_so_rcvbuf);
	FL_T_RUN("so with that reader and a non-blocking writer",
		 test_nonblocking_writer_reader_with_so_rcvbuf);
	FL_T_RUN("so with a reader whose listener set SO_RCVBUF to 4 MiB (TCP's window is large "
		 "from the start)",
		 test_blocking_writer_reader_with_listener_so_rcvbuf);
	FL_T_RUN("so with a non-blocking writer and a listener's SO_RCVBUF of 1 MiB",
		 test_nonblocking_writer_reader_with_listener_so_rcvbuf);
	return fl_t_exit_status();
}
