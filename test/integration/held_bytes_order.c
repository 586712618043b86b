// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * held_bytes_order - bytes the shim holds for a non-blocking writer go
 * before anything the writer sends after them, and before its FIN.
 *
 * Under TCP_CORK (nginx's tcp_nopush) the shim holds written bytes, and
 * a small sendfile() too (read into the buffer, tx.c). A call that goes
 * to the kernel as it is (a larger sendfile, splice, an addressed sendto)
 * or a shutdown() first pushes what is held; a sendmmsg() goes through the
 * shim's buffer like sendmsg(). On a non-blocking socket
 * whose send buffer is full that push takes nothing, and the call used
 * to go anyway: a sendfile that found room a moment later overtook the
 * held bytes (nginx sent one 4 KiB page of a 64 MiB file behind the next
 * 64 KiB, about once in 180 transfers), and a shutdown sent its FIN
 * before them, which were then lost. Checked with default settings on
 * enrolled sockets, by the bytes the reader gets.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "fltest.h"

#define FL_FILE (4u << 20) /* the file sent, over and over */
#define FL_SECS 2.0        /* how long the writer sends it */

/* The file's bytes, also kept in memory for the reader's check. */
static uint8_t *fl_content;

/* A file of FL_FILE bytes of xorshift noise (so that a page in the wrong
 * place never matches), unlinked; its fd. */
static int fl_noise_file(void)
{
	char path[] = "/tmp/fl-held-order-XXXXXX";
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t i;
	int f;

	fl_content = malloc(FL_FILE);
	if (!fl_content)
		return -1;
	for (i = 0; i < FL_FILE; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fl_content[i] = (uint8_t)x;
	}
	f = mkstemp(path);
	if (f < 0)
		return -1;
	unlink(path);
	if (write(f, fl_content, FL_FILE) != (ssize_t)FL_FILE) {
		close(f);
		return -1;
	}
	return f;
}

struct fl_reader {
	int fd;
	uint64_t got;     /* bytes read and checked */
	int64_t bad;      /* stream offset of the first wrong byte, or -1 */
	int eof;
	int wait_go;      /* first waits for go, at most 2 s */
	int go;           /* set by the test thread (atomic) */
	int self_started; /* it waited 2 s for go and started anyway */
};

/* Reads to EOF; every byte at stream offset o must be the file's byte
 * o % FL_FILE (the writer sends the file from its start, again and again). */
static void *fl_reader_main(void *arg)
{
	struct fl_reader *r = arg;
	static uint8_t buf[64 * 1024];
	ssize_t n, i;

	r->bad = -1;
	if (r->wait_go) {
		double end = fl_t_now() + 2;

		while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE) && fl_t_now() < end)
			usleep(1000);
		r->self_started = !__atomic_load_n(&r->go, __ATOMIC_ACQUIRE);
	}
	for (;;) {
		n = recv(r->fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->eof = n == 0;
			break;
		}
		for (i = 0; i < n && r->bad < 0; i++)
			if (buf[i] != fl_content[(r->got + (uint64_t)i) % FL_FILE])
				r->bad = (int64_t)(r->got + (uint64_t)i);
		r->got += (uint64_t)n;
	}
	return NULL;
}

static void fl_wait_writable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	poll(&p, 1, 1000);
}

/* A pair enrolled with default settings: c writes, s reads. */
static int fl_pair(int *c, int *s)
{
	if (fl_t_tcp_pair(AF_INET, c, s) || fl_t_warmup(*c, *s))
		return -1;
	return 0;
}

/* An enrolled pair whose writer c is non-blocking under TCP_CORK, and a
 * reader thread r on s, started. */
static int fl_corked_pair(int *c, int *s, struct fl_reader *r, pthread_t *th)
{
	int on = 1;

	if (fl_pair(c, s) || setsockopt(*c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)) ||
	    fcntl(*c, F_SETFL, O_NONBLOCK))
		return -1;
	r->fd = *s;
	return pthread_create(th, NULL, fl_reader_main, r) ? -1 : 0;
}

/*
 * nginx's pattern: a non-blocking socket under TCP_CORK, the file sent by
 * sendfile() in a small piece (which the shim reads into its buffer) and
 * a large one (which goes to the kernel), each retried after EAGAIN as
 * an event loop does (at once), while the reader reads as fast as it
 * can. Its send buffer is full most of the time, so the push before the
 * large piece often takes nothing; the reader must still get the file's
 * bytes in order.
 */
