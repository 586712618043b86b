// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * delivery - corked delivery never stalls, loses or duplicates a byte, and
 * honours TCP_NODELAY, TCP_CORK and MSG_MORE (docs/delivery.md).
 *
 * A plain socket program run under the shim. Cases that need another
 * configuration or a process that dies re-run this binary as a child.
 * Delivery is the redirect path's: every connection is warmed up first
 * (fl_t_warmup), which enrolls it in the default configuration.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "fltest.h"

static const char *fl_self;

static int fl_write_all(int fd, const void *p, size_t n, int flags)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, flags);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fl_read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* A loopback pair, warmed up: both ends enrolled, both ways redirecting. */
static int fl_pair(int family, int *c, int *s)
{
	if (fl_t_tcp_pair(family, c, s))
		return -1;
	if (fl_t_warmup(*c, *s)) {
		close(*c);
		close(*s);
		return -1;
	}
	return 0;
}

/* Bytes waiting to be read, without reading them. */
static int fl_readable_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* ------------------------------------------------ a lone buffered write */

struct fl_lone {
	int fd;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int turn, done;
};

/* The writer sends a message the reader has not read yet (so the next one
 * is buffered: the peer is busy), then the lone small one, then waits on a
 * condition variable: a wait the shim cannot see, so only its timer can
 * deliver the lone write. */
static void *fl_lone_writer(void *arg)
{
	struct fl_lone *x = arg;
	char first[100], lone[10];
	int i;

	memset(first, 'f', sizeof(first));
	for (i = 0; i < 1000; i++) {
		snprintf(lone, sizeof(lone), "L%08d", i);
		if (fl_write_all(x->fd, first, sizeof(first), 0) ||
		    fl_write_all(x->fd, lone, sizeof(lone), 0))
			break;
		pthread_mutex_lock(&x->lock);
		while (x->turn == i && !x->done)
			pthread_cond_wait(&x->cv, &x->lock);
		pthread_mutex_unlock(&x->lock);
	}
	return NULL;
}

/* IMPORTANT: the writer waits on a condition variable, so only the shim's
 * own flusher thread (its catch-up poll or its timer) can deliver a lone
 * write: without it the test fails on write 0. The 5 ms figure is a
 * latency, and a test is not a benchmark: on two CPUs shared with other
 * test jobs (and ASan), a woken thread can wait a scheduler slice of a
 * few ms for a CPU, and a CI machine's virtual CPU can stall for tens of
 * ms. So each write must arrive within a second (FL_ARRIVE_MS: a write
 * left behind never arrives) and at most 50 of the 1000 may take over 5
 * ms: a flusher that delivered only at a timer of 100 ms, or at the cork
 * ceiling, would make nearly all of them late. */
#define FL_LONE_WRITES 1000
#define FL_LONE_LATE_MS 5
#define FL_LONE_LATE_MAX 50
#define FL_ARRIVE_MS 1000

static int test_lone_small_write_arrives_within_5ms(void)
{
	struct fl_lone x = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	char buf[110], want[10];
	double worst = 0, t0, t;
	pthread_t th;
	int c, s, i, ok = 1, late = 0;

	FL_T_CHECK(fl_pair(AF_INET, &c, &s) == 0, "no pair");
	x.fd = c;
	pthread_create(&th, NULL, fl_lone_writer, &x);
	for (i = 0; i < FL_LONE_WRITES && ok; i++) {
		ok = fl_read_all(s, buf, 100) == 0;
		t0 = fl_t_now();
		ok = ok && fl_readable_within(s, FL_ARRIVE_MS) && fl_read_all(s, buf + 100, 10) == 0;
		t = fl_t_now() - t0;
		snprintf(want, sizeof(want), "L%08d", i);
		ok = ok && !memcmp(buf + 100, want, 10);
		if (t > worst)
			worst = t;
		late += t > FL_LONE_LATE_MS / 1e3;
		pthread_mutex_lock(&x.lock);
		x.turn = i + 1;
		pthread_cond_signal(&x.cv);
		pthread_mutex_unlock(&x.lock);
	}
	pthread_mutex_lock(&x.lock);
	x.done = 1;
	pthread_cond_signal(&x.cv);
	pthread_mutex_unlock(&x.lock);
	pthread_join(th, NULL);
	printf("  %d lone writes, slowest arrived %.3f ms after the one before it was read, "
	       "%d over %d ms\n", i, worst * 1e3, late, FL_LONE_LATE_MS);
	FL_T_CHECK(ok, "lone write %d did not arrive within %d ms (or arrived wrong)", i - 1,
		   FL_ARRIVE_MS);
	FL_T_CHECK(late <= FL_LONE_LATE_MAX, "%d lone writes took over %d ms (at most %d may)",
		   late, FL_LONE_LATE_MS, FL_LONE_LATE_MAX);
	close(c);
	close(s);
	return 0;
}

