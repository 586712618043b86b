// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_io.c - receive and send paths: MSG_PEEK, blocking recv and SO_RCVTIMEO,
 * MSG_WAITALL, SO_RCVLOWAT, FIONREAD under flow control, splice and
 * sendfile, half-close and shutdown, close with data (reset, queued),
 * SIGPIPE/EPIPE, liveness getsockopt calls, MSG_ZEROCOPY, data integrity.
 *
 * Every scenario prints only what TCP guarantees: counts of bytes checked
 * against the pattern, return values and errno names, timing classes. The
 * bytes returned by one read() are never printed unless TCP fixes them (a
 * MSG_WAITALL or MSG_PEEK|MSG_WAITALL length, or one small write read once
 * it has arrived whole). Blocking calls carry SO_RCVTIMEO/SO_SNDTIMEO
 * guards (sc_guard) so that a stall shows as a difference, not a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "conformance.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif
#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif

/* ------------------------------------------------------------ helpers */

static void sc_timeo(int fd, int opt, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

/* A stall turns into EAGAIN after ms instead of hanging the scenario. */
static void sc_guard_ms(int fd, int ms)
{
	sc_timeo(fd, SO_RCVTIMEO, ms);
	sc_timeo(fd, SO_SNDTIMEO, ms);
}

static void sc_guard(int fd)
{
	sc_guard_ms(fd, 3000);
}

/* fl_ret() for a result whose errno was saved earlier. */
static const char *sc_ret(ssize_t r, int err)
{
	errno = err;
	return fl_ret(r);
}

static int sc_match(const uint8_t *b, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t want[4096];
	size_t i = 0;

	while (i < len) {
		size_t k = len - i < sizeof(want) ? len - i : sizeof(want);

		fl_sc_fill(want, off + i, k, seed);
		if (memcmp(b + i, want, k))
			return 0;
		i += k;
	}
	return 1;
}

static const char *sc_ok(int ok)
{
	return ok ? "ok" : "wrong";
}

/* The verdict on the r bytes a call returned into buf (pattern from off). */
static const char *sc_bytes(const uint8_t *buf, ssize_t r, uint64_t off, uint64_t seed)
{
	if (r <= 0)
		return "none";
	return sc_match(buf, off, (size_t)r, seed) ? "ok" : "wrong";
}

/* send() of the whole buffer with the given flags; 0, or -1 with errno. */
static int sc_send_all(int fd, const void *buf, size_t n, int flags)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = send(fd, (const char *)buf + done, n - done, flags);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* n pattern bytes from off by send(MSG_NOSIGNAL); 0 or -1 (errno). */
static int sc_send_pattern(int fd, uint64_t off, size_t n, uint64_t seed)
{
	uint8_t buf[65536];

	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);

		fl_sc_fill(buf, off, k, seed);
		if (sc_send_all(fd, buf, k, MSG_NOSIGNAL))
			return -1;
		off += k;
		n -= k;
	}
	return 0;
}

/* Reads exactly n bytes with recv(flags) into buf; count read, or -1. */
static ssize_t sc_recv_exact(int fd, void *buf, size_t n, int flags)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = recv(fd, (char *)buf + got, n - got, flags);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return got ? (ssize_t)got : -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static const char *sc_class(double dt, double lo, double hi)
{
	if (dt < lo)
		return "too early";
	if (dt > hi)
		return "too late";
	return "in time";
}

/* A background writer or reader of the pattern. */
enum { SC_KEEP, SC_SHUT_WR, SC_CLOSE };

struct sc_job {
	pthread_t th;
	int fd;
	uint64_t off, seed;
	size_t n;
	int delay_ms;
	int after;    /* writer: SC_KEEP, SC_SHUT_WR or SC_CLOSE */
	int want_eof; /* reader: one more read after n bytes */
	ssize_t got;
	int err;
	int64_t bad;
	ssize_t eof_r;
	int eof_err;
};

static void *sc_writer_fn(void *arg)
{
	struct sc_job *j = arg;

	if (j->delay_ms)
		fl_sc_sleep_ms(j->delay_ms);
	j->got = sc_send_pattern(j->fd, j->off, j->n, j->seed) ? -1 : (ssize_t)j->n;
	j->err = errno;
	if (j->after == SC_SHUT_WR)
		shutdown(j->fd, SHUT_WR);
	else if (j->after == SC_CLOSE)
		close(j->fd);
	return NULL;
}

static void *sc_reader_fn(void *arg)
{
	struct sc_job *j = arg;
	char b;

	if (j->delay_ms)
		fl_sc_sleep_ms(j->delay_ms);
	j->got = fl_sc_read_pattern(j->fd, j->off, j->n, j->seed, &j->bad);
	j->err = errno;
	if (j->want_eof && j->got == (ssize_t)j->n) {
		j->eof_r = read(j->fd, &b, 1);
		j->eof_err = errno;
	}
	return NULL;
}

static void sc_job_start(struct sc_job *j, void *(*fn)(void *))
{
	pthread_create(&j->th, NULL, fn, j);
}

static void sc_job_join(struct sc_job *j)
{
	pthread_join(j->th, NULL);
}

static void sc_trace_reader(const char *who, struct sc_job *j)
{
	if (j->want_eof && j->got == (ssize_t)j->n)
		fl_trace("%s read %s bytes, first wrong byte %lld, then read -> %s", who,
			 sc_ret(j->got, j->err), (long long)j->bad, sc_ret(j->eof_r, j->eof_err));
	else
		fl_trace("%s read %s bytes, first wrong byte %lld", who, sc_ret(j->got, j->err),
			 (long long)j->bad);
}

static int sc_inq(int fd)
{
	int n = -1;

	return ioctl(fd, FIONREAD, &n) ? -1 : n;
}

static int sc_outq(int fd)
{
	int n = -1;

	return ioctl(fd, SIOCOUTQ, &n) ? -1 : n;
}

static void sc_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static int sc_setint(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v));
}

static int sc_getint(int fd, int level, int opt, int *v)
{
	socklen_t len = sizeof(*v);

	*v = -1;
	return getsockopt(fd, level, opt, v, &len);
}

/* A client socket with an option set before connect(). */
static int sc_connect_rcvbuf(int family, int port, int rcvbuf)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int c = socket(family, SOCK_STREAM, 0);

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		in6->sin6_addr = in6addr_loopback;
		len = sizeof(*in6);
	}
	if (c < 0)
		return -1;
	if (rcvbuf)
		sc_setint(c, SOL_SOCKET, SO_RCVBUF, rcvbuf);
	if (connect(c, (struct sockaddr *)&ss, len)) {
		close(c);
		return -1;
	}
	return c;
}

/* A pair where the client wrote n pattern bytes before accept(): those
 * travel over TCP (the server is not enrolled yet). */
static int sc_pair_early(int family, int *c, int *s, size_t n, uint64_t seed)
{
	int port, l = fl_sc_listen(family, &port);

	if (l < 0)
		return -1;
	*c = fl_sc_connect(family, port);
	if (*c < 0 || (n && sc_send_pattern(*c, 0, n, seed))) {
		close(l);
		return -1;
	}
	fl_sc_sleep_ms(20);
	*s = accept(l, NULL, NULL);
	close(l);
	if (*s < 0) {
		close(*c);
		return -1;
	}
	sc_guard(*c);
	sc_guard(*s);
	return 0;
}

static int sc_pair_guarded(int family, int *c, int *s)
{
	if (fl_sc_pair(family, c, s))
		return -1;
	sc_guard(*c);
	sc_guard(*s);
	return 0;
}

/* --------------------------------------------------------- MSG_PEEK */

/* MSG_PEEK shows the bytes a later read returns, in order, and peeking
 * consumes nothing; at EOF a peek returns 0. */