static int test_a_sendfile_never_overtakes_held_bytes(void)
{
	struct fl_reader r = { 0 };
	pthread_t th;
	uint64_t sent = 0, copied0 = fl_t_status_u64("sendfile_copied");
	off_t pos = 0;
	double end;
	int c, s, f, off = 0, small = 1;
	unsigned retries = 0;
	ssize_t n = 1;

	FL_T_CHECK((f = fl_noise_file()) >= 0, "the file");
	FL_T_CHECK(fl_corked_pair(&c, &s, &r, &th) == 0, "a corked non-blocking pair and its reader");
	end = fl_t_now() + FL_SECS;
	while (fl_t_now() < end) {
		size_t want = small ? 4096 : 256 * 1024;

		if (pos == FL_FILE)
			pos = 0;
		if (want > FL_FILE - (size_t)pos)
			want = FL_FILE - (size_t)pos;
		n = sendfile(c, f, &pos, want);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* At once again, not after poll(): room that comes
			 * between the shim's push and its sendfile is what
			 * this looks for, and a retry per microsecond finds
			 * it within a second or two. */
			if (++retries % 4096 == 0)
				fl_wait_writable(c);
			continue;
		}
		if (n <= 0)
			break;
		sent += (uint64_t)n;
		small = !small;
	}
	FL_T_CHECK(n > 0 || errno == EAGAIN, "sendfile: %s", strerror(errno));
	/* Uncorking pushes what is held; a blocking socket's shutdown then
	 * waits for room as TCP's close does not need to. */
	FL_T_CHECK(fcntl(c, F_SETFL, 0) == 0, "blocking again");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), "uncork");
	FL_T_CHECK(shutdown(c, SHUT_WR) == 0, "shutdown: %s", strerror(errno));
	pthread_join(th, NULL);
	FL_T_CHECK(fl_t_status_u64("sendfile_copied") > copied0,
		   "no small sendfile went into the shim's buffer: the test tests nothing");
	FL_T_CHECK(r.bad < 0, "byte %lld of %llu read is wrong (a held piece was overtaken)",
		   (long long)r.bad, (unsigned long long)r.got);
	FL_T_CHECK(r.eof && r.got == sent, "the reader got %llu bytes of %llu sent (EOF %d)",
		   (unsigned long long)r.got, (unsigned long long)sent, r.eof);
	close(c);
	close(s);
	close(f);
	free(fl_content);
	return 0;
}

/*
 * The same with splice() from a pipe for the large pieces (haproxy's
 * way) and write() for the small ones, which the shim holds under
 * TCP_CORK.
 */
static int test_a_splice_never_overtakes_held_bytes(void)
{
	struct fl_reader r = { 0 };
	uint64_t sent = 0;
	size_t inpipe = 0;
	unsigned retries = 0;
	pthread_t th;
	double end;
	int c, s, p[2], off = 0, small = 1;
	ssize_t n = 1;

	FL_T_CHECK(fl_noise_file() >= 0, "the file");
	FL_T_CHECK(pipe(p) == 0, "a pipe");
	FL_T_CHECK(fl_corked_pair(&c, &s, &r, &th) == 0, "a corked non-blocking pair and its reader");
	end = fl_t_now() + FL_SECS;
	while (fl_t_now() < end) {
		size_t at = sent % FL_FILE, k = small ? 4096 : 64 * 1024;

		if (k > FL_FILE - at)
			k = FL_FILE - at;
		if (small) {
			n = send(c, fl_content + at, k, 0);
		} else {
			if (!inpipe) {
				FL_T_CHECK(write(p[1], fl_content + at, k) == (ssize_t)k, "into the pipe");
				inpipe = k;
			}
			n = splice(p[0], NULL, c, NULL, inpipe, SPLICE_F_NONBLOCK);
			if (n > 0)
				inpipe -= (size_t)n;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (++retries % 4096 == 0) /* as above: retried at once */
				fl_wait_writable(c);
			continue;
		}
		if (n <= 0)
			break;
		sent += (uint64_t)n;
		if (!inpipe)
			small = !small;
	}
	FL_T_CHECK(n > 0 || errno == EAGAIN, "send or splice: %s", strerror(errno));
	FL_T_CHECK(fcntl(c, F_SETFL, 0) == 0, "blocking again");
	while (inpipe && (n = splice(p[0], NULL, c, NULL, inpipe, 0)) > 0) {
		inpipe -= (size_t)n;
		sent += (uint64_t)n;
	}
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), "uncork");
	FL_T_CHECK(shutdown(c, SHUT_WR) == 0, "shutdown: %s", strerror(errno));
	pthread_join(th, NULL);
	FL_T_CHECK(r.bad < 0, "byte %lld of %llu read is wrong (a held piece was overtaken)",
		   (long long)r.bad, (unsigned long long)r.got);
	FL_T_CHECK(r.eof && r.got == sent, "the reader got %llu bytes of %llu sent (EOF %d)",
		   (unsigned long long)r.got, (unsigned long long)sent, r.eof);
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	free(fl_content);
	return 0;
}