/* ------------------------------------------------ request/response */

/* Child: 2000 request/responses of 1..512 bytes with a 100 ms flush timer.
 * Were any message left for the timer, one round trip would take 100 ms.
 * A round trip over 50 ms is counted, not failed at once: a loaded
 * machine can stall one for that long; at most 1% may be (a size left to
 * the timer would be every time it comes round). */
static int fl_rr_child(void)
{
	char req[512], rsp[512], got[512];
	double worst = 0, t0, t;
	int c, s, i, slow = 0;

	if (fl_pair(AF_INET, &c, &s))
		return 2;
	for (i = 0; i < 2000; i++) {
		size_t n = 1 + (size_t)(i * 37) % 512;

		memset(req, 'a' + i % 26, n);
		memset(rsp, 'A' + i % 26, n);
		t0 = fl_t_now();
		if (fl_write_all(c, req, n, 0) || fl_read_all(s, got, n) || memcmp(got, req, n) ||
		    fl_write_all(s, rsp, n, 0) || fl_read_all(c, got, n) || memcmp(got, rsp, n))
			return 3;
		t = fl_t_now() - t0;
		if (t > worst)
			worst = t;
		slow += t >= 0.050;
	}
	printf("  2000 round trips of 1..512 bytes, slowest %.3f ms, %d over 50 ms (flush timer "
	       "100 ms)\n", worst * 1e3, slow);
	return slow <= 20 ? 0 : 4;
}

static int test_request_response_never_waits_for_the_timer(void)
{
	int r = fl_t_sh("FASTLOCAL_FLUSH_USEC=100000 '%s' rr-child", fl_self);

	FL_T_CHECK(r == 0, "a request or response waited for the timer (child status %d)", r);
	return 0;
}

/* ------------------------------------------------ TCP_CORK, MSG_MORE */

static int test_cork_holds_until_uncork(void)
{
	int c, s, on = 1, off = 0;
	char buf[64];

	FL_T_CHECK(fl_pair(AF_INET6, &c, &s) == 0, "no pair");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), "TCP_CORK");
	FL_T_CHECK(!fl_write_all(c, "one,", 4, 0) && !fl_write_all(c, "two,", 4, 0) &&
		   !fl_write_all(c, "three", 5, 0), "writes");
	FL_T_CHECK(!fl_readable_within(s, 50), "corked bytes arrived before uncork");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), "uncork");
	FL_T_CHECK(fl_readable_within(s, 50), "nothing arrived after uncork");
	FL_T_CHECK(read(s, buf, sizeof(buf)) == 13 && !memcmp(buf, "one,two,three", 13),
		   "the pieces did not arrive together and in order");
	close(c);
	close(s);
	return 0;
}

static int test_msg_more_then_send_arrive_together(void)
{
	int c, s;
	char buf[64];

	FL_T_CHECK(fl_pair(AF_INET, &c, &s) == 0, "no pair");
	FL_T_CHECK(!fl_write_all(c, "head|", 5, MSG_MORE), "send with MSG_MORE");
	FL_T_CHECK(!fl_readable_within(s, 20), "MSG_MORE bytes went alone");
	FL_T_CHECK(!fl_write_all(c, "tail", 4, 0), "send");
	FL_T_CHECK(fl_readable_within(s, 50), "nothing arrived after the send");
	FL_T_CHECK(read(s, buf, sizeof(buf)) == 9 && !memcmp(buf, "head|tail", 9),
		   "MSG_MORE and the next send did not arrive together");
	close(c);
	close(s);
	return 0;
}

/* ------------------------------------------------ sendfile under TCP_CORK */

/* A file of n bytes, byte i = i * 7 + 3 (mod 256), unlinked; its fd. */
static int fl_temp_file(size_t n)
{
	char path[] = "/tmp/fl-delivery-XXXXXX", b[4096];
	size_t i, done;
	int f = mkstemp(path);

	if (f < 0)
		return -1;
	unlink(path);
	for (done = 0; done < n; done += sizeof(b)) {
		size_t k = n - done < sizeof(b) ? n - done : sizeof(b);

		for (i = 0; i < k; i++)
			b[i] = (char)((done + i) * 7 + 3);
		if (write(f, b, k) != (ssize_t)k) {
			close(f);
			return -1;
		}
	}
	return f;
}