static int sc_peek_then_read(int family)
{
	uint8_t buf[4096];
	int64_t bad;
	ssize_t r, n;
	int c, s;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 3000, 11))
		return -1;
	r = recv(s, buf, 1000, MSG_PEEK | MSG_WAITALL);
	fl_trace("peek(1000, MSG_WAITALL) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 0, 11));
	r = recv(s, buf, 3000, MSG_PEEK | MSG_WAITALL);
	fl_trace("peek(3000, MSG_WAITALL) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 0, 11));
	r = recv(s, buf, 100, MSG_PEEK);
	fl_trace("peek(100) with 3000 queued -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 0, 11));
	n = fl_sc_read_pattern(s, 0, 3000, 11, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);

	/* A plain peek of whatever has arrived, then a read of that count. */
	if (sc_send_pattern(c, 3000, 500, 11))
		return -1;
	fl_trace("readable within 1 s: %d", fl_sc_readable_within(s, 1000));
	r = recv(s, buf, sizeof(buf), MSG_PEEK);
	fl_trace("peek -> %s, bytes %s", r > 0 && r <= 500 ? "1..500" : fl_ret(r),
		 sc_ok(r > 0 && r <= 500 && sc_match(buf, 3000, (size_t)r, 11)));
	if (r > 0 && r <= 500) {
		n = fl_sc_read_pattern(s, 3000, (size_t)r, 11, &bad);
		fl_trace("read of the peeked count: %s", sc_ok(n == r && bad < 0));
		n = fl_sc_read_pattern(s, 3000 + (uint64_t)r, 500 - (size_t)r, 11, &bad);
		fl_trace("rest: %s", sc_ok(n == 500 - r && bad < 0));
	}
	close(c);
	r = recv(s, buf, 10, MSG_PEEK);
	fl_trace("peek after the peer closed -> %s", fl_ret(r));
	r = recv(s, buf, 10, 0);
	fl_trace("recv after the peer closed -> %s", fl_ret(r));
	close(s);
	return 0;
}
FL_SCENARIO("io-peek-then-read", FL_SC_REDIRECTS, sc_peek_then_read)

/* Bytes sent before accept() (over TCP) and after: a peek spans both, and
 * a peek that waits for bytes still to come sees them. Then, once the
 * gate has opened, peek and read of redirected bytes. */
static int sc_peek_early(int family)
{
	struct sc_job w = { .seed = 12, .off = 1000, .n = 500, .delay_ms = 50 };
	uint8_t buf[4096];
	int64_t bad;
	ssize_t r, n;
	int c, s;

	if (sc_pair_early(family, &c, &s, 1000, 12))
		return -1;
	w.fd = c;
	sc_job_start(&w, sc_writer_fn);
	r = recv(s, buf, 1500, MSG_PEEK | MSG_WAITALL);
	fl_trace("peek(1500, MSG_WAITALL) over early + later bytes -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 0, 12));
	sc_job_join(&w);
	r = recv(s, buf, 200, MSG_PEEK);
	fl_trace("peek(200) -> %s, bytes %s", fl_ret(r), sc_bytes(buf, r, 0, 12));
	n = fl_sc_read_pattern(s, 0, 1500, 12, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);

	/* Everything sent so far was read: the next bytes may be redirected
	 * (under deferred enrollment once the warm-up has enrolled both). */
	if (fl_sc_warmup(c, s) || sc_send_pattern(c, 1500, 2000, 12))
		return -1;
	r = recv(s, buf, 2000, MSG_PEEK | MSG_WAITALL);
	fl_trace("peek(2000, MSG_WAITALL) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 1500, 12));
	n = fl_sc_read_pattern(s, 1500, 1000, 12, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);
	/* Half read: a peek starts at the first unread byte. */
	r = recv(s, buf, 1000, MSG_PEEK | MSG_WAITALL);
	fl_trace("peek(1000, MSG_WAITALL) after reading half -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 2500, 12));
	/* A peek that waits for more than is queued. */
	w = (struct sc_job){ .fd = c, .seed = 12, .off = 3500, .n = 700, .delay_ms = 50 };
	sc_job_start(&w, sc_writer_fn);
	r = recv(s, buf, 1700, MSG_PEEK | MSG_WAITALL);
	fl_trace("peek(1700, MSG_WAITALL) waiting for 700 more -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 2500, 12));
	sc_job_join(&w);
	n = fl_sc_read_pattern(s, 2500, 1700, 12, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-peek-early-bytes", FL_SC_REDIRECTS, sc_peek_early)

/* SO_PEEK_OFF (TCP supports it since 6.10): successive peeks walk the
 * queue, a read consumes from the start and moves the offset back. */
static int sc_peek_off(int family)
{
	uint8_t buf[1000];
	int64_t bad;
	ssize_t r, n;
	int c, s, v;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 1000, 13))
		return -1;
	r = recv(s, buf, 1000, MSG_PEEK | MSG_WAITALL);
	fl_trace("peek(1000, MSG_WAITALL) -> %s", fl_ret(r));
	fl_trace("SO_PEEK_OFF 0 -> %s", fl_ret(sc_setint(s, SOL_SOCKET, SO_PEEK_OFF, 0)));
	r = recv(s, buf, 100, MSG_PEEK);
	fl_trace("peek(100) -> %s, bytes 0.. %s", fl_ret(r), sc_bytes(buf, r, 0, 13));
	r = recv(s, buf, 100, MSG_PEEK);
	fl_trace("peek(100) -> %s, bytes 100.. %s", fl_ret(r),
		 sc_bytes(buf, r, 100, 13));
	sc_getint(s, SOL_SOCKET, SO_PEEK_OFF, &v);
	fl_trace("SO_PEEK_OFF reads %d", v);
	n = fl_sc_read_pattern(s, 0, 150, 13, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);
	sc_getint(s, SOL_SOCKET, SO_PEEK_OFF, &v);
	fl_trace("SO_PEEK_OFF after reading 150 reads %d", v);
	r = recv(s, buf, 100, MSG_PEEK);
	fl_trace("peek(100) -> %s, bytes 200.. %s", fl_ret(r),
		 sc_bytes(buf, r, 200, 13));
	n = fl_sc_read_pattern(s, 150, 850, 13, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-peek-offset", FL_SC_REDIRECTS, sc_peek_off)

/* ---------------------------------------------- blocking recv, timeouts */

struct sc_dribble {
	int fd, pieces, size;
	uint64_t seed;
	int err;
};

/* pieces of size bytes, with short gaps and now and then a longer one. */
static void *sc_dribble_fn(void *arg)
{
	struct sc_dribble *d = arg;
	int i;

	d->err = 0;
	for (i = 0; i < d->pieces; i++) {
		if (i % 3 == 0)
			fl_sc_sleep_ms(1);
		if (i % 50 == 49)
			fl_sc_sleep_ms(15);
		if (sc_send_pattern(d->fd, (uint64_t)i * (uint64_t)d->size, (size_t)d->size, d->seed)) {
			d->err = errno;
			break;
		}
	}
	return NULL;
}

struct sc_loop_reader {
	pthread_t th;
	int fd;
	size_t want;
	uint64_t seed;
	size_t got;
	int eagain, other, eof, wrong;
	int other_err;
};

/* Loops on blocking recv/read/recvmsg (no timeout) until want bytes. */
static void *sc_loop_reader_fn(void *arg)
{
	struct sc_loop_reader *l = arg;
	uint8_t buf[4096];
	unsigned k = 0;

	while (l->got < l->want) {
		size_t room = l->want - l->got < sizeof(buf) ? l->want - l->got : sizeof(buf);
		ssize_t r;

		switch (k++ % 3) {
		case 0:
			r = recv(l->fd, buf, room, 0);
			break;
		case 1:
			r = read(l->fd, buf, room);
			break;
		default: {
			struct iovec iov = { buf, room };
			struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

			r = recvmsg(l->fd, &m, 0);
		}
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			l->eagain++;
			continue;
		}
		if (r < 0) {
			l->other++;
			l->other_err = errno;
			break;
		}
		if (r == 0) {
			l->eof = 1;
			break;
		}
		if (!sc_match(buf, l->got, (size_t)r, l->seed))
			l->wrong = 1;
		l->got += (size_t)r;
	}
	return NULL;
}

/* A reader looping on blocking recv() never sees EAGAIN, however the bytes
 * are spread in time (docs/kernel.md#spurious-eagain), both ways at once. */
static int sc_blocking_no_eagain(int family)
{
	struct sc_dribble d1 = { .pieces = 300, .size = 7, .seed = 21 };
	struct sc_dribble d2 = { .pieces = 300, .size = 5, .seed = 22 };
	struct sc_loop_reader l[2];
	pthread_t t1, t2;
	int c, s, i, fired;

	if (fl_sc_pair(family, &c, &s))
		return -1;
	memset(l, 0, sizeof(l));
	l[0].fd = s;
	l[0].want = 300 * 7;
	l[0].seed = 21;
	l[1].fd = c;
	l[1].want = 300 * 5;
	l[1].seed = 22;
	pthread_create(&l[0].th, NULL, sc_loop_reader_fn, &l[0]);
	pthread_create(&l[1].th, NULL, sc_loop_reader_fn, &l[1]);
	d1.fd = c;
	d2.fd = s;
	pthread_create(&t1, NULL, sc_dribble_fn, &d1);
	pthread_create(&t2, NULL, sc_dribble_fn, &d2);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	/* A reader stuck for 4 s is woken by a shutdown (and it is said). */
	fired = 0;
	for (i = 0; i < 2; i++) {
		double end = fl_sc_now() + 4;
		int shut = 0;

		while (pthread_tryjoin_np(l[i].th, NULL) == EBUSY) {
			if (!shut && fl_sc_now() > end) {
				shut = fired = 1;
				shutdown(l[i].fd, SHUT_RDWR);
			}
			fl_sc_sleep_ms(5);
		}
	}
	fl_trace("writers: %s, %s", d1.err ? fl_errname(d1.err) : "ok", d2.err ? fl_errname(d2.err) : "ok");
	for (i = 0; i < 2; i++)
		fl_trace("%s read %zu of %zu bytes, order %s, EAGAIN %d times, other errors %d%s%s, "
			 "EOF %d", i ? "client" : "server", l[i].got, l[i].want, sc_ok(!l[i].wrong),
			 l[i].eagain, l[i].other, l[i].other ? " " : "",
			 l[i].other ? fl_errname(l[i].other_err) : "", l[i].eof);
	if (fired)
		fl_trace("a reader was stuck for 4 s");
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-recv-blocking-no-eagain", FL_SC_REDIRECTS, sc_blocking_no_eagain)

struct sc_bursts {
	int fd, n;
	size_t size;
	uint64_t seed;
	int err;
};

/* n non-blocking writes of size bytes each (poll for POLLOUT on EAGAIN),
 * with a pause after every fourth. */
static void *sc_bursts_fn(void *arg)
{
	static uint8_t buf[256 << 10];
	struct sc_bursts *b = arg;
	int i;

	b->err = 0;
	for (i = 0; i < b->n && !b->err; i++) {
		size_t done = 0, k = b->size < sizeof(buf) ? b->size : sizeof(buf);

		fl_sc_fill(buf, (uint64_t)i * k, k, b->seed);
		while (done < k) {
			struct pollfd p = { .fd = b->fd, .events = POLLOUT };
			ssize_t w = send(b->fd, buf + done, k - done, MSG_DONTWAIT | MSG_NOSIGNAL);

			if (w > 0) {
				done += (size_t)w;
			} else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
				if (errno == EAGAIN && poll(&p, 1, 3000) != 1) {
					b->err = ETIMEDOUT;
					break;
				}
			} else {
				b->err = w < 0 ? errno : EPIPE;
				break;
			}
		}
		if (i % 4 == 3)
			fl_sc_sleep_ms(10);
	}
	return NULL;
}

/* The same with a reader whose SO_RCVBUF is 256 KiB (a budget of 128 KiB) and
 * non-blocking writes of 128 KiB (no larger: a message larger than the
 * budget goes over TCP at once, docs/kernel.md#rmem-shared): under the
 * shim the direction falls back to TCP while the reader is blocked, and
 * bytes arriving over TCP must not end its wait with EAGAIN
 * (docs/kernel.md#spurious-eagain). */
static int sc_blocking_no_eagain_fallback(int family)
{
	struct sc_bursts b = { .n = 64, .size = 128 << 10, .seed = 24 };
	struct sc_loop_reader l;
	int port, lfd = fl_sc_listen(family, &port), c, s, shut = 0;
	pthread_t th;
	double end;

	if (lfd < 0)
		return -1;
	sc_setint(lfd, SOL_SOCKET, SO_RCVBUF, 262144);
	c = fl_sc_connect(family, port);
	s = c >= 0 ? accept(lfd, NULL, NULL) : -1;
	close(lfd);
	if (s < 0)
		return -1;
	memset(&l, 0, sizeof(l));
	l.fd = s;
	l.want = (size_t)b.n * b.size;
	l.seed = 24;
	pthread_create(&l.th, NULL, sc_loop_reader_fn, &l);
	b.fd = c;
	pthread_create(&th, NULL, sc_bursts_fn, &b);
	pthread_join(th, NULL);
	end = fl_sc_now() + 4;
	while (pthread_tryjoin_np(l.th, NULL) == EBUSY) {
		if (!shut && fl_sc_now() > end) {
			shut = 1;
			shutdown(s, SHUT_RDWR);
		}
		fl_sc_sleep_ms(5);
	}
	fl_trace("writer: %s", b.err ? fl_errname(b.err) : "ok");
	fl_trace("server read %zu of %zu bytes, order %s, EAGAIN %d times, other errors %d%s%s, EOF %d",
		 l.got, l.want, sc_ok(!l.wrong), l.eagain, l.other, l.other ? " " : "",
		 l.other ? fl_errname(l.other_err) : "", l.eof);
	if (shut)
		fl_trace("the reader was stuck for 4 s");
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-recv-blocking-no-eagain-fallback", FL_SC_REDIRECTS, sc_blocking_no_eagain_fallback)

/* SO_RCVTIMEO: with nothing to read, recv/read/recvmsg give EAGAIN after
 * the timeout; bytes arriving before it end the wait. */
static int sc_rcvtimeo(int family)
{
	struct sc_job w = { .seed = 23, .n = 10, .delay_ms = 50 };
	uint8_t buf[100];
	int64_t bad;
	ssize_t r, n;
	double t;
	int c, s, pass;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_timeo(s, SO_RCVTIMEO, 200);
	for (pass = 0; pass < 2; pass++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

		fl_trace("pass %d (%s)", pass, pass ? "after traffic" : "fresh connection");
		t = fl_sc_now();
		r = recv(s, buf, sizeof(buf), 0);
		fl_trace("recv, nothing sent -> %s, %s", fl_ret(r), sc_class(fl_sc_now() - t, 0.18, 1.0));
		t = fl_sc_now();
		r = read(s, buf, sizeof(buf));
		fl_trace("read, nothing sent -> %s, %s", fl_ret(r), sc_class(fl_sc_now() - t, 0.18, 1.0));
		t = fl_sc_now();
		r = recvmsg(s, &m, 0);
		fl_trace("recvmsg, nothing sent -> %s, %s", fl_ret(r),
			 sc_class(fl_sc_now() - t, 0.18, 1.0));
		t = fl_sc_now();
		r = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
		fl_trace("recv(MSG_DONTWAIT) -> %s, %s", fl_ret(r), sc_class(fl_sc_now() - t, 0, 0.15));

		/* 10 bytes 50 ms into a 200 ms timeout. */
		w.fd = c;
		w.off = (uint64_t)pass * 10;
		t = fl_sc_now(); /* before the writer starts: a stall cannot shorten the wait */
		sc_job_start(&w, sc_writer_fn);
		r = recv(s, buf, sizeof(buf), 0);
		fl_trace("recv, 10 bytes sent after 50 ms -> %s, %s, bytes %s",
			 r > 0 && r <= 10 ? "1..10" : fl_ret(r), sc_class(fl_sc_now() - t, 0.03, 0.18),
			 sc_ok(r > 0 && r <= 10 && sc_match(buf, w.off, (size_t)r, 23)));
		sc_job_join(&w);
		if (r > 0 && r < 10) {
			n = fl_sc_read_pattern(s, w.off + (uint64_t)r, 10 - (size_t)r, 23, &bad);
			if (n != 10 - r || bad >= 0)
				fl_trace("the rest of the 10 bytes: wrong");
		}
	}
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-recv-rcvtimeo", FL_SC_REDIRECTS, sc_rcvtimeo)

/* ------------------------------------------------------- MSG_WAITALL */

/* The peer sends 10 + 10 bytes, then closes: recv(100, MSG_WAITALL)
 * returns the 20 that arrived, the next recv 0. */
static int sc_waitall_peer_closes(int family)
{
	uint8_t buf[100];
	ssize_t r;
	int c, s, how;

	for (how = 0; how < 2; how++) {
		struct sc_job w1 = { .seed = 31, .n = 10, .delay_ms = 30 };
		struct sc_job w2 = { .seed = 31, .off = 10, .n = 10, .delay_ms = 30 };

		if (sc_pair_guarded(family, &c, &s))
			return -1;
		w1.fd = w2.fd = c;
		w2.after = how ? SC_SHUT_WR : SC_CLOSE;
		sc_job_start(&w1, sc_writer_fn);
		sc_job_join(&w1);
		sc_job_start(&w2, sc_writer_fn);
		r = recv(s, buf, sizeof(buf), MSG_WAITALL);
		fl_trace("peer sends 10+10 then %s: recv(100, MSG_WAITALL) -> %s, bytes %s",
			 how ? "shutdown(SHUT_WR)" : "close()", fl_ret(r),
			 sc_bytes(buf, r, 0, 31));
		sc_job_join(&w2);
		r = recv(s, buf, sizeof(buf), MSG_WAITALL);
		fl_trace("recv(100, MSG_WAITALL) again -> %s", fl_ret(r));
		if (how) {
			/* Half-closed: the other direction still works. */
			fl_trace("server sends 10 -> %s", fl_ret(send(s, "0123456789", 10, MSG_NOSIGNAL)));
			r = recv(c, buf, 10, MSG_WAITALL);
			fl_trace("client recv(10, MSG_WAITALL) -> %s", fl_ret(r));
			close(c);
		}
		close(s);
	}
	return 0;
}
FL_SCENARIO("io-waitall-peer-closes", FL_SC_REDIRECTS, sc_waitall_peer_closes)

/* Bytes sent before accept() (TCP) and after, in pieces: MSG_WAITALL
 * gathers all of them in order; then again once redirected. */
static int sc_waitall_early(int family)
{
	uint8_t buf[3000];
	ssize_t r;
	int c, s, round;

	if (sc_pair_early(family, &c, &s, 1000, 32))
		return -1;
	for (round = 0; round < 2; round++) {
		uint64_t base = round ? 3000 : 1000;
		struct sc_job w1 = { .fd = c, .seed = 32, .off = base, .n = 1000, .delay_ms = 30 };
		struct sc_job w2 = { .fd = c, .seed = 32, .off = base + 1000, .n = 1000, .delay_ms = 60 };
		size_t want = round ? 2000 : 3000;
		uint64_t from = round ? 3000 : 0;

		/* Round 1 is meant to be redirected: under deferred enrollment
		 * the warm-up enrolls both ends first. */
		if (round && fl_sc_warmup(c, s))
			return -1;
		/* w2 starts once w1 has written: two writers started together
		 * can swap under load (w1's 30 ms head start is no promise),
		 * which would be the test's disorder, not the stream's. */
		sc_job_start(&w1, sc_writer_fn);
		sc_job_join(&w1);
		sc_job_start(&w2, sc_writer_fn);
		r = recv(s, buf, want, MSG_WAITALL);
		fl_trace("round %d: recv(%zu, MSG_WAITALL) -> %s, bytes %s", round, want, fl_ret(r),
			 sc_bytes(buf, r, from, 32));
		sc_job_join(&w2);
	}
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-waitall-early-bytes", FL_SC_REDIRECTS, sc_waitall_early)

/* MSG_WAITALL with SO_RCVTIMEO: the timeout ends the wait with what has
 * arrived (or EAGAIN when nothing did); pieces within it are gathered. */
static int sc_waitall_timeout(int family)
{
	uint8_t buf[100];
	ssize_t r;
	double t;
	int c, s;
	struct sc_dribble d = { .pieces = 3, .size = 10, .seed = 33 };
	pthread_t th;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_timeo(s, SO_RCVTIMEO, 300);
	t = fl_sc_now();
	r = recv(s, buf, sizeof(buf), MSG_WAITALL);
	fl_trace("nothing sent: recv(100, MSG_WAITALL) -> %s, %s", fl_ret(r),
		 sc_class(fl_sc_now() - t, 0.28, 1.5));
	if (sc_send_pattern(c, 0, 10, 33))
		return -1;
	t = fl_sc_now();
	r = recv(s, buf, sizeof(buf), MSG_WAITALL);
	fl_trace("10 sent: recv(100, MSG_WAITALL) -> %s, bytes %s, returns at the timeout: %s",
		 fl_ret(r), sc_bytes(buf, r, 0, 33),
		 sc_class(fl_sc_now() - t, 0.28, 1.5));
	if (sc_send_pattern(c, 10, 90, 33))
		return -1;
	r = recv(s, buf, 90, MSG_WAITALL);
	fl_trace("90 sent: recv(90, MSG_WAITALL) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 10, 33));
	/* Three pieces of 10 (about 20 ms apart) well within the timeout. */
	d.fd = c;
	pthread_create(&th, NULL, sc_dribble_fn, &d);
	t = fl_sc_now();
	r = recv(s, buf, 30, MSG_WAITALL);
	fl_trace("3 x 10 in pieces: recv(30, MSG_WAITALL) -> %s, bytes %s, before the timeout: %s",
		 fl_ret(r), sc_bytes(buf, r, 0, 33),
		 sc_class(fl_sc_now() - t, 0, 0.25));
	pthread_join(th, NULL);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-waitall-timeout", FL_SC_REDIRECTS, sc_waitall_timeout)

/* MSG_WAITALL does not make a non-blocking receive wait: with
 * MSG_DONTWAIT or O_NONBLOCK it returns what is there, or EAGAIN. */
static int sc_waitall_nonblock(int family)
{
	uint8_t buf[100];
	ssize_t r;
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	r = recv(s, buf, sizeof(buf), MSG_WAITALL | MSG_DONTWAIT);
	fl_trace("empty: recv(100, MSG_WAITALL|MSG_DONTWAIT) -> %s", fl_ret(r));
	if (sc_send_pattern(c, 0, 10, 34))
		return -1;
	fl_trace("readable within 1 s: %d", fl_sc_readable_within(s, 1000));
	fl_sc_sleep_ms(20);
	r = recv(s, buf, sizeof(buf), MSG_WAITALL | MSG_DONTWAIT);
	fl_trace("10 queued: recv(100, MSG_WAITALL|MSG_DONTWAIT) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 0, 34));
	r = recv(s, buf, sizeof(buf), MSG_WAITALL | MSG_DONTWAIT);
	fl_trace("drained: recv(100, MSG_WAITALL|MSG_DONTWAIT) -> %s", fl_ret(r));

	sc_nonblock(s, 1);
	r = recv(s, buf, sizeof(buf), MSG_WAITALL);
	fl_trace("O_NONBLOCK, empty: recv(100, MSG_WAITALL) -> %s", fl_ret(r));
	if (sc_send_pattern(c, 10, 10, 34))
		return -1;
	fl_trace("readable within 1 s: %d", fl_sc_readable_within(s, 1000));
	fl_sc_sleep_ms(20);
	r = recv(s, buf, sizeof(buf), MSG_WAITALL);
	fl_trace("O_NONBLOCK, 10 queued: recv(100, MSG_WAITALL) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 10, 34));
	r = read(s, buf, sizeof(buf));
	fl_trace("O_NONBLOCK, drained: read -> %s", fl_ret(r));
	/* The peer closes: EOF, not EAGAIN. */
	close(c);
	fl_trace("readable within 1 s: %d", fl_sc_readable_within(s, 1000));
	r = recv(s, buf, sizeof(buf), MSG_WAITALL);
	fl_trace("O_NONBLOCK, peer closed: recv(100, MSG_WAITALL) -> %s", fl_ret(r));
	close(s);
	return 0;
}
FL_SCENARIO("io-waitall-nonblock", FL_SC_REDIRECTS, sc_waitall_nonblock)

/* MSG_TRUNC on TCP discards bytes without copying them (man 7 tcp). */
static int sc_recv_trunc(int family)
{
	int64_t bad;
	ssize_t r, n;
	int c, s;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 3000, 35))
		return -1;
	r = recv(s, NULL, 1000, MSG_TRUNC | MSG_WAITALL);
	fl_trace("recv(NULL, 1000, MSG_TRUNC|MSG_WAITALL) -> %s", fl_ret(r));
	n = fl_sc_read_pattern(s, 1000, 2000, 35, &bad);
	fl_trace("read %zd, first wrong byte %lld (the discarded 1000 are gone)", n, (long long)bad);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-recv-trunc-discards", FL_SC_REDIRECTS, sc_recv_trunc)

/* -------------------------------------------------------- SO_RCVLOWAT */

static void sc_rcvlowat_body(int c, int s, uint64_t seed)
{
	struct sc_job w = { .fd = c, .seed = seed, .off = 140, .n = 120, .delay_ms = 100 };
	uint8_t buf[1000];
	int64_t bad;
	ssize_t r, n;
	double t;
	int v;

	fl_trace("SO_RCVLOWAT 100 -> %s", fl_ret(sc_setint(s, SOL_SOCKET, SO_RCVLOWAT, 100)));
	sc_getint(s, SOL_SOCKET, SO_RCVLOWAT, &v);
	fl_trace("SO_RCVLOWAT reads %d", v);
	/* 50 bytes, below the mark: not readable. */
	if (sc_send_pattern(c, 0, 50, seed))
		return;
	fl_sc_sleep_ms(30);
	fl_trace("50 queued: readable within 200 ms: %d", fl_sc_readable_within(s, 200));
	/* 60 more: 110, above it. */
	if (sc_send_pattern(c, 50, 60, seed))
		return;
	fl_trace("110 queued: readable within 1 s: %d", fl_sc_readable_within(s, 1000));
	n = fl_sc_read_pattern(s, 0, 110, seed, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);

	/* A blocking recv with 30 queued waits for the mark (120 more in 100
	 * ms: after a partial copy TCP wakes the reader only when the bytes
	 * not yet copied reach the mark, so the second piece is >= 100). */
	if (sc_send_pattern(c, 110, 30, seed))
		return;
	fl_sc_sleep_ms(20);
	t = fl_sc_now(); /* before the writer starts: a stall cannot shorten the wait */
	sc_job_start(&w, sc_writer_fn);
	r = recv(s, buf, sizeof(buf), 0);
	fl_trace("30 queued, 120 more after 100 ms: recv(1000) -> %s, waited for them: %s",
		 r >= 100 && r <= 150 ? "100..150" : fl_ret(r), sc_class(fl_sc_now() - t, 0.07, 1.5));
	sc_job_join(&w);
	if (r > 0 && r <= 150) {
		int ok = sc_match(buf, 110, (size_t)r, seed);

		n = fl_sc_read_pattern(s, 110 + (uint64_t)r, 150 - (size_t)r, seed, &bad);
		fl_trace("all 150 bytes %s", sc_ok(ok && n == 150 - r && bad < 0));
	}

	/* Below the mark at the timeout: what has arrived. */
	sc_timeo(s, SO_RCVTIMEO, 200);
	if (sc_send_pattern(c, 260, 20, seed))
		return;
	t = fl_sc_now();
	r = recv(s, buf, sizeof(buf), 0);
	fl_trace("20 queued, SO_RCVTIMEO 200 ms: recv(1000) -> %s, bytes %s, %s", fl_ret(r),
		 sc_bytes(buf, r, 260, seed), sc_class(fl_sc_now() - t, 0.18, 1.5));
	/* A buffer smaller than the mark: the buffer is the mark. */
	if (sc_send_pattern(c, 280, 50, seed))
		return;
	fl_sc_sleep_ms(30);
	r = recv(s, buf, 10, 0);
	fl_trace("50 queued: recv(10) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 280, seed));
	r = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
	fl_trace("40 queued: recv(1000, MSG_DONTWAIT) -> %s, bytes %s", fl_ret(r),
		 sc_bytes(buf, r, 290, seed));
	sc_timeo(s, SO_RCVTIMEO, 3000);
}

/* SO_RCVLOWAT set on the receiver before any data (docs/kernel.md#rcvlowat). */
static int sc_rcvlowat(int family)
{
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_rcvlowat_body(c, s, 41);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-rcvlowat", 0, sc_rcvlowat)

/* SO_RCVLOWAT set once the connection has carried (redirected) data. */
static int sc_rcvlowat_late(int family)
{
	int64_t bad;
	ssize_t n;
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	if (sc_send_pattern(c, 0, 100000, 42))
		return -1;
	n = fl_sc_read_pattern(s, 0, 100000, 42, &bad);
	fl_trace("first read %zd, first wrong byte %lld", n, (long long)bad);
	sc_rcvlowat_body(c, s, 43);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-rcvlowat-after-traffic", FL_SC_REDIRECTS, sc_rcvlowat_late)

/* --------------------------------------------- FIONREAD, flow control */

/* Waits until the receiver's FIONREAD and the sender's SIOCOUTQ have not
 * moved for 100 ms (at most 2 s); their last values. True if they held. */
static bool sc_stable_counts(int snd, int rcv, int *inq, int *outq)
{
	int pin = -2, pout = -2, stable = 0, i;

	*inq = *outq = -1;
	for (i = 0; i < 100 && stable < 5; i++) {
		fl_sc_sleep_ms(20);
		*inq = sc_inq(rcv);
		*outq = sc_outq(snd);
		stable = *inq == pin && *outq == pout ? stable + 1 : 0;
		pin = *inq;
		pout = *outq;
	}
	return stable >= 5;
}

/* A non-blocking sender fills a reader whose SO_RCVBUF is 128 KiB (so the
 * shim's budget is small, 64 KiB: one 64 KiB message is redirected, then
 * it falls back to TCP, docs/kernel.md#rmem-shared) without it reading,
 * until EAGAIN (docs/kernel.md#no-backpressure) or 16 MiB. Once stable,
 * the receiver's FIONREAD plus the sender's SIOCOUTQ is every byte written
 * (TCP: acked bytes are in the receive queue, the rest in the send queue):
 * FIONREAD must count both of the shim's queues (docs/kernel.md#fionread).
 * Its value alone is not printed: TCP itself varies it by a byte (window
 * probes). A peek of that count returns all of it, across both queues. */
static void sc_fionread_fc_body(int snd, int rcv, uint64_t seed)
{
	static uint8_t buf[1 << 20];
	size_t written = 0, cap = 16u << 20;
	int inq = -1, outq = -1, i, v, stop = 0;
	bool stable;
	int64_t bad;
	ssize_t r, n;

	sc_getint(rcv, SOL_SOCKET, SO_RCVBUF, &v);
	fl_trace("receiver SO_RCVBUF reads %d", v);
	while (written < cap) {
		fl_sc_fill(buf, written, 65536, seed);
		r = send(snd, buf, 65536, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			stop = r < 0 ? errno : 0;
			break;
		}
		written += (size_t)r;
	}
	stable = sc_stable_counts(snd, rcv, &inq, &outq);
	if (getenv("SC_IO_DEBUG"))
		fprintf(stderr, "written %zu inq %d outq %d\n", written, inq, outq);
	fl_trace("counts stable: %s", stable ? "yes" : "no");
	fl_trace("sender wrote more than the receiver's SO_RCVBUF: %s", written > 131072 ? "yes" : "no");
	/* TCP stops it at about its send buffer plus the window (4 MB here). */
	fl_trace("non-blocking sender stopped by EAGAIN before 16 MiB: %s",
		 written < cap && stop == EAGAIN ? "yes" : "no");
	fl_trace("receiver FIONREAD + sender SIOCOUTQ == bytes written: %s",
		 inq >= 0 && outq >= 0 && (size_t)inq + (size_t)outq == written ? "yes" : "no");
	fl_trace("receiver FIONREAD > 0: %s", inq > 0 ? "yes" : "no");
	v = -1;
	ioctl(rcv, SIOCINQ, &v);
	fl_trace("SIOCINQ == FIONREAD: %s", v == inq ? "yes" : "no");
	if (inq > (int)sizeof(buf)) {
		fl_trace("FIONREAD is more than 1 MiB");
	} else if (inq > 0) {
		r = recv(rcv, buf, (size_t)inq, MSG_PEEK | MSG_WAITALL);
		if (getenv("SC_IO_DEBUG"))
			fprintf(stderr, "peek of %d -> %zd\n", inq, r);
		fl_trace("peek(FIONREAD, MSG_WAITALL) returns them all: %s, bytes %s",
			 r == inq ? "yes" : fl_ret(r), sc_bytes(buf, r, 0, seed));
	}
	n = fl_sc_read_pattern(rcv, 0, written, seed, &bad);
	fl_trace("read all written: %s, first wrong byte %lld", n == (ssize_t)written ? "yes" : "no",
		 (long long)bad);
	fl_trace("FIONREAD once read -> %d", sc_inq(rcv));
	/* Now the small writes after the fallback: counted at once. */
	if (sc_send_pattern(snd, written, 1000, seed))
		return;
	for (i = 0; i < 50 && sc_inq(rcv) != 1000; i++)
		fl_sc_sleep_ms(20);
	fl_trace("1000 more sent: FIONREAD -> %d", sc_inq(rcv));
	n = fl_sc_read_pattern(rcv, written, 1000, seed, &bad);
	fl_trace("read %zd, first wrong byte %lld", n, (long long)bad);
	fl_trace("FIONREAD once read -> %d", sc_inq(rcv));
}

/* A connected pair, c and the accepted s, s with a 64 KiB SO_RCVBUF; both
 * ends enrolled before the flood (conformance.h). 0, or -1. */
static int sc_small_rcvbuf_pair(int family, int *c, int *s)
{
	int port, l = fl_sc_listen(family, &port);

	if (l < 0)
		return -1;
	sc_setint(l, SOL_SOCKET, SO_RCVBUF, 131072); /* inherited by accept() */
	*c = fl_sc_connect(family, port);
	*s = *c >= 0 ? accept(l, NULL, NULL) : -1;
	close(l);
	if (*s < 0 || fl_sc_warmup(*c, *s))
		return -1;
	sc_guard(*c);
	sc_guard(*s);
	return 0;
}

static int sc_fionread_fc_server(int family)
{
	int c, s;

	if (sc_small_rcvbuf_pair(family, &c, &s))
		return -1;
	sc_fionread_fc_body(c, s, 51);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-fionread-flow-control", FL_SC_REDIRECTS, sc_fionread_fc_server)

static int sc_fionread_fc_client(int family)
{
	int port, l = fl_sc_listen(family, &port), c, s;

	if (l < 0)
		return -1;
	c = sc_connect_rcvbuf(family, port, 131072);
	s = c >= 0 ? accept(l, NULL, NULL) : -1;
	close(l);
	/* Both ends enrolled before the flood (conformance.h). */
	if (s < 0 || fl_sc_warmup(c, s))
		return -1;
	sc_guard(c);
	sc_guard(s);
	sc_fionread_fc_body(s, c, 52);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-fionread-flow-control-client", FL_SC_REDIRECTS, sc_fionread_fc_client)

/*
 * FIONREAD with the sender's FIN behind the bytes, some of which went
 * over TCP (a 64 KiB SO_RCVBUF: flow control sends the rest there). The
 * receiver's count and the sender's SIOCOUTQ add up to what was written,
 * plus the FIN while it is unacknowledged (queued behind bytes the window
 * holds back): FIONREAD never counts the FIN, with megabytes or with 1000
 * bytes left to read (the shim counts TCP's part two ways, above and
 * below 4 KiB behind a FIN: rx_inq.c), and is 0 at EOF.
 */
static void sc_fin_counts(int c, int s, size_t left, const char *when)
{
	int inq, outq;

	sc_stable_counts(c, s, &inq, &outq);
	if (getenv("SC_IO_DEBUG"))
		fprintf(stderr, "%s: left %zu inq %d outq %d\n", when, left, inq, outq);
	fl_trace("%s: FIONREAD + sender's SIOCOUTQ == bytes unread (+ the FIN unacked): %s", when,
		 inq >= 0 && outq >= 0 && (size_t)inq + (size_t)outq == left + (outq > 0) ? "yes" : "no");
}

static int sc_fionread_fin(int family)
{
	static uint8_t buf[1 << 18];
	size_t written = 0, cap = 144u << 10, most = cap - 1000;
	int64_t bad;
	ssize_t r, n;
	int c, s;

	if (sc_small_rcvbuf_pair(family, &c, &s))
		return -1;
	fl_sc_fill(buf, 0, cap, 52);
	while (written < cap) {
		r = send(c, buf + written, cap - written < 16384 ? cap - written : 16384,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		written += (size_t)r;
	}
	fl_trace("all 144 KiB written: %s", written == cap ? "yes" : "no");
	shutdown(c, SHUT_WR);
	sc_fin_counts(c, s, written, "after the FIN");
	n = fl_sc_read_pattern(s, 0, most, 52, &bad);
	fl_trace("read all but 1000 bytes: %s, first wrong byte %lld",
		 n == (ssize_t)most ? "yes" : fl_ret(n), (long long)bad);
	sc_fin_counts(c, s, written - most, "with 1000 bytes left");
	n = fl_sc_read_pattern(s, most, written - most, 52, &bad);
	fl_trace("read the rest: %s, first wrong byte %lld",
		 n == (ssize_t)(written - most) ? "yes" : fl_ret(n), (long long)bad);
	fl_trace("FIONREAD before EOF is read -> %d", sc_inq(s));
	fl_trace("read at EOF -> %s", fl_ret(recv(s, buf, 1, 0)));
	fl_trace("FIONREAD after EOF -> %d", sc_inq(s));
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-fionread-after-fin", FL_SC_REDIRECTS, sc_fionread_fin)

/* ----------------------------------------------------- splice, sendfile */

/* splice(sock -> pipe) until EOF, checking every byte from off. */
static void sc_splice_all(int s, uint64_t off, uint64_t seed, const char *what)
{
	uint8_t buf[65536];
	long long total = 0;
	int64_t bad = -1;
	int p[2], err = 0;
	ssize_t r;

	if (pipe(p))
		return;
	for (;;) {
		r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_MOVE);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? errno : 0;
			break;
		}
		while (r > 0) {
			ssize_t k = read(p[0], buf, (size_t)r);

			if (k <= 0)
				break;
			if (bad < 0 && !sc_match(buf, off + (uint64_t)total, (size_t)k, seed)) {
				uint8_t want[65536];
				ssize_t i;

				fl_sc_fill(want, off + (uint64_t)total, (size_t)k, seed);
				for (i = 0; i < k && buf[i] == want[i]; i++)
					;
				bad = (int64_t)(off + (uint64_t)total + (uint64_t)i);
			}
			total += k;
			r -= k;
		}
	}
	fl_trace("%s: spliced %lld bytes, first wrong byte %lld, ended by %s", what, total,
		 (long long)bad, err ? fl_errname(err) : "EOF (0)");
	close(p[0]);
	close(p[1]);
}

/* splice(socket -> pipe) reads every byte, including those queued before
 * the first splice (docs/kernel.md#splice-blind). */
static int sc_splice_recv(int family)
{
	struct sc_job w = { .seed = 61, .n = 1 << 20, .after = SC_SHUT_WR };
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	w.fd = c;
	sc_job_start(&w, sc_writer_fn);
	fl_sc_sleep_ms(30);
	sc_splice_all(s, 0, 61, "1 MiB");
	sc_job_join(&w);
	fl_trace("writer -> %s", sc_ret(w.got, w.err));
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-splice-recv", FL_SC_REDIRECTS, sc_splice_recv)

/* Early bytes (TCP, before accept) then 1 MiB, all read by splice. */
static int sc_splice_recv_early(int family)
{
	struct sc_job w = { .seed = 62, .off = 1000, .n = 1 << 20, .after = SC_SHUT_WR };
	int c, s;

	if (sc_pair_early(family, &c, &s, 1000, 62))
		return -1;
	w.fd = c;
	sc_job_start(&w, sc_writer_fn);
	sc_splice_all(s, 0, 62, "1000 early + 1 MiB");
	sc_job_join(&w);
	fl_trace("writer -> %s", sc_ret(w.got, w.err));
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-splice-recv-early-bytes", 0, sc_splice_recv_early)

/* A reader that switches from read() to splice() mid-stream. */
static int sc_splice_after_read(int family)
{
	struct sc_job w = { .seed = 63, .n = 1 << 20, .after = SC_SHUT_WR };
	int64_t bad;
	ssize_t n;
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	w.fd = c;
	sc_job_start(&w, sc_writer_fn);
	n = fl_sc_read_pattern(s, 0, 100000, 63, &bad);
	fl_trace("read() %zd, first wrong byte %lld", n, (long long)bad);
	fl_sc_sleep_ms(20);
	sc_splice_all(s, 100000, 63, "the rest");
	sc_job_join(&w);
	fl_trace("writer -> %s", sc_ret(w.got, w.err));
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-splice-after-read", FL_SC_REDIRECTS, sc_splice_after_read)

struct sc_relay {
	pthread_t th;
	int from, to;
	long long moved;
	int err;
};

/* from -> pipe -> to with splice both ways; at EOF, shutdown(to, SHUT_WR). */
static void *sc_relay_fn(void *arg)
{
	struct sc_relay *r = arg;
	int p[2];

	if (pipe(p)) {
		r->err = errno;
		return NULL;
	}
	for (;;) {
		ssize_t n = splice(r->from, NULL, p[1], NULL, 65536, SPLICE_F_MOVE | SPLICE_F_MORE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->err = n < 0 ? errno : 0;
			break;
		}
		while (n > 0) {
			ssize_t m = splice(p[0], NULL, r->to, NULL, (size_t)n, SPLICE_F_MOVE);

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0) {
				r->err = m < 0 ? errno : EPIPE;
				goto out;
			}
			n -= m;
			r->moved += m;
		}
	}
out:
	shutdown(r->to, SHUT_WR);
	close(p[0]);
	close(p[1]);
	return NULL;
}

/* A splice proxy: A <-> relay <-> B, 8 MiB each way, byte-exact, and the
 * half-close passed on. */
static int sc_splice_proxy(int family)
{
	struct sc_job wa = { .seed = 64, .n = 8 << 20, .after = SC_SHUT_WR };
	struct sc_job wb = { .seed = 65, .n = 8 << 20, .after = SC_SHUT_WR };
	struct sc_job ra = { .seed = 65, .n = 8 << 20, .want_eof = 1 };
	struct sc_job rb = { .seed = 64, .n = 8 << 20, .want_eof = 1 };
	struct sc_relay r1, r2;
	int a, a2, b1, b;

	if (sc_pair_guarded(family, &a, &a2) || sc_pair_guarded(family, &b, &b1))
		return -1;
	memset(&r1, 0, sizeof(r1));
	memset(&r2, 0, sizeof(r2));
	r1.from = a2;
	r1.to = b1;
	r2.from = b1;
	r2.to = a2;
	pthread_create(&r1.th, NULL, sc_relay_fn, &r1);
	pthread_create(&r2.th, NULL, sc_relay_fn, &r2);
	wa.fd = ra.fd = a;
	wb.fd = rb.fd = b;
	sc_job_start(&ra, sc_reader_fn);
	sc_job_start(&rb, sc_reader_fn);
	sc_job_start(&wa, sc_writer_fn);
	sc_job_start(&wb, sc_writer_fn);
	sc_job_join(&wa);
	sc_job_join(&wb);
	sc_job_join(&ra);
	sc_job_join(&rb);
	pthread_join(r1.th, NULL);
	pthread_join(r2.th, NULL);
	fl_trace("writers: A -> %s, B -> %s", sc_ret(wa.got, wa.err), sc_ret(wb.got, wb.err));
	fl_trace("relay A->B moved %lld, ended by %s", r1.moved, r1.err ? fl_errname(r1.err) : "EOF");
	fl_trace("relay B->A moved %lld, ended by %s", r2.moved, r2.err ? fl_errname(r2.err) : "EOF");
	sc_trace_reader("B", &rb);
	sc_trace_reader("A", &ra);
	close(a);
	close(a2);
	close(b);
	close(b1);
	return 0;
}
FL_SCENARIO("io-splice-proxy", FL_SC_REDIRECTS, sc_splice_proxy)

/* sendfile() from a file: whole, a middle range, a range past the end. */
static int sc_sendfile(int family)
{
	static uint8_t buf[65536];
	char path[] = "/tmp/fl-sc-io-XXXXXX";
	const size_t size = (1 << 20) + 4321;
	struct sc_job r = { .seed = 71, .want_eof = 1 };
	size_t done;
	off_t off;
	ssize_t k, total;
	int c, s, f;

	f = mkstemp(path);
	if (f < 0)
		return -1;
	unlink(path);
	for (done = 0; done < size; done += 65536) {
		size_t n = size - done < 65536 ? size - done : 65536;

		fl_sc_fill(buf, done, n, 71);
		if (write(f, buf, n) != (ssize_t)n)
			return -1;
	}
	if (sc_pair_guarded(family, &c, &s))
		return -1;
	/* The whole file, then a middle range, then a range past the end. */
	r.fd = s;
	r.n = size;
	r.want_eof = 0;
	sc_job_start(&r, sc_reader_fn);
	off = 0;
	total = 0;
	while ((size_t)total < size) {
		k = sendfile(c, f, &off, size - (size_t)total);
		if (k <= 0)
			break;
		total += k;
	}
	fl_trace("sendfile whole file: sent %zd, offset now %s", total,
		 (size_t)off == size ? "at the end" : "wrong");
	sc_job_join(&r);
	sc_trace_reader("server", &r);

	off = 1000;
	r = (struct sc_job){ .fd = s, .seed = 71, .off = 1000, .n = 5000 };
	sc_job_start(&r, sc_reader_fn);
	k = sendfile(c, f, &off, 5000);
	fl_trace("sendfile(offset 1000, 5000) -> %s, offset now %lld", fl_ret(k), (long long)off);
	sc_job_join(&r);
	sc_trace_reader("server", &r);

	off = (off_t)size - 100;
	r = (struct sc_job){ .fd = s, .seed = 71, .off = size - 100, .n = 100, .want_eof = 1 };
	sc_job_start(&r, sc_reader_fn);
	k = sendfile(c, f, &off, 1000);
	fl_trace("sendfile(100 before the end, 1000) -> %s", fl_ret(k));
	shutdown(c, SHUT_WR);
	sc_job_join(&r);
	sc_trace_reader("server", &r);
	close(f);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-sendfile", FL_SC_REDIRECTS, sc_sendfile)

/* A reader that reads until EOF (or an error) into its buffer. */
struct sc_sink {
	pthread_t th;
	int fd;
	uint8_t buf[32768];
	size_t len;
	int err;
};

static void *sc_sink_fn(void *arg)
{
	struct sc_sink *k = arg;
	ssize_t r;

	for (;;) {
		r = read(k->fd, k->buf + k->len, sizeof(k->buf) - k->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			k->err = r < 0 ? errno : 0;
			return NULL;
		}
		k->len += (size_t)r;
		if (k->len == sizeof(k->buf))
			return NULL;
	}
}

/* What the stream should carry, appended as the scenario sends it. */
struct sc_want {
	uint8_t buf[32768];
	size_t len;
};

static void sc_want_add(struct sc_want *w, const void *p, ssize_t n)
{
	if (n > 0 && w->len + (size_t)n <= sizeof(w->buf)) {
		memcpy(w->buf + w->len, p, (size_t)n);
		w->len += (size_t)n;
	}
}

/* Writes pattern bytes [off, off + n) of seed, and expects them. */
static void sc_want_write(struct sc_want *w, int fd, uint64_t off, size_t n, uint64_t seed,
			  int flags)
{
	uint8_t b[4096];
	ssize_t k;

	fl_sc_fill(b, off, n, seed);
	k = send(fd, b, n, flags);
	fl_trace("send(%zu%s) -> %s", n, flags & MSG_MORE ? ", MSG_MORE" : "", fl_ret(k));
	sc_want_add(w, b, k);
}

/* sendfile of the file whose byte X is pattern byte X; expects what it sent. */
static void sc_want_sendfile(struct sc_want *w, int c, int f, off_t *pos, size_t n,
			     const char *what)
{
	uint8_t b[4096];
	off_t was = pos ? *pos : lseek(f, 0, SEEK_CUR);
	ssize_t k = sendfile(c, f, pos, n);
	off_t now = pos ? *pos : lseek(f, 0, SEEK_CUR);

	fl_trace("%s: sendfile(%zu) -> %s, %s moved %lld", what, n, fl_ret(k),
		 pos ? "offset" : "file position", (long long)(now - was));
	if (k > 0 && (size_t)k <= sizeof(b)) {
		fl_sc_fill(b, (uint64_t)was, (size_t)k, 73);
		sc_want_add(w, b, k);
	}
}

/*
 * sendfile() of small ranges while the socket is corked or holds bytes (the
 * shim reads such a range into its send buffer: preload/tx/tx.c): a web
 * server's headers under TCP_CORK and its body by sendfile, the same after
 * a MSG_MORE send, a NULL offset (the file position moves), a count of 0,
 * a range past the end, and input fds that cannot be read at an offset (a
 * pipe, a write-only file, a closed fd). The reader must get exactly the
 * bytes sent, in order, then EOF.
 */
static int sc_sendfile_corked(int family)
{
	static struct sc_sink k;
	static struct sc_want w;
	static uint8_t buf[16384];
	char path[] = "/tmp/fl-sc-io-XXXXXX";
	int c, s, f, wf, p[2], on = 1, off = 0;
	off_t pos;

	memset(&k, 0, sizeof(k));
	memset(&w, 0, sizeof(w));
	f = mkstemp(path);
	if (f < 0)
		return -1;
	wf = open(path, O_WRONLY);
	unlink(path);
	fl_sc_fill(buf, 0, sizeof(buf), 73);
	if (wf < 0 || write(f, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || pipe(p) ||
	    write(p[1], buf, 100) != 100)
		return -1;
	if (sc_pair_guarded(family, &c, &s))
		return -1;
	k.fd = s;
	pthread_create(&k.th, NULL, sc_sink_fn, &k);

	setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	sc_want_write(&w, c, 0, 300, 74, 0);
	pos = 1000;
	sc_want_sendfile(&w, c, f, &pos, 2000, "corked");
	setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));

	sc_want_write(&w, c, 300, 300, 74, MSG_MORE);
	sc_want_sendfile(&w, c, f, &pos, 2000, "after MSG_MORE");

	setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	sc_want_write(&w, c, 600, 300, 74, 0);
	lseek(f, 5000, SEEK_SET);
	sc_want_sendfile(&w, c, f, NULL, 100, "corked, NULL offset");
	sc_want_sendfile(&w, c, f, &pos, 0, "corked, 0 bytes");
	pos = 0;
	fl_trace("corked: sendfile(from a pipe) -> %s", fl_ret(sendfile(c, p[0], &pos, 100)));
	pos = 0;
	fl_trace("corked: sendfile(from a write-only file) -> %s",
		 fl_ret(sendfile(c, wf, &pos, 100)));
	pos = 0;
	fl_trace("corked: sendfile(from a closed fd) -> %s", fl_ret(sendfile(c, 987, &pos, 100)));
	pos = (off_t)sizeof(buf) - 50;
	sc_want_sendfile(&w, c, f, &pos, 1000, "corked, 50 before the end");
	sc_want_sendfile(&w, c, f, &pos, 1000, "corked, at the end");
	sc_want_write(&w, c, 900, 100, 74, 0);
	setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	shutdown(c, SHUT_WR);

	pthread_join(k.th, NULL);
	fl_trace("reader: %zu bytes of %zu sent, %s, then %s", k.len, w.len,
		 k.len == w.len && !memcmp(k.buf, w.buf, w.len) ? "all as sent, in order" : "WRONG",
		 k.err ? fl_errname(k.err) : "EOF");
	close(p[0]);
	close(p[1]);
	close(wf);
	close(f);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-sendfile-corked", FL_SC_REDIRECTS, sc_sendfile_corked)

struct sc_pipe_feed {
	int fd;
	size_t n;
	uint64_t seed;
};

static void *sc_pipe_feed_fn(void *arg)
{
	struct sc_pipe_feed *f = arg;

	fl_sc_write_pattern(f->fd, 0, f->n, f->seed);
	close(f->fd);
	return NULL;
}

/* splice(pipe -> socket) on the sender. */
static int sc_splice_send(int family)
{
	struct sc_pipe_feed f = { .n = (1 << 20) + 777, .seed = 72 };
	struct sc_job r = { .seed = 72, .n = (1 << 20) + 777, .want_eof = 1 };
	long long total = 0;
	pthread_t th;
	int c, s, p[2], err = 0;
	ssize_t k;

	if (sc_pair_guarded(family, &c, &s) || pipe(p))
		return -1;
	f.fd = p[1];
	pthread_create(&th, NULL, sc_pipe_feed_fn, &f);
	r.fd = s;
	sc_job_start(&r, sc_reader_fn);
	for (;;) {
		k = splice(p[0], NULL, c, NULL, 65536, SPLICE_F_MOVE);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? errno : 0;
			break;
		}
		total += k;
	}
	shutdown(c, SHUT_WR);
	fl_trace("splice(pipe -> socket): %lld bytes, ended by %s", total, err ? fl_errname(err) : "EOF");
	pthread_join(th, NULL);
	sc_job_join(&r);
	sc_trace_reader("server", &r);
	close(p[0]);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-splice-send", FL_SC_REDIRECTS, sc_splice_send)

/* -------------------------------------------------- shutdown, half-close */

/* One side shuts its writing down after sending; the other keeps sending
 * (1 MiB) and reads EOF; the shut side cannot write (EPIPE). */
static void sc_half_close(int a, int b, const char *an, const char *bn, uint64_t seed)
{
	struct sc_job w = { .fd = b, .seed = seed + 1, .n = 1 << 20 };
	uint8_t buf[100];
	int64_t bad;
	ssize_t n, r;
	int v;

	if (sc_send_pattern(a, 0, 1000, seed))
		return;
	fl_trace("%s shutdown(SHUT_WR) -> %s", an, fl_ret(shutdown(a, SHUT_WR)));
	n = fl_sc_read_pattern(b, 0, 1000, seed, &bad);
	fl_trace("%s read %zd, first wrong byte %lld", bn, n, (long long)bad);
	r = recv(b, buf, sizeof(buf), 0);
	fl_trace("%s recv -> %s (EOF)", bn, fl_ret(r));
	r = recv(b, buf, sizeof(buf), 0);
	fl_trace("%s recv again -> %s", bn, fl_ret(r));
	/* b keeps sending. */
	sc_job_start(&w, sc_writer_fn);
	n = fl_sc_read_pattern(a, 0, 1 << 20, seed + 1, &bad);
	sc_job_join(&w);
	fl_trace("%s sends 1 MiB -> %s; %s reads %zd, first wrong byte %lld", bn, sc_ret(w.got, w.err),
		 an, n, (long long)bad);
	r = send(a, "x", 1, MSG_NOSIGNAL);
	fl_trace("%s send after SHUT_WR -> %s", an, fl_ret(r));
	r = write(a, "x", 1);
	fl_trace("%s write after SHUT_WR -> %s", an, fl_ret(r));
	sc_getint(a, SOL_SOCKET, SO_ERROR, &v);
	fl_trace("%s SO_ERROR -> %s", an, v ? fl_errname(v) : "0");
	r = send(b, "yz", 2, MSG_NOSIGNAL);
	fl_trace("%s send 2 -> %s", bn, fl_ret(r));
	r = recv(a, buf, 2, MSG_WAITALL);
	fl_trace("%s recv(2, MSG_WAITALL) -> %s", an, fl_ret(r));
	fl_trace("%s shutdown(SHUT_WR) -> %s", bn, fl_ret(shutdown(b, SHUT_WR)));
	r = recv(a, buf, sizeof(buf), 0);
	fl_trace("%s recv -> %s (EOF)", an, fl_ret(r));
	r = send(b, "x", 1, MSG_NOSIGNAL);
	fl_trace("%s send after SHUT_WR -> %s", bn, fl_ret(r));
	fl_trace("%s shutdown(SHUT_WR) again -> %s", an, fl_ret(shutdown(a, SHUT_WR)));
	r = recv(b, buf, sizeof(buf), 0);
	fl_trace("%s recv -> %s", bn, fl_ret(r));
}

static int sc_half_close_client(int family)
{
	int c, s;

	signal(SIGPIPE, SIG_IGN);
	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_half_close(c, s, "client", "server", 81);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-shutdown-wr-client", FL_SC_REDIRECTS, sc_half_close_client)

static int sc_half_close_server(int family)
{
	int c, s;

	signal(SIGPIPE, SIG_IGN);
	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_half_close(s, c, "server", "client", 83);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-shutdown-wr-server", FL_SC_REDIRECTS, sc_half_close_server)

/* shutdown(SHUT_RD): queued bytes stay readable, then reads return 0 at
 * once; the socket still writes. */
static int sc_shut_rd(int family)
{
	uint8_t buf[1000];
	int64_t bad;
	ssize_t r, n;
	double t;
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_guard_ms(s, 1000);
	if (sc_send_pattern(c, 0, 100, 85))
		return -1;
	fl_sc_sleep_ms(30);
	fl_trace("server shutdown(SHUT_RD) -> %s", fl_ret(shutdown(s, SHUT_RD)));
	n = fl_sc_read_pattern(s, 0, 100, 85, &bad);
	fl_trace("server read the 100 queued: %zd, first wrong byte %lld", n, (long long)bad);
	t = fl_sc_now();
	r = recv(s, buf, sizeof(buf), 0);
	fl_trace("server recv, queue empty -> %s, %s", fl_ret(r), sc_class(fl_sc_now() - t, 0, 0.5));
	fl_trace("server readable at once: %d", fl_sc_readable_within(s, 0));
	r = send(s, "hello", 5, MSG_NOSIGNAL);
	fl_trace("server send -> %s", fl_ret(r));
	r = recv(c, buf, 5, MSG_WAITALL);
	fl_trace("client recv(5, MSG_WAITALL) -> %s", fl_ret(r));
	fl_trace("server shutdown(SHUT_RD) again -> %s", fl_ret(shutdown(s, SHUT_RD)));
	fl_trace("server shutdown(SHUT_WR) -> %s", fl_ret(shutdown(s, SHUT_WR)));
	r = recv(c, buf, sizeof(buf), 0);
	fl_trace("client recv -> %s (EOF)", fl_ret(r));
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-shutdown-rd", FL_SC_REDIRECTS, sc_shut_rd)

/* shutdown(SHUT_RDWR) on the server: it reads 0 and cannot write; the
 * client reads EOF, and what it writes then is refused with a reset. */
static int sc_shut_rdwr(int family)
{
	uint8_t buf[1000];
	int64_t bad;
	ssize_t r, n;
	int c, s, v, i;

	signal(SIGPIPE, SIG_IGN);
	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_guard_ms(s, 1000);
	sc_guard_ms(c, 1000);
	if (sc_send_pattern(c, 0, 1000, 86) || sc_send_pattern(s, 0, 1000, 87))
		return -1;
	n = fl_sc_read_pattern(s, 0, 1000, 86, &bad);
	fl_trace("server read %zd, first wrong byte %lld", n, (long long)bad);
	fl_trace("server shutdown(SHUT_RDWR) -> %s", fl_ret(shutdown(s, SHUT_RDWR)));
	r = recv(s, buf, sizeof(buf), 0);
	fl_trace("server recv -> %s", fl_ret(r));
	r = send(s, "x", 1, MSG_NOSIGNAL);
	fl_trace("server send -> %s", fl_ret(r));
	n = fl_sc_read_pattern(c, 0, 1000, 87, &bad);
	fl_trace("client read %zd, first wrong byte %lld", n, (long long)bad);
	r = recv(c, buf, sizeof(buf), 0);
	fl_trace("client recv -> %s (EOF)", fl_ret(r));
	/* The client writes into a connection whose reader is gone. */
	for (i = 0; i < 3; i++) {
		r = send(c, buf, 100, MSG_NOSIGNAL);
		fl_trace("client send %d -> %s", i, fl_ret(r));
		fl_sc_sleep_ms(50);
	}
	sc_getint(c, SOL_SOCKET, SO_ERROR, &v);
	fl_trace("client SO_ERROR -> %s", v ? fl_errname(v) : "0");
	r = recv(c, buf, sizeof(buf), 0);
	fl_trace("client recv -> %s", fl_ret(r));
	r = recv(s, buf, sizeof(buf), 0);
	fl_trace("server recv -> %s", fl_ret(r));
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-shutdown-rdwr", FL_SC_REDIRECTS, sc_shut_rdwr)

/* -------------------------------------------------- close with data */

/* The receiver closes with unread bytes: TCP resets the connection, so the
 * sender's writes fail (docs/kernel.md#loss). early: the unread bytes went
 * over TCP before accept(); else they were sent afterwards (redirected). */
static void sc_close_unread(int c, int s, int first_read)
{
	uint8_t buf[100];
	int i, v;
	ssize_t r;

	close(s);
	fl_sc_sleep_ms(50);
	if (first_read) {
		r = recv(c, buf, sizeof(buf), 0);
		fl_trace("sender recv -> %s", fl_ret(r));
		r = recv(c, buf, sizeof(buf), 0);
		fl_trace("sender recv -> %s", fl_ret(r));
	}
	for (i = 0; i < 20; i++) {
		r = send(c, buf, sizeof(buf), MSG_NOSIGNAL);
		if (r < 0)
			break;
		fl_sc_sleep_ms(10);
	}
	fl_trace("sender sends before an error: %d, then -> %s", i, fl_ret(r));
	r = send(c, buf, sizeof(buf), MSG_NOSIGNAL);
	fl_trace("sender send -> %s", fl_ret(r));
	sc_getint(c, SOL_SOCKET, SO_ERROR, &v);
	fl_trace("sender SO_ERROR -> %s", v ? fl_errname(v) : "0");
	r = recv(c, buf, sizeof(buf), 0);
	fl_trace("sender recv -> %s", fl_ret(r));
	close(c);
}

static int sc_close_unread_redirected(int family)
{
	int c, s;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 1000, 91))
		return -1;
	fl_sc_sleep_ms(20);
	sc_close_unread(c, s, 0);
	return 0;
}
FL_SCENARIO("io-close-unread-then-write", FL_SC_REDIRECTS, sc_close_unread_redirected)

static int sc_close_unread_early(int family)
{
	int c, s;

	if (sc_pair_early(family, &c, &s, 1000, 92))
		return -1;
	sc_close_unread(c, s, 0);
	return 0;
}
FL_SCENARIO("io-close-unread-early-then-write", 0, sc_close_unread_early)

static int sc_close_unread_read(int family)
{
	int c, s;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 1000, 93))
		return -1;
	fl_sc_sleep_ms(20);
	sc_close_unread(c, s, 1);
	return 0;
}
FL_SCENARIO("io-close-unread-then-read", FL_SC_REDIRECTS, sc_close_unread_read)

/* A reset does not take back what was sent before it: TCP's peer reads
 * every byte it had received, then gets ECONNRESET. The server sends
 * 64 KiB (less than TCP's receive queue takes) the client does not read
 * yet, then closes with a reset: under a
 * zero SO_LINGER (app_linger, as nginx's reset_timedout_connection and
 * haproxy's nolinger do), or with bytes of the client's unread (the
 * reset TCP makes of that close). Under the shim the 64 KiB wait in the
 * client's queue of redirected bytes, which the reset must not empty
 * either (it does not, on this kernel). */
static void sc_reset_after_send(int c, int s, int app_linger)
{
	struct linger lg = { 1, 0 };
	uint8_t buf[100];
	int64_t bad;
	ssize_t n, r;

	if (sc_send_pattern(s, 0, 64 * 1024, 96))
		return;
	fl_sc_sleep_ms(20);
	if (app_linger)
		setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(s);
	fl_sc_sleep_ms(50);
	n = fl_sc_read_pattern(c, 0, 64 * 1024, 96, &bad);
	fl_trace("client read %zd of 65536 after the reset, first wrong byte %lld", n,
		 (long long)bad);
	r = recv(c, buf, sizeof(buf), 0);
	fl_trace("client recv -> %s", fl_ret(r));
	close(c);
}

static int sc_zero_linger_close_after_send(int family)
{
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	sc_reset_after_send(c, s, 1);
	return 0;
}
FL_SCENARIO("io-zero-linger-close-peer-reads-first", FL_SC_REDIRECTS, sc_zero_linger_close_after_send)

static int sc_unread_close_after_send(int family)
{
	int c, s;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 1000, 97))
		return -1;
	fl_sc_sleep_ms(20);
	sc_reset_after_send(c, s, 0);
	return 0;
}
FL_SCENARIO("io-close-unread-peer-reads-first", FL_SC_REDIRECTS, sc_unread_close_after_send)

/* The reset wakes a peer blocked in recv() at once. The server reads some
 * bytes first (both directions carried data), then closes with the rest
 * unread while the client waits for a reply. */
static int sc_close_unread_wakes(int family)
{
	struct sc_job rd = { .seed = 94, .n = 10 };
	int64_t bad;
	ssize_t n;
	double t;
	int c, s;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 2000, 95))
		return -1;
	n = fl_sc_read_pattern(s, 0, 1000, 95, &bad);
	fl_trace("server read %zd of 2000, first wrong byte %lld", n, (long long)bad);
	rd.fd = c;
	t = fl_sc_now();
	sc_job_start(&rd, sc_reader_fn);
	fl_sc_sleep_ms(50);
	close(s);
	sc_job_join(&rd);
	fl_trace("client blocked in read -> %s, woken by the close: %s", sc_ret(rd.got, rd.err),
		 sc_class(fl_sc_now() - t, 0.04, 1.0));
	close(c);
	return 0;
}
FL_SCENARIO("io-close-unread-wakes-reader", FL_SC_REDIRECTS, sc_close_unread_wakes)

/* The sender closes with 2 MiB still queued: the reader gets all of it,
 * then EOF. */
static int sc_close_sender_queued(int family)
{
	struct sc_job w = { .seed = 96, .n = 2 << 20, .after = SC_CLOSE };
	struct sc_job r = { .seed = 96, .n = 2 << 20, .want_eof = 1, .delay_ms = 100 };
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	w.fd = c;
	r.fd = s;
	sc_job_start(&w, sc_writer_fn);
	sc_job_start(&r, sc_reader_fn);
	sc_job_join(&w);
	sc_job_join(&r);
	fl_trace("writer -> %s", sc_ret(w.got, w.err));
	sc_trace_reader("server", &r);
	close(s);
	return 0;
}
FL_SCENARIO("io-close-sender-queued", FL_SC_REDIRECTS, sc_close_sender_queued)

/* 2000 small writes, then close() at once: nothing is lost. */
static int sc_close_sender_small(int family)
{
	uint8_t buf[50];
	int64_t bad;
	ssize_t n, r;
	int c, s, i;
	char b;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	for (i = 0; i < 2000; i++) {
		fl_sc_fill(buf, (uint64_t)i * 50, 50, 97);
		if (write(c, buf, 50) != 50)
			break;
	}
	fl_trace("client wrote %d x 50, close -> %s", i, fl_ret(close(c)));
	fl_sc_sleep_ms(50);
	n = fl_sc_read_pattern(s, 0, 100000, 97, &bad);
	r = read(s, &b, 1);
	fl_trace("server read %zd, first wrong byte %lld, then read -> %s", n, (long long)bad, fl_ret(r));
	close(s);
	return 0;
}
FL_SCENARIO("io-close-sender-small-writes", FL_SC_REDIRECTS, sc_close_sender_small)

/* A forked child writes small pieces and _exit()s without closing: the
 * kernel closes its socket, the reader gets everything, then EOF. */
static int sc_exit_sender_small(int family)
{
	int64_t bad;
	ssize_t n, r;
	int c, s, st;
	pid_t pid;
	char b;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		uint8_t buf[50];
		int i;

		close(s);
		for (i = 0; i < 2000; i++) {
			fl_sc_fill(buf, (uint64_t)i * 50, 50, 98);
			if (write(c, buf, 50) != 50)
				_exit(1);
		}
		_exit(0);
	}
	close(c);
	n = fl_sc_read_pattern(s, 0, 100000, 98, &bad);
	r = read(s, &b, 1);
	waitpid(pid, &st, 0);
	fl_trace("child exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	fl_trace("server read %zd, first wrong byte %lld, then read -> %s", n, (long long)bad, fl_ret(r));
	close(s);
	return 0;
}
FL_SCENARIO("io-exit-sender-small-writes", FL_SC_REDIRECTS, sc_exit_sender_small)

/* -------------------------------------------------------- SIGPIPE, EPIPE */

static volatile sig_atomic_t sc_sigpipes;

static void sc_on_sigpipe(int sig)
{
	(void)sig;
	sc_sigpipes++;
}

/* The peer closed (after reading everything): the first write still
 * succeeds (TCP answers it with a reset), later ones fail with EPIPE and
 * SIGPIPE, or without the signal given MSG_NOSIGNAL. */
static void sc_write_closed(int family, int nosignal, uint64_t seed)
{
	struct sigaction sa;
	uint8_t buf[100];
	int64_t bad;
	ssize_t n, r;
	int c, s, i, v;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sc_on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	sc_sigpipes = 0;
	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 1000, seed))
		return;
	n = fl_sc_read_pattern(s, 0, 1000, seed, &bad);
	fl_trace("server read %zd, first wrong byte %lld, then closes", n, (long long)bad);
	close(s);
	fl_sc_sleep_ms(50);
	for (i = 0; i < 4; i++) {
		int before = sc_sigpipes;
		const char *call;

		memset(buf, 'a' + i, sizeof(buf));
		if (nosignal) {
			call = i & 1 ? "sendmsg(MSG_NOSIGNAL)" : "send(MSG_NOSIGNAL)";
			if (i & 1) {
				struct iovec iov = { buf, sizeof(buf) };
				struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

				r = sendmsg(c, &m, MSG_NOSIGNAL);
			} else {
				r = send(c, buf, sizeof(buf), MSG_NOSIGNAL);
			}
		} else {
			call = i & 1 ? "send" : "write";
			r = i & 1 ? send(c, buf, sizeof(buf), 0) : write(c, buf, sizeof(buf));
		}
		fl_trace("client %s %d -> %s, SIGPIPE %d", call, i, fl_ret(r), sc_sigpipes - before);
		fl_sc_sleep_ms(50);
	}
	sc_getint(c, SOL_SOCKET, SO_ERROR, &v);
	fl_trace("client SO_ERROR -> %s", v ? fl_errname(v) : "0");
	r = recv(c, buf, sizeof(buf), 0);
	fl_trace("client recv -> %s", fl_ret(r));
	close(c);
}

static int sc_sigpipe(int family)
{
	sc_write_closed(family, 0, 101);
	return 0;
}
FL_SCENARIO("io-sigpipe-write", FL_SC_REDIRECTS, sc_sigpipe)

static int sc_epipe_nosignal(int family)
{
	sc_write_closed(family, 1, 102);
	return 0;
}
FL_SCENARIO("io-epipe-nosignal", FL_SC_REDIRECTS, sc_epipe_nosignal)

/* ---------------------------------------------- liveness getsockopt */

static const char *sc_state(int st)
{
	static const char *names[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
				       "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT",
				       "LAST_ACK", "LISTEN", "CLOSING" };

	return st >= 0 && st < (int)(sizeof(names) / sizeof(names[0])) ? names[st] : "?";
}

static void sc_trace_state(const char *who, int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int r;

	memset(&ti, 0, sizeof(ti));
	r = getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
	fl_trace("%s TCP_INFO -> %s, tcpi_state %s", who, fl_ret(r), sc_state(ti.tcpi_state));
}

/* An int option's readback; SO_ERROR values as errno names. */
static void sc_trace_opt(const char *what, int fd, int level, int opt)
{
	int v, r = sc_getint(fd, level, opt, &v);

	if (r)
		fl_trace("%s -> %s", what, fl_ret(r));
	else if (level == SOL_SOCKET && opt == SO_ERROR)
		fl_trace("%s -> 0, %s", what, v ? fl_errname(v) : "0");
	else
		fl_trace("%s -> 0, %d", what, opt == SO_KEEPALIVE || opt == TCP_NODELAY ? !!v : v);
}

static int sc_same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b, socklen_t la,
			socklen_t lb)
{
	return la == lb && !memcmp(a, b, la);
}

/* What applications ask a socket to decide it is alive. */
static int sc_liveness(int family)
{
	struct sockaddr_storage pa, sa;
	socklen_t pl = sizeof(pa), sl = sizeof(sa);
	uint8_t buf[100];
	int64_t bad;
	ssize_t r, n;
	int c, s, v;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	if (sc_send_pattern(c, 0, 1000, 111) || sc_send_pattern(s, 0, 1000, 112))
		return -1;
	n = fl_sc_read_pattern(s, 0, 1000, 111, &bad);
	fl_trace("server read %zd, first wrong byte %lld", n, (long long)bad);
	n = fl_sc_read_pattern(c, 0, 1000, 112, &bad);
	fl_trace("client read %zd, first wrong byte %lld", n, (long long)bad);
	sc_trace_state("client", c);
	sc_trace_state("server", s);
	sc_trace_opt("client SO_ERROR", c, SOL_SOCKET, SO_ERROR);
	sc_trace_opt("server SO_ERROR", s, SOL_SOCKET, SO_ERROR);
	sc_trace_opt("client SO_TYPE (SOCK_STREAM 1)", c, SOL_SOCKET, SO_TYPE);
	r = sc_getint(c, SOL_SOCKET, SO_DOMAIN, &v);
	fl_trace("client SO_DOMAIN -> %s, is the family: %s", fl_ret(r), v == family ? "yes" : "no");
	sc_trace_opt("client SO_PROTOCOL (IPPROTO_TCP 6)", c, SOL_SOCKET, SO_PROTOCOL);
	sc_trace_opt("server SO_ACCEPTCONN", s, SOL_SOCKET, SO_ACCEPTCONN);
	sc_trace_opt("client TCP_NODELAY", c, IPPROTO_TCP, TCP_NODELAY);
	fl_trace("client TCP_NODELAY 1 -> %s", fl_ret(sc_setint(c, IPPROTO_TCP, TCP_NODELAY, 1)));
	sc_trace_opt("client TCP_NODELAY", c, IPPROTO_TCP, TCP_NODELAY);
	fl_trace("client TCP_NODELAY 0 -> %s", fl_ret(sc_setint(c, IPPROTO_TCP, TCP_NODELAY, 0)));
	sc_trace_opt("client TCP_NODELAY", c, IPPROTO_TCP, TCP_NODELAY);
	fl_trace("server TCP_NODELAY 1 -> %s", fl_ret(sc_setint(s, IPPROTO_TCP, TCP_NODELAY, 1)));
	sc_trace_opt("server TCP_NODELAY", s, IPPROTO_TCP, TCP_NODELAY);
	fl_trace("client SO_KEEPALIVE 1 -> %s", fl_ret(sc_setint(c, SOL_SOCKET, SO_KEEPALIVE, 1)));
	sc_trace_opt("client SO_KEEPALIVE", c, SOL_SOCKET, SO_KEEPALIVE);
	r = getpeername(c, (struct sockaddr *)&pa, &pl);
	fl_trace("client getpeername -> %s", fl_ret(r));
	r = getsockname(s, (struct sockaddr *)&sa, &sl);
	fl_trace("server getsockname -> %s, same address: %s", fl_ret(r),
		 sc_same_addr(&pa, &sa, pl, sl) ? "yes" : "no");
	pl = sizeof(pa);
	sl = sizeof(sa);
	getpeername(s, (struct sockaddr *)&pa, &pl);
	getsockname(c, (struct sockaddr *)&sa, &sl);
	fl_trace("server peer is the client's name: %s", sc_same_addr(&pa, &sa, pl, sl) ? "yes" : "no");
	r = recv(c, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	fl_trace("client alive probe recv(MSG_PEEK|MSG_DONTWAIT) -> %s", fl_ret(r));
	fl_trace("client SIOCOUTQ once acked -> %d", sc_outq(c));

	/* Half-close, then close. */
	fl_trace("client shutdown(SHUT_WR) -> %s", fl_ret(shutdown(c, SHUT_WR)));
	fl_sc_sleep_ms(50);
	sc_trace_state("client", c);
	sc_trace_state("server", s);
	r = recv(s, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	fl_trace("server probe recv(MSG_PEEK|MSG_DONTWAIT) -> %s", fl_ret(r));
	r = getpeername(c, (struct sockaddr *)&pa, &pl);
	fl_trace("client getpeername -> %s", fl_ret(r));
	close(s);
	fl_sc_sleep_ms(50);
	sc_trace_state("client", c);
	sc_trace_opt("client SO_ERROR", c, SOL_SOCKET, SO_ERROR);
	pl = sizeof(pa);
	r = getpeername(c, (struct sockaddr *)&pa, &pl);
	fl_trace("client getpeername -> %s", fl_ret(r));
	r = recv(c, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	fl_trace("client probe recv(MSG_PEEK|MSG_DONTWAIT) -> %s", fl_ret(r));
	close(c);
	return 0;
}
FL_SCENARIO("io-liveness-getsockopt", FL_SC_REDIRECTS, sc_liveness)

/* The same probes after a reset (the server closed with unread bytes). */
static int sc_liveness_reset(int family)
{
	struct sockaddr_storage pa;
	socklen_t pl = sizeof(pa);
	uint8_t buf[100];
	int c, s;
	ssize_t r;

	if (sc_pair_guarded(family, &c, &s) || sc_send_pattern(c, 0, 1000, 113))
		return -1;
	fl_sc_sleep_ms(20);
	close(s);
	fl_sc_sleep_ms(50);
	sc_trace_state("client", c);
	sc_trace_opt("client SO_ERROR", c, SOL_SOCKET, SO_ERROR);
	sc_trace_opt("client SO_ERROR again", c, SOL_SOCKET, SO_ERROR);
	r = getpeername(c, (struct sockaddr *)&pa, &pl);
	fl_trace("client getpeername -> %s", fl_ret(r));
	r = recv(c, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	fl_trace("client probe recv(MSG_PEEK|MSG_DONTWAIT) -> %s", fl_ret(r));
	close(c);
	return 0;
}
FL_SCENARIO("io-liveness-after-reset", FL_SC_REDIRECTS, sc_liveness_reset)

/* ------------------------------------------------------- MSG_ZEROCOPY */

struct sc_zc {
	uint32_t seen; /* completion ids 0..31 reported */
	int more;      /* ids >= 32 reported */
	int origin_ok, copied, other;
};

/* Reads what the error queue holds after POLLERR within ms; 1 if any. */
static int sc_zc_collect(int fd, struct sc_zc *z, int ms)
{
	struct pollfd p = { .fd = fd, .events = 0 };
	char ctl[256];
	struct msghdr m = { .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;

	if (poll(&p, 1, ms) != 1 || !(p.revents & POLLERR))
		return 0;
	if (recvmsg(fd, &m, MSG_ERRQUEUE) < 0)
		return 0;
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		struct sock_extended_err *ee = (struct sock_extended_err *)CMSG_DATA(cm);
		uint32_t id;

		if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
		      (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR))) {
			z->other++;
			continue;
		}
		if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY || ee->ee_errno) {
			z->origin_ok = 0;
			continue;
		}
		if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
			z->copied = 1;
		for (id = ee->ee_info; id <= ee->ee_data; id++) {
			if (id < 32)
				z->seen |= 1u << id;
			else
				z->more = 1;
			if (id == UINT32_MAX)
				break;
		}
	}
	return 1;
}

/* SO_ZEROCOPY then three send(MSG_ZEROCOPY): each successful send call
 * gets the next completion id (0, 1, 2), and the completions, however the
 * kernel groups them, arrive on the error queue (docs/kernel.md#zerocopy);
 * no other ids appear. The bytes arrive intact. */
static int sc_zerocopy(int family)
{
	static uint8_t buf[65536];
	struct sc_job r = { .seed = 121, .n = 4096 + 3 * 65536 };
	struct sc_zc z = { .origin_ok = 1 };
	char ids[200];
	size_t len = 0;
	double end;
	int c, s, i;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	/* Ordinary bytes first. */
	if (sc_send_pattern(c, 0, 4096, 121))
		return -1;
	r.fd = s;
	sc_job_start(&r, sc_reader_fn);
	fl_trace("SO_ZEROCOPY 1 -> %s", fl_ret(sc_setint(c, SOL_SOCKET, SO_ZEROCOPY, 1)));
	for (i = 0; i < 3; i++) {
		ssize_t k;

		fl_sc_fill(buf, 4096 + (uint64_t)i * 65536, 65536, 121);
		k = send(c, buf, 65536, MSG_ZEROCOPY);
		fl_trace("send(64 KiB, MSG_ZEROCOPY) %d -> %s", i, fl_ret(k));
		/* The buffer may be reused only after its completion: wait. */
		end = fl_sc_now() + 1;
		while (!(z.seen & (1u << i)) && fl_sc_now() < end)
			sc_zc_collect(c, &z, 50);
	}
	/* Any further notifications (ids no send call was given). */
	while (sc_zc_collect(c, &z, 100))
		;
	ids[0] = 0;
	for (i = 0; i < 32; i++)
		if (z.seen & (1u << i))
			len += (size_t)snprintf(ids + len, sizeof(ids) - len, " %d", i);
	fl_trace("completion ids:%s%s", z.seen ? ids : " none", z.more ? " and ids >= 32" : "");
	fl_trace("all of origin SO_EE_ORIGIN_ZEROCOPY with errno 0: %s, other cmsgs %d",
		 z.origin_ok ? "yes" : "no", z.other);
	fl_trace("reported as copied: %s", z.copied ? "yes" : "no");
	sc_job_join(&r);
	sc_trace_reader("server", &r);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-msg-zerocopy", FL_SC_REDIRECTS, sc_zerocopy)

/* ------------------------------------------------------ data integrity */

struct sc_mix {
	pthread_t th;
	int fd;
	uint64_t seed;
	int err;
};

#define SC_MIX_BIG (1u << 20)
#define SC_MIX_TINY 1000

static size_t sc_mix_total(void)
{
	size_t t = 2 * (size_t)SC_MIX_BIG;
	int i;

	for (i = 0; i < SC_MIX_TINY; i++)
		t += (size_t)(i % 7 + 1);
	return t;
}

/* One 1 MiB write, 1000 writes of 1..7 bytes, one 1 MiB write, shutdown. */
static void *sc_mix_writer_fn(void *arg)
{
	struct sc_mix *m = arg;
	uint8_t *big = malloc(SC_MIX_BIG);
	uint64_t off = 0;
	int i;

	m->err = 0;
	if (!big) {
		m->err = ENOMEM;
		return NULL;
	}
	fl_sc_fill(big, off, SC_MIX_BIG, m->seed);
	if (sc_send_all(m->fd, big, SC_MIX_BIG, MSG_NOSIGNAL))
		goto fail;
	off += SC_MIX_BIG;
	for (i = 0; i < SC_MIX_TINY; i++) {
		uint8_t t[8];
		size_t k = (size_t)(i % 7 + 1);

		fl_sc_fill(t, off, k, m->seed);
		if (write(m->fd, t, k) != (ssize_t)k)
			goto fail;
		off += k;
	}
	fl_sc_fill(big, off, SC_MIX_BIG, m->seed);
	if (sc_send_all(m->fd, big, SC_MIX_BIG, MSG_NOSIGNAL))
		goto fail;
	shutdown(m->fd, SHUT_WR);
	free(big);
	return NULL;
fail:
	m->err = errno;
	free(big);
	return NULL;
}

/* Large, many tiny, large writes, both directions at once, read in order. */
static int sc_mix(int family)
{
	struct sc_mix wc = { .seed = 131 }, ws = { .seed = 132 };
	struct sc_job rs = { .seed = 131, .want_eof = 1 }, rc = { .seed = 132, .want_eof = 1 };
	int c, s;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	wc.fd = rs.fd = c;
	ws.fd = rc.fd = s;
	rs.fd = s;
	rc.fd = c;
	rs.n = rc.n = sc_mix_total();
	sc_job_start(&rs, sc_reader_fn);
	sc_job_start(&rc, sc_reader_fn);
	pthread_create(&wc.th, NULL, sc_mix_writer_fn, &wc);
	pthread_create(&ws.th, NULL, sc_mix_writer_fn, &ws);
	pthread_join(wc.th, NULL);
	pthread_join(ws.th, NULL);
	sc_job_join(&rs);
	sc_job_join(&rc);
	fl_trace("writers: client %s, server %s", wc.err ? fl_errname(wc.err) : "ok",
		 ws.err ? fl_errname(ws.err) : "ok");
	fl_trace("each side sent %zu bytes", sc_mix_total());
	sc_trace_reader("server", &rs);
	sc_trace_reader("client", &rc);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-mix-large-tiny-large", FL_SC_REDIRECTS, sc_mix)

/* writev of many iovecs, readv into odd-sized ones. */
static size_t sc_wv_len(int i, int round)
{
	return (size_t)((i * 37 + round * 11) % 1000 + 1);
}

static int sc_writev_readv(int family)
{
	static uint8_t src[64 * 1000];
	struct iovec iov[64];
	size_t total = 0, got = 0;
	int c, s, i, round, wrong = 0, err = 0;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	for (round = 0; round < 50 && !err; round++) {
		size_t len = 0, done = 0;

		for (i = 0; i < 64; i++)
			len += sc_wv_len(i, round);
		fl_sc_fill(src, total, len, 141);
		/* The reader is this thread: a round (< 64 KB) fits the buffers. */
		while (done < len) {
			size_t pos = 0;
			int cnt = 0;
			ssize_t w;

			for (i = 0; i < 64; i++) {
				size_t k = sc_wv_len(i, round);

				if (pos + k > done) {
					size_t skip = done > pos ? done - pos : 0;

					iov[cnt].iov_base = src + pos + skip;
					iov[cnt].iov_len = k - skip;
					cnt++;
				}
				pos += k;
			}
			w = writev(c, iov, cnt);
			if (w <= 0) {
				err = errno;
				break;
			}
			done += (size_t)w;
		}
		total += done;
		while (!err && got < total) {
			uint8_t a[7], b[333], d[4096];
			struct iovec rv[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { d, sizeof(d) } };
			size_t left = total - got, k;
			ssize_t r;

			for (k = 0; k < 3; k++) {
				if (rv[k].iov_len > left)
					rv[k].iov_len = left;
				left -= rv[k].iov_len;
			}
			r = readv(s, rv, 3);
			if (r <= 0) {
				err = r < 0 ? errno : EPIPE;
				break;
			}
			for (k = 0; k < 3 && r > 0; k++) {
				size_t n = (size_t)r < rv[k].iov_len ? (size_t)r : rv[k].iov_len;

				if (!sc_match(rv[k].iov_base, got, n, 141))
					wrong = 1;
				got += n;
				r -= (ssize_t)n;
			}
		}
	}
	fl_trace("writev/readv: sent %zu, received %zu, order %s, error %s", total, got, sc_ok(!wrong),
		 err ? fl_errname(err) : "none");
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-writev-readv", FL_SC_REDIRECTS, sc_writev_readv)

struct sc_rr {
	int fd, n, err, wrong;
};

#define SC_RR_N 500

/* Echo server: a 32-byte request (in one or two pieces), a 64-byte reply. */
static void *sc_rr_server_fn(void *arg)
{
	struct sc_rr *rr = arg;
	uint8_t req[32], resp[64];
	int i;

	for (i = 0; i < SC_RR_N; i++) {
		if (sc_recv_exact(rr->fd, req, 32, 0) != 32) {
			rr->err = errno ? errno : EPIPE;
			return NULL;
		}
		if (!sc_match(req, (uint64_t)i * 32, 32, 151))
			rr->wrong++;
		fl_sc_fill(resp, (uint64_t)i * 64, 64, 152);
		if (sc_send_all(rr->fd, resp, 64, MSG_NOSIGNAL)) {
			rr->err = errno;
			return NULL;
		}
		rr->n++;
	}
	return NULL;
}

/* TCP_NODELAY on both ends, small request/response: every reply arrives
 * promptly (within 1 s each), in order. */
static int sc_nodelay_rr(int family)
{
	struct sc_rr srv = { 0 };
	uint8_t req[32], resp[64];
	int c, s, i, wrong = 0, stalls = 0, err = 0;
	pthread_t th;

	if (sc_pair_guarded(family, &c, &s))
		return -1;
	fl_trace("TCP_NODELAY client -> %s, server -> %s", fl_ret(sc_setint(c, IPPROTO_TCP, TCP_NODELAY, 1)),
		 fl_ret(sc_setint(s, IPPROTO_TCP, TCP_NODELAY, 1)));
	srv.fd = s;
	pthread_create(&th, NULL, sc_rr_server_fn, &srv);
	for (i = 0; i < SC_RR_N; i++) {
		fl_sc_fill(req, (uint64_t)i * 32, 32, 151);
		if (i % 2) {
			if (sc_send_all(c, req, 16, MSG_NOSIGNAL) ||
			    sc_send_all(c, req + 16, 16, MSG_NOSIGNAL)) {
				err = errno;
				break;
			}
		} else if (sc_send_all(c, req, 32, MSG_NOSIGNAL)) {
			err = errno;
			break;
		}
		if (!fl_sc_readable_within(c, 1000))
			stalls++;
		if (sc_recv_exact(c, resp, 64, 0) != 64) {
			err = errno ? errno : EPIPE;
			break;
		}
		if (!sc_match(resp, (uint64_t)i * 64, 64, 152))
			wrong++;
	}
	pthread_join(th, NULL);
	fl_trace("round trips %d, wrong replies %d, stalls %d, error %s", i, wrong, stalls,
		 err ? fl_errname(err) : "none");
	fl_trace("server answered %d, wrong requests %d, error %s", srv.n, srv.wrong,
		 srv.err ? fl_errname(srv.err) : "none");
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("io-nodelay-request-response", FL_SC_REDIRECTS, sc_nodelay_rr)