/*
 * Makes c (enrolled, its reader not reading) non-blocking and fills it,
 * the reader's budget, then TCP's window and send buffer, from the file's
 * start; then 100 more bytes under TCP_CORK, which the shim holds: the
 * kernel has no room for them. *sent: every byte written.
 */
static int fl_full_and_held(int c, uint64_t *sent)
{
	static uint8_t chunk[64 * 1024];
	int on = 1, spins = 0;
	ssize_t n;

	FL_T_CHECK(fcntl(c, F_SETFL, O_NONBLOCK) == 0, "O_NONBLOCK");
	for (;;) {
		size_t at = *sent % FL_FILE, k = sizeof(chunk);

		if (k > FL_FILE - at)
			k = FL_FILE - at;
		n = send(c, fl_content + at, k, 0);
		if (n > 0) {
			*sent += (uint64_t)n;
			spins = 0;
			continue;
		}
		FL_T_CHECK(n < 0 && errno == EAGAIN, "send: %s", strerror(errno));
		if (++spins == 20) /* EAGAIN 20 times over 20 ms: full */
			break;
		usleep(1000);
	}
	/* Full by a few KiB only: an ACK still on its way, a retransmission
	 * or a zero-window probe could make room (measured, with BBR). The
	 * smallest send buffer leaves none until the reader reads. */
	FL_T_CHECK(!setsockopt(c, SOL_SOCKET, SO_SNDBUF, &on, sizeof(on)), "SO_SNDBUF");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), "TCP_CORK");
	n = send(c, fl_content + *sent % FL_FILE, 100, 0);
	FL_T_CHECK(n == 100, "a small corked write was refused (%zd, %s): the shim holds none",
		   n, strerror(errno));
	*sent += 100;
	return 0;
}

/*
 * A non-blocking writer fills its send buffer (the reader not reading),
 * writes a few bytes under TCP_CORK (the shim holds them: the kernel has
 * no room) and shuts down. TCP queues the FIN behind every byte written
 * and returns at once: so must the shim (its reader starts only once the
 * shutdown returned, or after 2 s), and a write after it fails with
 * EPIPE. The reader must then get every byte written, then EOF.
 */