static bool fl_file_bytes_ok(const char *p, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (char)((off + i) * 7 + 3))
			return false;
	return true;
}

/*
 * A web server's response (nginx with tcp_nopush): headers written under
 * TCP_CORK, the body sent with sendfile(), then uncork. The reader gets it
 * whole, in order, in one read: one redirected message, as TCP sends one
 * segment. Then the same after a MSG_MORE send, without TCP_CORK.
 */
static int test_corked_headers_and_sendfile_body_arrive_as_one_message(void)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
	const size_t hl = sizeof(head) - 1;
	uint64_t m0, c0;
	char buf[8192];
	int c, s, f, on = 1, off = 0, pass;
	off_t pos;

	FL_T_CHECK((f = fl_temp_file(8192)) >= 0, "temp file");
	FL_T_CHECK(fl_pair(AF_INET, &c, &s) == 0, "no pair");
	for (pass = 0; pass < 2; pass++) {
		m0 = fl_t_status_u64("redirected_msgs");
		c0 = fl_t_status_u64("sendfile_copied");
		if (pass == 0) {
			FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), "TCP_CORK");
			FL_T_CHECK(write(c, head, hl) == (ssize_t)hl, "write the headers");
		} else {
			FL_T_CHECK(send(c, head, hl, MSG_MORE) == (ssize_t)hl, "send with MSG_MORE");
		}
		pos = 100;
		FL_T_CHECK(sendfile(c, f, &pos, 1000) == 1000, "sendfile: %s", strerror(errno));
		FL_T_CHECK(pos == 1100, "sendfile left the offset at %lld", (long long)pos);
		if (pass == 0) {
			FL_T_CHECK(!fl_readable_within(s, 50), "corked bytes arrived before uncork");
			FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), "uncork");
		}
		FL_T_CHECK(fl_readable_within(s, 1000), "nothing arrived");
		FL_T_CHECK(read(s, buf, sizeof(buf)) == (ssize_t)(hl + 1000),
			   "the response did not arrive whole in one read");
		FL_T_CHECK(!memcmp(buf, head, hl) && fl_file_bytes_ok(buf + hl, 100, 1000),
			   "wrong bytes");
		FL_T_CHECK(fl_t_status_u64("redirected_msgs") - m0 == 1,
			   "%llu messages for one response",
			   (unsigned long long)(fl_t_status_u64("redirected_msgs") - m0));
		FL_T_CHECK(fl_t_status_u64("sendfile_copied") - c0 == 1,
			   "the body was not sent with the buffer");
	}
	/* Past the end of the file, corked: a short count, as TCP's. */
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), "TCP_CORK");
	FL_T_CHECK(write(c, head, hl) == (ssize_t)hl, "write the headers");
	pos = 8192 - 10;
	FL_T_CHECK(sendfile(c, f, &pos, 1000) == 10 && pos == 8192, "sendfile past the end");
	FL_T_CHECK(sendfile(c, f, &pos, 1000) == 0, "sendfile at the end");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), "uncork");
	FL_T_CHECK(fl_read_all(s, buf, hl + 10) == 0 && !memcmp(buf, head, hl) &&
		   fl_file_bytes_ok(buf + hl, 8182, 10), "wrong bytes past the end");
	close(f);
	close(c);
	close(s);
	return 0;
}

/* ------------------------------------------------ NODELAY, batching counts */

/* 10000 writes of 64 bytes at a reader that reads in bulk: batched, they
 * are a few messages; with TCP_NODELAY, one message per write. */
static int fl_count_messages(int nodelay, uint64_t *msgs)
{
	static char buf[64 * 10000];
	uint64_t m0 = fl_t_status_u64("redirected_msgs");
	int c, s, i, one = 1;

	if (fl_pair(AF_INET, &c, &s))
		return -1;
	if (nodelay)
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Prime: the peer has one message unread, so it is busy. */
	if (fl_write_all(c, buf, 64, 0))
		return -1;
	for (i = 0; i < 10000; i++)
		if (fl_write_all(c, buf + i * 64, 64, 0))
			return -1;
	if (fl_read_all(s, buf, sizeof(buf)) || fl_read_all(s, buf, 64))
		return -1;
	*msgs = fl_t_status_u64("redirected_msgs") - m0;
	close(c);
	close(s);
	return 0;
}