static int test_shutdown_sends_held_bytes_before_the_fin(void)
{
	struct fl_reader r = { 0 };
	uint64_t sent = 0;
	pthread_t th;
	int c, s, err, after_err;
	ssize_t n, after;

	FL_T_CHECK(fl_noise_file() >= 0, "the file");
	FL_T_CHECK(fl_pair(&c, &s) == 0, "an enrolled pair");
	FL_T_CHECK(fl_full_and_held(c, &sent) == 0, "the writer full, 100 bytes held");
	r.fd = s;
	r.wait_go = 1;
	FL_T_CHECK(pthread_create(&th, NULL, fl_reader_main, &r) == 0, "the reader");
	n = shutdown(c, SHUT_WR);
	err = errno;
	/* Still before the reader reads: the FIN may not have gone yet. */
	errno = 0;
	after = send(c, "x", 1, MSG_NOSIGNAL);
	after_err = errno;
	__atomic_store_n(&r.go, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	FL_T_CHECK(n == 0, "shutdown: %s", strerror(err));
	FL_T_CHECK(!r.self_started, "shutdown waited for the reader to read (2 s), as TCP's does not");
	FL_T_CHECK(after == -1 && after_err == EPIPE, "a send after shutdown returned %zd (%s), not EPIPE",
		   after, strerror(after_err));
	FL_T_CHECK(r.bad < 0, "byte %lld is wrong", (long long)r.bad);
	FL_T_CHECK(r.eof && r.got == sent, "the reader got %llu bytes of %llu written, then EOF",
		   (unsigned long long)r.got, (unsigned long long)sent);
	close(c);
	close(s);
	free(fl_content);
	return 0;
}

/*
 * The close subtests' common run: an enrolled pair whose writer is full,
 * 100 bytes held (fl_full_and_held), made blocking again unless
 * nonblocking, with SO_LINGER lg if given; then close() of the writer,
 * timed, while the reader waits (it starts once close() returned, or
 * after 2 s, which the subtests fail). counter: the status counter read
 * just before the close (fl_counted_once). The reader's fd is k->s.
 */
struct fl_close_run {
	int nonblocking;
	const struct linger *lg;
	const char *counter;
	uint64_t before, sent;
	double took;
	int s, rc, err;
	struct fl_reader r;
};

static int fl_close_full_writer(struct fl_close_run *k)
{
	pthread_t th;
	double t0;
	int c;

	FL_T_CHECK(fl_noise_file() >= 0, "the file");
	FL_T_CHECK(fl_pair(&c, &k->s) == 0, "an enrolled pair");
	FL_T_CHECK(fl_full_and_held(c, &k->sent) == 0, "the writer full, 100 bytes held");
	if (!k->nonblocking)
		FL_T_CHECK(fcntl(c, F_SETFL, 0) == 0, "blocking again");
	if (k->lg)
		FL_T_CHECK(setsockopt(c, SOL_SOCKET, SO_LINGER, k->lg, sizeof(*k->lg)) == 0,
			   "SO_LINGER");
	k->before = fl_t_status_u64(k->counter);
	k->r.fd = k->s;
	k->r.wait_go = 1;
	FL_T_CHECK(pthread_create(&th, NULL, fl_reader_main, &k->r) == 0, "the reader");
	t0 = fl_t_now();
	k->rc = close(c);
	k->err = errno;
	k->took = fl_t_now() - t0;
	__atomic_store_n(&k->r.go, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	return 0;
}

/* The status counter name grew by exactly one since before (what: what
 * it counts, for the message). */
static int fl_counted_once(const char *name, uint64_t before, const char *what)
{
	uint64_t now = fl_t_status_u64(name);

	FL_T_CHECK(now == before + 1, "status counts %llu %s, not %llu", (unsigned long long)now,
		   what, (unsigned long long)before + 1);
	return 0;
}

/* The reader got every byte written, in order, then EOF, and the run's
 * counter grew by one (what: what it counts). */
static int fl_close_run_got_all(const struct fl_close_run *k, const char *what)
{
	FL_T_CHECK(k->r.bad < 0, "byte %lld is wrong", (long long)k->r.bad);
	FL_T_CHECK(k->r.eof && k->r.got == k->sent,
		   "the reader got %llu bytes of %llu written, then EOF",
		   (unsigned long long)k->r.got, (unsigned long long)k->sent);
	return fl_counted_once(k->counter, k->before, what);
}

/* What a run leaves: the reader's socket and the file's content. */
static void fl_close_run_end(struct fl_close_run *k)
{
	close(k->s);
	free(fl_content);
}

/*
 * close() of a socket whose reader stopped reading, with bytes the shim
 * holds (corked) and no room for them in the kernel: TCP's close returns
 * at once and sends what it holds, then the FIN, by itself. The shim's
 * must too: the reader, which starts only once close() returned (or after
 * 2 s, which fails), gets every byte and then EOF. nonblocking: whether
 * the socket is still non-blocking when it is closed.
 */
static int fl_close_sends_held_bytes(int nonblocking)
{
	struct fl_close_run k = { .nonblocking = nonblocking,
				  .counter = "closes_with_bytes_held.lingered" };

	if (fl_close_full_writer(&k))
		return -1;
	FL_T_CHECK(k.rc == 0, "close: %s", strerror(k.err));
	FL_T_CHECK(!k.r.self_started, "close waited for the reader to read (2 s), as TCP's does not");
	if (fl_close_run_got_all(&k, "closes that returned with bytes held"))
		return -1;
	fl_close_run_end(&k);
	return 0;
}

static int test_close_of_a_full_non_blocking_socket_returns_at_once(void)
{
	return fl_close_sends_held_bytes(1);
}

static int test_close_of_a_full_blocking_socket_returns_at_once(void)
{
	return fl_close_sends_held_bytes(0);
}

/*
 * close() takes a socket out of every epoll set when it releases its
 * file; a socket the shim keeps open for its held bytes must leave them
 * at close() all the same: nginx keeps a pointer to the connection in the
 * event's data, frees it after close(), and would be handed it again. The
 * socket is readable (its peer sent a FIN) when it is closed, so a set
 * that still held it would report it. The FIN comes before the writer
 * fills its buffer: arriving after, it can make room for the held bytes
 * (with BBR, one of the defaults, it does), and close() then has nothing
 * to hold.
 */
static int test_a_closed_socket_leaves_the_epoll_set_at_once(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.u64 = 0xdeadbeef }, got[4];
	struct pollfd p;
	struct fl_reader r = { 0 };
	uint64_t sent = 0, lingered;
	pthread_t th;
	int c, s, ep, n;

	FL_T_CHECK(fl_noise_file() >= 0, "the file");
	FL_T_CHECK(fl_pair(&c, &s) == 0, "an enrolled pair");
	FL_T_CHECK(shutdown(s, SHUT_WR) == 0, "the reader's FIN");
	p.fd = c;
	p.events = POLLRDHUP;
	FL_T_CHECK(poll(&p, 1, 2000) == 1, "the FIN did not reach the writer");
	FL_T_CHECK(fl_full_and_held(c, &sent) == 0, "the writer full, 100 bytes held");
	ep = epoll_create1(EPOLL_CLOEXEC);
	FL_T_CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) == 0, "epoll: %s", strerror(errno));
	lingered = fl_t_status_u64("closes_with_bytes_held.lingered");
	FL_T_CHECK(close(c) == 0, "close: %s", strerror(errno));
	n = epoll_wait(ep, got, 4, 0);
	r.fd = s;
	FL_T_CHECK(pthread_create(&th, NULL, fl_reader_main, &r) == 0, "the reader");
	pthread_join(th, NULL);
	close(ep);
	FL_T_CHECK(n == 0, "epoll reported %d events for the closed socket (data %#llx)", n,
		   n > 0 ? (unsigned long long)got[0].data.u64 : 0ULL);
	if (fl_counted_once("closes_with_bytes_held.lingered", lingered,
			    "closes that returned with bytes held"))
		return -1;
	FL_T_CHECK(r.bad < 0, "byte %lld is wrong", (long long)r.bad);
	FL_T_CHECK(r.eof && r.got == sent, "the reader got %llu bytes of %llu written, then EOF",
		   (unsigned long long)r.got, (unsigned long long)sent);
	close(s);
	free(fl_content);
	return 0;
}

/*
 * close() under SO_LINGER with a time, of a full socket whose reader
 * stopped, the shim holding bytes: TCP's close waits up to that time for
 * its queue to go, then returns, and the kernel sends the rest and then
 * the FIN. The shim's must wait as long, not until the reader reads (its
 * reader starts once close returned, or after 2 s, which fails); the
 * reader must get every byte, then EOF.
 */
static int test_close_under_a_linger_time_waits_that_long_then_sends_the_bytes(void)
{
	const struct linger lg = { 1, 1 };
	struct fl_close_run k = { .nonblocking = 1, .lg = &lg,
				  .counter = "closes_with_bytes_held.lingered" };

	if (fl_close_full_writer(&k))
		return -1;
	printf("  close under SO_LINGER {1, 1 s} returned after %.2f s\n", k.took);
	FL_T_CHECK(k.rc == 0, "close: %s", strerror(k.err));
	FL_T_CHECK(!k.r.self_started, "close waited for the reader to read (2 s), not its linger time");
	FL_T_CHECK(k.took >= 0.9, "close returned after %.2f s, before its linger time (1 s)", k.took);
	if (fl_close_run_got_all(&k, "closes that returned with bytes held"))
		return -1;
	fl_close_run_end(&k);
	return 0;
}

/*
 * close() under a zero SO_LINGER (nginx's reset_timedout_connection, for
 * a client that stopped reading): TCP's close drops its queue and resets
 * at once. The shim's must return at once too, dropping the bytes it
 * holds, not wait for a reader that may never read; the reader gets a
 * prefix of what was written, exact, then the end.
 */