static int test_small_writes_to_a_busy_reader_are_batched(void)
{
	uint64_t batched, nodelay;

	FL_T_CHECK_EQ(fl_count_messages(0, &batched), 0, "default stream failed");
	FL_T_CHECK_EQ(fl_count_messages(1, &nodelay), 0, "TCP_NODELAY stream failed");
	printf("  10001 writes of 64 bytes: %llu messages by default, %llu with TCP_NODELAY\n",
	       (unsigned long long)batched, (unsigned long long)nodelay);
	FL_T_CHECK(batched <= 100, "default mode sent %llu messages for 10001 small writes",
		   (unsigned long long)batched);
	FL_T_CHECK(nodelay <= 1000, "TCP_NODELAY sent %llu messages for 10001 small writes",
		   (unsigned long long)nodelay);
	return 0;
}

/* With TCP_NODELAY, a write to a reader that has read everything is in the
 * reader's queue when write() returns: looked at with FIONREAD, which
 * flushes nothing (a read of this process would flush its buffers). */
static int test_nodelay_write_to_an_idle_reader_goes_at_once(void)
{
	char buf[64];
	int c, s, i, one = 1, n;

	FL_T_CHECK(fl_pair(AF_INET, &c, &s) == 0, "no pair");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), "TCP_NODELAY");
	for (i = 0; i < 1000; i++) {
		memset(buf, 'a' + i % 26, sizeof(buf));
		FL_T_CHECK(!fl_write_all(c, buf, sizeof(buf), 0), "write %d", i);
		FL_T_CHECK(!ioctl(s, FIONREAD, &n), "FIONREAD");
		FL_T_CHECK(n == (int)sizeof(buf), "write %d: %d bytes readable at once, want 64", i, n);
		FL_T_CHECK(!fl_read_all(s, buf, sizeof(buf)) && buf[0] == 'a' + i % 26 &&
			   buf[63] == 'a' + i % 26, "write %d: wrong bytes", i);
	}
	close(c);
	close(s);
	return 0;
}

/* Child: with a 100 ms flush timer, writes two 64-byte messages back to
 * back under TCP_NODELAY (the second finds the first unread, so it waits),
 * says so on stdout, then sleeps: no write, read or wait of its own flushes
 * for it. */
static int fl_nodelay_child(int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char a[64], b[64], go[2];
	int c, one = 1;

	if (fl_t_sockaddr(AF_INET, NULL, (uint16_t)port, &ss, &len))
		return 2;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len) || fl_t_warmup_half(c, 1) ||
	    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) || fl_read_all(c, go, 2))
		return 2;
	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	if (fl_write_all(c, a, sizeof(a), 0) || fl_write_all(c, b, sizeof(b), 0))
		return 2;
	printf("written\n");
	fflush(stdout);
	sleep(1);
	close(c);
	return 0;
}

/* The child's flush timer in the held-message test: the longest there is. */
#define FL_HELD_TIMER_MS 100

/* One try; *late: the flush timer ran before this reader looked (both
 * messages readable at once), or the held message came too late to tell
 * it from the timer's, so the try proves nothing either way. */
static int fl_held_once(int *late)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char buf[64], line[16], cmd[512];
	uint64_t timer0 = fl_t_status_u64("batching.flushes_by_reason.timer");
	double t0, t;
	int l, s, port, n;
	FILE *child;

	FL_T_CHECK(timer0 != UINT64_MAX, "status --json has no batching.flushes_by_reason.timer");
	FL_T_CHECK(fl_t_sockaddr(AF_INET, NULL, 0, &ss, &len) == 0, "address");
	l = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(!bind(l, (struct sockaddr *)&ss, len) && !listen(l, 1) &&
		   !getsockname(l, (struct sockaddr *)&ss, &len), "listen");
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	snprintf(cmd, sizeof(cmd), "FASTLOCAL_FLUSH_USEC=%d '%s' nodelay-child %d",
		 FL_HELD_TIMER_MS * 1000, fl_self, port);
	fflush(stdout);
	child = popen(cmd, "r");
	FL_T_CHECK(child, "spawn");
	s = accept(l, NULL, NULL);
	FL_T_CHECK(s >= 0 && fl_t_warmup_half(s, 0) == 0, "accept and warm-up");
	FL_T_CHECK(!fl_write_all(s, "go", 2, 0), "go");
	FL_T_CHECK(fgets(line, sizeof(line), child) && !strcmp(line, "written\n"),
		   "the child did not write");
	/* The second message waits in the child while the first is unread. */
	FL_T_CHECK(!ioctl(s, FIONREAD, &n), "FIONREAD");
	if (n == 128 && fl_t_status_u64("batching.flushes_by_reason.timer") > timer0) {
		*late = 1;
		pclose(child);
		close(s);
		close(l);
		return 0;
	}
	FL_T_CHECK(n == 64, "%d bytes readable, want the first 64 only", n);
	FL_T_CHECK(!fl_read_all(s, buf, 64) && buf[0] == 'A' && buf[63] == 'A', "first message");
	t0 = fl_t_now();
	FL_T_CHECK(fl_readable_within(s, 2000), "the held message never came");
	t = fl_t_now() - t0;
	FL_T_CHECK(!fl_read_all(s, buf, 64) && buf[0] == 'B' && buf[63] == 'B', "second message");
	printf("  the held message came %.3f ms after its reader caught up (flush timer 100 ms)\n",
	       t * 1e3);
	/* Delivered by the catch-up, not by the 100 ms timer, which would
	 * send it about 100 ms after the child wrote it: later than half that
	 * after this reader caught up is the timer (or a stall of this
	 * process: a try that proves nothing, made again). The shared
	 * counters cannot tell: this process's own flusher counts there too. */
	if (t >= FL_HELD_TIMER_MS / 2 / 1e3) {
		*late = 1;
		pclose(child);
		close(s);
		close(l);
		return 0;
	}
	FL_T_CHECK(pclose(child) == 0, "the child failed");
	close(s);
	close(l);
	return 0;
}