static int test_close_under_a_zero_linger_returns_at_once(void)
{
	const struct linger lg = { 1, 0 };
	struct fl_close_run k = { .nonblocking = 1, .lg = &lg,
				  .counter = "closes_with_bytes_held.reset" };

	if (fl_close_full_writer(&k))
		return -1;
	printf("  the reader got %llu of %llu bytes written, then %s\n", (unsigned long long)k.r.got,
	       (unsigned long long)k.sent, k.r.eof ? "EOF" : "an error");
	FL_T_CHECK(k.rc == 0, "close: %s", strerror(k.err));
	FL_T_CHECK(!k.r.self_started, "close waited for the reader to read (2 s), as TCP's does not");
	FL_T_CHECK(k.r.bad < 0, "byte %lld is wrong", (long long)k.r.bad);
	FL_T_CHECK(k.r.got < k.sent, "the reader got all %llu bytes: nothing was reset",
		   (unsigned long long)k.sent);
	if (fl_counted_once(k.counter, k.before, "closes that dropped held bytes under a zero linger"))
		return -1;
	fl_close_run_end(&k);
	return 0;
}

/*
 * A child forked while a closed socket's held bytes wait inherits the
 * shim's copy of its fd: it must not keep the socket open (and its FIN
 * unsent) for as long as it lives. The reader must see EOF while the
 * child is still there.
 */
static int test_a_forked_child_does_not_hold_a_closed_socket_open(void)
{
	struct fl_reader r = { 0 };
	uint64_t sent = 0;
	pthread_t th;
	pid_t pid;
	int c, s, st;

	FL_T_CHECK(fl_noise_file() >= 0, "the file");
	FL_T_CHECK(fl_pair(&c, &s) == 0, "an enrolled pair");
	FL_T_CHECK(fl_full_and_held(c, &sent) == 0, "the writer full, 100 bytes held");
	FL_T_CHECK(close(c) == 0, "close: %s", strerror(errno));
	pid = fork();
	FL_T_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(s);
		sleep(20);
		_exit(0);
	}
	r.fd = s;
	FL_T_CHECK(pthread_create(&th, NULL, fl_reader_main, &r) == 0, "the reader");
	pthread_join(th, NULL);
	st = waitpid(pid, NULL, WNOHANG);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	FL_T_CHECK(st == 0, "the reader's EOF came only when the forked child exited");
	FL_T_CHECK(r.bad < 0, "byte %lld is wrong", (long long)r.bad);
	FL_T_CHECK(r.eof && r.got == sent, "the reader got %llu bytes of %llu written, then EOF",
		   (unsigned long long)r.got, (unsigned long long)sent);
	close(s);
	free(fl_content);
	return 0;
}

/*
 * A process that closes such a socket and exits at once (_exit, as a
 * forked worker does): its held bytes must still reach the reader, which
 * starts reading only after the close.
 */
static int test_exit_right_after_close_sends_the_held_bytes(void)
{
	struct pollfd p;
	uint64_t sent = 0, told = 0;
	uint64_t got = 0;
	static uint8_t buf[64 * 1024];
	int c, s, pipefd[2], st = -1, told_in_time;
	int64_t bad = -1;
	ssize_t n, i;
	pid_t pid;

	FL_T_CHECK(fl_noise_file() >= 0, "the file");
	FL_T_CHECK(fl_pair(&c, &s) == 0, "an enrolled pair");
	FL_T_CHECK(pipe(pipefd) == 0, "pipe");
	pid = fork();
	FL_T_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(s);
		close(pipefd[0]);
		if (fl_full_and_held(c, &sent) || close(c))
			_exit(1);
		if (write(pipefd[1], &sent, sizeof(sent)) != (ssize_t)sizeof(sent))
			_exit(1);
		_exit(0);
	}
	close(c);
	close(pipefd[1]);
	p.fd = pipefd[0];
	p.events = POLLIN;
	told_in_time = poll(&p, 1, 5000) == 1;
	while ((n = recv(s, buf, sizeof(buf), 0)) > 0 || (n < 0 && errno == EINTR)) {
		for (i = 0; i < n && bad < 0; i++)
			if (buf[i] != fl_content[(got + (uint64_t)i) % FL_FILE])
				bad = (int64_t)(got + (uint64_t)i);
		got += n > 0 ? (uint64_t)n : 0;
	}
	FL_T_CHECK(read(pipefd[0], &told, sizeof(told)) == (ssize_t)sizeof(told), "the child's count");
	waitpid(pid, &st, 0);
	close(pipefd[0]);
	FL_T_CHECK(told_in_time, "the child's close waited for the reader to read (5 s)");
	FL_T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %#x)", st);
	FL_T_CHECK(n == 0, "the reader: %s", strerror(errno));
	FL_T_CHECK(bad < 0, "byte %lld is wrong", (long long)bad);
	FL_T_CHECK(got == told, "the reader got %llu bytes of %llu written, then EOF",
		   (unsigned long long)got, (unsigned long long)told);
	close(s);
	free(fl_content);
	return 0;
}