/* IMPORTANT: the child's flush timer is the longest there is (100 ms), and
 * a machine that stalls this process longer than that between the child's
 * writes and the FIONREAD lets the timer deliver first: such a try is
 * told (both messages readable and a timer flush counted, or the held
 * message later than 50 ms) and made again, up to three times. If the
 * catch-up never sends it, every try is late and the subtest fails. */
static int test_nodelay_write_held_for_a_busy_reader_goes_when_it_catches_up(void)
{
	int attempt, late, r;

	for (attempt = 1; attempt <= 3; attempt++) {
		late = 0;
		r = fl_held_once(&late);
		if (r || !late)
			return r;
		printf("  try %d: the flush timer ran before the reader looked, or the held "
		       "message came late (a stall?); again\n", attempt);
	}
	FL_T_CHECK(0, "three tries in a row, the held message came with the flush timer, not "
		   "when its reader caught up");
	return 0;
}

/* ------------------------------------------------ stdio on the same socket */

/* write() and a stdio FILE (fdopen of a dup) on one socket, alternating:
 * glibc writes the FILE through its internal __write, which the shim never
 * sees, so buffering write() would let the FILE's bytes overtake. */
static int test_stdio_and_write_keep_their_order(void)
{
	char want[10 * 2000 + 1], got[10 * 2000];
	FILE *f;
	int c, s, i;

	FL_T_CHECK(fl_pair(AF_INET, &c, &s) == 0, "no pair");
	f = fdopen(dup(c), "w");
	FL_T_CHECK(f, "fdopen");
	for (i = 0; i < 1000; i++) {
		char w[11];

		snprintf(w, sizeof(w), "w%08d|", i);
		FL_T_CHECK(!fl_write_all(c, w, 10, 0), "write");
		FL_T_CHECK(fprintf(f, "f%08d|", i) == 10 && fflush(f) == 0, "fprintf");
		memcpy(want + 20 * i, w, 10);
		snprintf(want + 20 * i + 10, 11, "f%08d|", i);
	}
	FL_T_CHECK_EQ(fl_read_all(s, got, sizeof(got)), 0, "read");
	FL_T_CHECK(!memcmp(got, want, sizeof(got)), "stdio and write() bytes arrived out of order");
	fclose(f);
	close(c);
	close(s);
	return 0;
}

/* ------------------------------------------------ exit, _exit, exec, fork */

/* Child: connect to port, write a 100-byte message and a buffered 10-byte
 * one, then leave in the way named by how. */
static int fl_leaver_child(const char *how, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char first[100], lone[10];
	int c;

	if (fl_t_sockaddr(AF_INET, NULL, (uint16_t)port, &ss, &len))
		return 2;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len) || fl_t_warmup_half(c, 1))
		return 2;
	memset(first, 'f', sizeof(first));
	memcpy(lone, "lone-bytes", 10);
	/* A round trip first: whichever end enrolled first waits outside the
	 * sockhash until its next call after the other enrolled (design.md,
	 * "Joining"), so that the writes below are redirected and the second
	 * one is buffered. */
	if (fl_read_all(c, first, 2) || fl_write_all(c, "ok", 2, 0) || fl_read_all(c, first, 2))
		return 2;
	if (fl_write_all(c, first, sizeof(first), 0) || fl_write_all(c, lone, sizeof(lone), 0))
		return 2;
	if (!strcmp(how, "exit"))
		exit(0);
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "exec"))
		execl("/bin/true", "true", (char *)NULL);
	if (!strcmp(how, "fork")) {
		pid_t p = fork();

		if (p == 0)
			_exit(0); /* the child leaves at once: it must send nothing */
		waitpid(p, NULL, 0);
		_exit(0);
	}
	return 2;
}

static int fl_leave(const char *how)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char buf[256], ports[16];
	size_t got = 0;
	ssize_t r;
	int l, s, port, st = -1;
	pid_t leaver;
	uint64_t red0 = fl_t_status_u64("redirected_bytes");

	FL_T_CHECK(fl_t_sockaddr(AF_INET, NULL, 0, &ss, &len) == 0, "address");
	l = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(!bind(l, (struct sockaddr *)&ss, len) && !listen(l, 1) &&
		   !getsockname(l, (struct sockaddr *)&ss, &len), "listen");
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	/* A child of this process, waited for below: started through a shell
	 * in the background, it was left to init, and ended as a zombie the
	 * test runner had to kill. */
	snprintf(ports, sizeof(ports), "%d", port);
	fflush(stdout);
	leaver = fork();
	FL_T_CHECK(leaver >= 0, "fork: %s", strerror(errno));
	if (!leaver) {
		execl(fl_self, fl_self, "leaver", how, ports, (char *)NULL);
		_exit(127);
	}
	s = accept(l, NULL, NULL);
	FL_T_CHECK(s >= 0 && fl_t_warmup_half(s, 0) == 0, "accept and warm-up");
	FL_T_CHECK(fl_write_all(s, "hi", 2, 0) == 0 && fl_read_all(s, buf, 2) == 0 &&
		   fl_write_all(s, "go", 2, 0) == 0, "the round trip before the test failed");
	while ((r = read(s, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)r;
	FL_T_CHECK(r == 0, "read failed: %s", strerror(errno));
	FL_T_CHECK(got == 110, "%s right after a write: read %zu bytes, expected 110", how, got);
	FL_T_CHECK(!memcmp(buf + 100, "lone-bytes", 10), "%s: wrong bytes", how);
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") - red0 >= 100, "%s: nothing was redirected",
		   how);
	FL_T_CHECK(waitpid(leaver, &st, 0) == leaver && WIFEXITED(st) && !WEXITSTATUS(st),
		   "%s: the leaving child ended with status %#x", how, st);
	close(s);
	close(l);
	return 0;
}

static int test_leaving_right_after_a_write(void)
{
	static const char *hows[] = { "exit", "_exit", "exec", "fork" };
	size_t i;

	for (i = 0; i < sizeof(hows) / sizeof(hows[0]); i++)
		if (fl_leave(hows[i]))
			return -1;
	return 0;
}

/* ------------------------------------------------ threads */

#define WRITERS 4
#define RECORDS 50000

struct fl_rec_writer {
	int fd, id, err;
};

static void *fl_rec_write(void *arg)
{
	struct fl_rec_writer *w = arg;
	char rec[32];
	int i;

	for (i = 0; i < RECORDS && !w->err; i++) {
		snprintf(rec, sizeof(rec), "%d:%09d:abcdefghijklmnop", w->id, i);
		w->err = fl_write_all(w->fd, rec, sizeof(rec), i % 3 == 2 ? MSG_MORE : 0);
	}
	/* a final write without MSG_MORE sends anything still corked */
	return NULL;
}

static int test_threads_never_stall(void)
{
	struct fl_rec_writer w[WRITERS];
	pthread_t th[WRITERS];
	int next[WRITERS] = { 0 }, c, s, i, id, seq;
	char rec[32];
	double t0 = fl_t_now();
	long n;

	FL_T_CHECK(fl_pair(AF_INET, &c, &s) == 0, "no pair");
	for (i = 0; i < WRITERS; i++) {
		w[i] = (struct fl_rec_writer){ .fd = c, .id = i };
		pthread_create(&th[i], NULL, fl_rec_write, &w[i]);
	}
	for (n = 0; n < (long)WRITERS * RECORDS; n++) {
		FL_T_CHECK(fl_readable_within(s, 2000), "stalled after %ld records", n);
		FL_T_CHECK(fl_read_all(s, rec, sizeof(rec)) == 0, "read");
		FL_T_CHECK(sscanf(rec, "%d:%d:", &id, &seq) == 2 && id >= 0 && id < WRITERS &&
			   seq == next[id] && !memcmp(rec + 12, "abcdefghijklmnop", 16),
			   "record %ld broken or out of order: %.32s", n, rec);
		next[id]++;
	}
	for (i = 0; i < WRITERS; i++) {
		pthread_join(th[i], NULL);
		FL_T_CHECK(!w[i].err, "writer %d failed", i);
	}
	printf("  %d threads x %d records of 32 bytes (every third with MSG_MORE) in %.2fs\n",
	       WRITERS, RECORDS, fl_t_now() - t0);
	close(c);
	close(s);
	return 0;
}