/*
 * sendmmsg() under TCP_CORK: the bytes written before it are held in the
 * shim, and its messages must reach the reader after them, in order.
 * (The kernel's own sendmmsg reaches the socket past the shim's buffer.)
 */
static int test_a_sendmmsg_goes_after_held_bytes(void)
{
	char a[100], b[100], c3[100], got[300];
	struct iovec iov[2] = { { b, sizeof(b) }, { c3, sizeof(c3) } };
	struct mmsghdr mm[2];
	int c, s, on = 1, off = 0;
	size_t have = 0;
	ssize_t n;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(c3, 'c', sizeof(c3));
	memset(mm, 0, sizeof(mm));
	mm[0].msg_hdr.msg_iov = &iov[0];
	mm[0].msg_hdr.msg_iovlen = 1;
	mm[1].msg_hdr.msg_iov = &iov[1];
	mm[1].msg_hdr.msg_iovlen = 1;
	FL_T_CHECK(fl_pair(&c, &s) == 0, "an enrolled pair");
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), "TCP_CORK");
	FL_T_CHECK(write(c, a, sizeof(a)) == (ssize_t)sizeof(a), "the corked write");
	FL_T_CHECK(sendmmsg(c, mm, 2, 0) == 2, "sendmmsg: %s", strerror(errno));
	FL_T_CHECK(mm[0].msg_len == 100 && mm[1].msg_len == 100, "sendmmsg's counts %u, %u",
		   mm[0].msg_len, mm[1].msg_len);
	FL_T_CHECK(!setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), "uncork");
	while (have < sizeof(got) && (n = recv(s, got + have, sizeof(got) - have, 0)) > 0)
		have += (size_t)n;
	FL_T_CHECK(have == sizeof(got), "the reader got %zu bytes of 300", have);
	FL_T_CHECK(!memcmp(got, a, 100) && !memcmp(got + 100, b, 100) && !memcmp(got + 200, c3, 100),
		   "the bytes arrived out of order: '%c%c%c' at 0, 100, 200", got[0], got[100],
		   got[200]);
	close(c);
	close(s);
	return 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(120); /* a hang fails the test instead of the suite */
	FL_T_RUN("a sendfile never overtakes the bytes held before it, on a non-blocking "
		 "socket whose send buffer fills",
		 test_a_sendfile_never_overtakes_held_bytes);
	FL_T_RUN("a splice never overtakes the bytes held before it, on a non-blocking socket "
		 "whose send buffer fills",
		 test_a_splice_never_overtakes_held_bytes);
	FL_T_RUN("a sendmmsg goes after the bytes held before it", test_a_sendmmsg_goes_after_held_bytes);
	FL_T_RUN("shutdown of a full non-blocking socket returns at once and sends the bytes held "
		 "before its FIN",
		 test_shutdown_sends_held_bytes_before_the_fin);
	FL_T_RUN("close of a full non-blocking socket returns at once and sends the bytes held, "
		 "then the FIN",
		 test_close_of_a_full_non_blocking_socket_returns_at_once);
	FL_T_RUN("close of a full blocking socket returns at once and sends the bytes held, then "
		 "the FIN",
		 test_close_of_a_full_blocking_socket_returns_at_once);
	FL_T_RUN("a closed socket whose bytes wait leaves the application's epoll set at once",
		 test_a_closed_socket_leaves_the_epoll_set_at_once);
	FL_T_RUN("close under SO_LINGER with a time waits that long, not for the reader, then "
		 "sends the bytes held",
		 test_close_under_a_linger_time_waits_that_long_then_sends_the_bytes);
	FL_T_RUN("close under a zero SO_LINGER returns at once and drops the bytes held, as TCP's "
		 "reset does",
		 test_close_under_a_zero_linger_returns_at_once);
	FL_T_RUN("a child forked while a closed socket's bytes wait does not hold back its FIN",
		 test_a_forked_child_does_not_hold_a_closed_socket_open);
	FL_T_RUN("a process that exits right after close still sends the bytes held",
		 test_exit_right_after_close_sends_the_held_bytes);
	return fl_t_exit_status();
}