/* ------------------------------------------------ a batch left to its writer */

#define FL_HAND_STREAM (8u << 20) /* bytes streamed before the bursts */
#define FL_HAND_BURSTS 2000

struct fl_hand {
	int fd, err;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int acked;          /* bursts the reader has read in full */
	double end[FL_HAND_BURSTS]; /* when the writer's last write of each returned */
};

static unsigned char fl_hand_byte(uint64_t pos)
{
	return (unsigned char)(pos % 251);
}

/* Writes in a burst: 1 to 200, a fixed sequence. */
static int fl_hand_writes(int burst)
{
	return 1 + (burst * 37) % 200;
}

static int fl_hand_write(struct fl_hand *x, uint64_t *pos)
{
	unsigned char w[64];
	size_t i;

	for (i = 0; i < sizeof(w); i++)
		w[i] = fl_hand_byte(*pos + i);
	*pos += sizeof(w);
	return fl_write_all(x->fd, w, sizeof(w), 0);
}

/* First a stream of 64 B writes, then bursts: after each the writer waits
 * on a condition variable (a wait the shim cannot see) until the reader
 * has read it all. */
static void *fl_hand_writer(void *arg)
{
	struct fl_hand *x = arg;
	uint64_t pos = 0;
	int b, i;

	while (pos < FL_HAND_STREAM && !x->err)
		x->err = fl_hand_write(x, &pos);
	for (b = 0; b < FL_HAND_BURSTS && !x->err; b++) {
		for (i = 0; i < fl_hand_writes(b) && !x->err; i++)
			x->err = fl_hand_write(x, &pos);
		pthread_mutex_lock(&x->lock);
		x->end[b] = fl_t_now();
		while (x->acked <= b && !x->err)
			pthread_cond_wait(&x->cv, &x->lock);
		pthread_mutex_unlock(&x->lock);
	}
	return NULL;
}

/* Reads up to pos == until, checking every byte. */
static int fl_hand_read(int fd, uint64_t *pos, uint64_t until)
{
	unsigned char buf[65536];

	while (*pos < until) {
		size_t want = until - *pos < sizeof(buf) ? (size_t)(until - *pos) : sizeof(buf);
		ssize_t r = read(fd, buf, want);
		ssize_t i;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		for (i = 0; i < r; i++)
			if (buf[i] != fl_hand_byte(*pos + (uint64_t)i))
				return -2;
		*pos += (uint64_t)r;
	}
	return 0;
}

/*
 * IMPORTANT: the reader thread and the writer thread share the process, so
 * the reader's every read would flush the writer's batch (docs/delivery.md,
 * rule 3) but for the batches it leaves to the writer while it writes
 * (handed_off). The stream shows that happens and loses nothing. The
 * bursts show that a batch left to a writer that then stops (it waits on a
 * condition variable, which the shim cannot see) still arrives: by the
 * writer's catch-up check or the flusher's timer. Each burst's tail must
 * arrive within a second, the lone write's bound, and all but 5% within 5
 * ms (a woken thread on two CPUs busy with other test jobs can wait a
 * scheduler slice: 7 of 2000 did under ASan). Shown able to fail: with
 * FASTLOCAL_FLUSH_USEC=100000 a tail left to its stopped writer took 100 ms.
 */
#define FL_HAND_LATE_MAX (FL_HAND_BURSTS / 20)
static int test_a_reader_thread_leaves_a_batch_to_the_thread_writing_it(void)
{
	static struct fl_hand x = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	uint64_t h0 = fl_t_status_u64("batching.handed_off"), pos = 0, until = FL_HAND_STREAM;
	struct timeval tmo = { .tv_sec = 5 };
	double worst = 0, t;
	int c, s, b, late = 0, r;
	pthread_t th;

	FL_T_CHECK(h0 != UINT64_MAX, "fastlocal status has no batching.handed_off");
	FL_T_CHECK(fl_pair(AF_INET, &c, &s) == 0, "no pair");
	/* A byte left behind fails a read in 5 s. Not poll(): a wait the shim
	 * sees flushes whatever is buffered, and would hide it. */
	FL_T_CHECK(!setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)), "SO_RCVTIMEO");
	x.fd = c;
	pthread_create(&th, NULL, fl_hand_writer, &x);
	r = fl_hand_read(s, &pos, until);
	FL_T_CHECK(r == 0, "the stream broke at byte %llu (%s)", (unsigned long long)pos,
		   r == -2 ? "wrong byte" : "no byte for 5 s, or read failed");
	for (b = 0; b < FL_HAND_BURSTS; b++) {
		until += 64u * (uint64_t)fl_hand_writes(b);
		r = fl_hand_read(s, &pos, until);
		FL_T_CHECK(r == 0, "burst %d broke at byte %llu (%s)", b, (unsigned long long)pos,
			   r == -2 ? "wrong byte" : "no byte for 5 s, or read failed");
		pthread_mutex_lock(&x.lock);
		while (x.end[b] == 0) { /* its last write has not returned yet */
			pthread_mutex_unlock(&x.lock);
			sched_yield();
			pthread_mutex_lock(&x.lock);
		}
		t = fl_t_now() - x.end[b];
		x.acked = b + 1;
		pthread_cond_signal(&x.cv);
		pthread_mutex_unlock(&x.lock);
		if (t > worst)
			worst = t;
		late += t > FL_LONE_LATE_MS / 1e3;
		FL_T_CHECK(t < FL_ARRIVE_MS / 1e3, "burst %d's tail came %.1f ms after its last write",
			   b, t * 1e3);
	}
	pthread_join(th, NULL);
	FL_T_CHECK(!x.err, "the writer failed");
	printf("  %u bytes streamed and %d bursts, %llu batches left to the writer; slowest "
	       "burst tail %.2f ms, %d over %d ms\n", FL_HAND_STREAM, FL_HAND_BURSTS,
	       (unsigned long long)(fl_t_status_u64("batching.handed_off") - h0), worst * 1e3, late,
	       FL_LONE_LATE_MS);
	FL_T_CHECK(fl_t_status_u64("batching.handed_off") > h0,
		   "no batch was left to its writer: the reader flushed them all");
	FL_T_CHECK(late <= FL_HAND_LATE_MAX, "%d burst tails took over %d ms (at most %d may)", late,
		   FL_LONE_LATE_MS, FL_HAND_LATE_MAX);
	close(c);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	fl_self = argv[0];
	if (argc > 1 && !strcmp(argv[1], "rr-child"))
		return fl_rr_child();
	if (argc > 2 && !strcmp(argv[1], "nodelay-child"))
		return fl_nodelay_child(atoi(argv[2]));
	if (argc > 3 && !strcmp(argv[1], "leaver"))
		return fl_leaver_child(argv[2], atoi(argv[3]));
	FL_T_RUN("a lone small write arrives with no write after it, 950 of 1000 within 5 ms",
		 test_lone_small_write_arrives_within_5ms);
	FL_T_RUN("request/response of 1..512 bytes never waits for the flush timer",
		 test_request_response_never_waits_for_the_timer);
	FL_T_RUN("TCP_CORK pieces arrive only after uncork, together",
		 test_cork_holds_until_uncork);
	FL_T_RUN("MSG_MORE followed by a normal send arrive together",
		 test_msg_more_then_send_arrive_together);
	FL_T_RUN("corked headers and a sendfile() body arrive as one message, in order",
		 test_corked_headers_and_sendfile_body_arrive_as_one_message);
	FL_T_RUN("small writes to a busy reader are batched, with TCP_NODELAY too",
		 test_small_writes_to_a_busy_reader_are_batched);
	FL_T_RUN("with TCP_NODELAY a write to a reader that read everything goes at once",
		 test_nodelay_write_to_an_idle_reader_goes_at_once);
	FL_T_RUN("with TCP_NODELAY a write held for a busy reader goes when it catches up",
		 test_nodelay_write_held_for_a_busy_reader_goes_when_it_catches_up);
	FL_T_RUN("write() and a stdio FILE on one socket keep their order",
		 test_stdio_and_write_keep_their_order);
	FL_T_RUN("exit, _exit, exec and fork right after a write lose and duplicate nothing",
		 test_leaving_right_after_a_write);
	FL_T_RUN("four writer threads and a reader thread never stall, records intact",
		 test_threads_never_stall);
	FL_T_RUN("a reader thread leaves a batch to the thread writing it, and a burst's tail "
		 "still arrives when the writer stops",
		 test_a_reader_thread_leaves_a_batch_to_the_thread_writing_it);
	return fl_t_exit_status();
}
