// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_splice.c - splice(socket -> pipe) when the pipe cannot take everything:
 * SPLICE_F_NONBLOCK on a blocking pipe, O_NONBLOCK pipes, small pipes, full
 * pipes, pipes holding bytes spliced from TCP before the socket was
 * enrolled, a pipe without a reader, and a one-thread proxy that pumps
 * socket -> pipe -> socket as haproxy does.
 *
 * What TCP guarantees and is traced here (measured on Linux 6.18): a pipe
 * is full when all its buffers are in use, whatever their bytes; into a
 * full pipe splice gives EAGAIN with SPLICE_F_NONBLOCK or an O_NONBLOCK
 * pipe (even with the socket at EOF), and otherwise waits until the pipe
 * has room; SPLICE_F_NONBLOCK does not make the socket non-blocking; a pipe
 * without a reader gives EPIPE and SIGPIPE. How many bytes one call moved
 * is never traced: TCP packs a pipe buffer differently from the shim.
 *
 * Every scenario arms alarm() (its default action ends the process): a
 * splice that blocks forever becomes a failed run, not a hung suite.
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "conformance.h"

#define SP_WATCHDOG_S 30

/* ------------------------------------------------------------ helpers */

static void sp_timeo(int fd, int opt, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

/* A connected pair whose blocking calls give up after 3 s (a stall shows
 * as EAGAIN in the trace), and the watchdog armed. */
static int sp_pair(int family, int *c, int *s)
{
	alarm(SP_WATCHDOG_S);
	if (fl_sc_pair(family, c, s))
		return -1;
	sp_timeo(*c, SO_RCVTIMEO, 3000);
	sp_timeo(*c, SO_SNDTIMEO, 3000);
	sp_timeo(*s, SO_RCVTIMEO, 3000);
	sp_timeo(*s, SO_SNDTIMEO, 3000);
	return 0;
}

static void sp_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* A pipe of the given size (0: the default) and O_NONBLOCK on its ends. */
static int sp_pipe(int p[2], int size, int nonblock)
{
	if (pipe(p))
		return -1;
	if (size && fcntl(p[1], F_SETPIPE_SZ, size) != size)
		return -1;
	if (nonblock) {
		sp_nonblock(p[0]);
		sp_nonblock(p[1]);
	}
	return 0;
}

static int sp_pipe_bytes(int p0)
{
	int n = 0;

	return ioctl(p0, FIONREAD, &n) ? -1 : n;
}

/* 1 if a write end has a free buffer (poll says so exactly then). */
static int sp_pipe_has_room(int p1)
{
	struct pollfd p = { .fd = p1, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT);
}

/* Checks n bytes read from a pipe against the pattern at *off. */
struct sp_check {
	uint64_t off, seed;
	int64_t bad;
};

static void sp_check(struct sp_check *k, const uint8_t *buf, size_t n)
{
	uint8_t want[65536];
	size_t i, done = 0;

	while (done < n) {
		size_t m = n - done < sizeof(want) ? n - done : sizeof(want);

		fl_sc_fill(want, k->off, m, k->seed);
		if (k->bad < 0 && memcmp(want, buf + done, m)) {
			for (i = 0; want[i] == buf[done + i]; i++)
				;
			k->bad = (int64_t)(k->off + i);
		}
		k->off += m;
		done += m;
	}
}

/* Reads everything the pipe holds now and checks it. Bytes read, or -1. */
static long long sp_drain(int p0, struct sp_check *k)
{
	static __thread uint8_t buf[65536];
	long long total = 0;
	int n;

	while ((n = sp_pipe_bytes(p0)) > 0) {
		ssize_t r = read(p0, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf));

		if (r <= 0)
			return -1;
		sp_check(k, buf, (size_t)r);
		total += r;
	}
	return total;
}

/* Reads exactly n filler bytes out of a pipe (filled with write()). */
static int sp_discard(int p0, size_t n)
{
	char buf[4096];

	while (n) {
		ssize_t r = read(p0, buf, n < sizeof(buf) ? n : sizeof(buf));

		if (r <= 0)
			return -1;
		n -= (size_t)r;
	}
	return 0;
}

static int sp_fill(int p1, size_t n)
{
	static const char x[65536];

	return write(p1, x, n) == (ssize_t)n ? 0 : -1;
}

/* A background writer of the pattern, then shutdown(SHUT_WR). */
struct sp_writer {
	pthread_t th;
	int fd;
	uint64_t seed, off;
	size_t n;
	int delay_ms;
	volatile int started; /* set just before the first byte is sent */
	ssize_t got;
	int err;
	int shut;
};

static void *sp_writer_fn(void *arg)
{
	struct sp_writer *w = arg;
	uint8_t buf[65536];
	uint64_t off = w->off;
	size_t left = w->n;

	if (w->delay_ms)
		fl_sc_sleep_ms(w->delay_ms);
	__atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
	w->got = 0;
	while (left) {
		size_t k = left < sizeof(buf) ? left : sizeof(buf), done = 0;

		fl_sc_fill(buf, off, k, w->seed);
		while (done < k) {
			ssize_t r = send(w->fd, buf + done, k - done, MSG_NOSIGNAL);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				w->err = errno;
				w->got = -1;
				goto out;
			}
			done += (size_t)r;
		}
		off += k;
		left -= k;
		w->got += (ssize_t)k;
	}
out:
	if (w->shut)
		shutdown(w->fd, SHUT_WR);
	return NULL;
}

static void sp_writer_start(struct sp_writer *w, int fd, uint64_t seed, size_t n, int shut)
{
	w->fd = fd;
	w->seed = seed;
	w->n = n;
	w->shut = shut;
	pthread_create(&w->th, NULL, sp_writer_fn, w);
}

static void sp_writer_join(struct sp_writer *w)
{
	pthread_join(w->th, NULL);
	errno = w->err;
	fl_trace("writer: %s of %zu bytes", fl_ret(w->got), w->n);
}

/* ------------------------------------------------ fill until EAGAIN, drain */

/* Reads at most n bytes out of a pipe and checks them. Bytes read, or -1. */
static long long sp_drain_some(int p0, struct sp_check *k, size_t n)
{
	uint8_t buf[4096];
	ssize_t r = read(p0, buf, n < sizeof(buf) ? n : sizeof(buf));

	if (r > 0)
		sp_check(k, buf, (size_t)r);
	return r;
}

/*
 * One thread, as a proxy in splice mode works: splice into the pipe until
 * splice says EAGAIN, then take 1000 bytes out of the pipe (a slow
 * consumer: that frees a pipe buffer only now and then), until EOF. The
 * socket blocks (with a 3 s timeout) and is readable before each splice,
 * so EAGAIN can only mean "the pipe is full": traced.
 */
static void sp_fill_drain(int s, int p[2], unsigned int flags, uint64_t off, uint64_t seed,
			  const char *what)
{
	struct sp_check k = { .off = off, .seed = seed, .bad = -1 };
	long long spliced = 0, drained = 0, d;
	int eagains = 0, room_at_eagain = 0, err = 0;
	ssize_t r;

	for (;;) {
		/* Bytes (or EOF) are there: a splice cannot wait on the socket. */
		fl_sc_readable_within(s, 3000);
		r = splice(s, NULL, p[1], NULL, 1 << 20, flags);
		if (r > 0) {
			spliced += r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			eagains++;
			room_at_eagain += sp_pipe_has_room(p[1]);
			d = sp_drain_some(p[0], &k, 1000);
			if (d <= 0) {
				err = EIO;
				break;
			}
			drained += d;
			continue;
		}
		err = r < 0 ? errno : 0;
		break;
	}
	d = sp_drain(p[0], &k);
	drained += d > 0 ? d : 0;
	fl_trace("%s: spliced %lld bytes, read %lld back from the pipe, first wrong byte %lld, "
		 "ended by %s", what, spliced, drained, (long long)k.bad,
		 err ? fl_errname(err) : "EOF (0)");
	fl_trace("%s: the pipe filled up: %s; at every EAGAIN it was full: %s", what,
		 eagains ? "yes" : "no", room_at_eagain ? "no" : "yes");
}

static int sp_fill_drain_scenario(int family, int size, int pipe_nonblock, unsigned int flags,
				  size_t n, uint64_t seed)
{
	struct sp_writer w = { 0 };
	int c, s, p[2];

	if (sp_pair(family, &c, &s) || sp_pipe(p, size, pipe_nonblock))
		return -1;
	sp_writer_start(&w, c, seed, n, 1);
	sp_fill_drain(s, p, flags, 0, seed, "splice until EAGAIN, then read 1000 bytes");
	sp_writer_join(&w);
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}

/* A blocking pipe and SPLICE_F_NONBLOCK (haproxy's way). */
static int sp_nonblock_flag(int family)
{
	return sp_fill_drain_scenario(family, 0, 0, SPLICE_F_NONBLOCK | SPLICE_F_MOVE, 4 << 20, 301);
}
FL_SCENARIO("splice-nonblock-flag", FL_SC_REDIRECTS, sp_nonblock_flag)

/* An O_NONBLOCK pipe, no flag. */
static int sp_nonblock_pipe(int family)
{
	return sp_fill_drain_scenario(family, 0, 1, SPLICE_F_MOVE, 4 << 20, 302);
}
FL_SCENARIO("splice-nonblock-pipe", FL_SC_REDIRECTS, sp_nonblock_pipe)

/* A pipe shrunk to one page (one buffer). */
static int sp_pipe_4k(int family)
{
	return sp_fill_drain_scenario(family, 4096, 0, SPLICE_F_NONBLOCK, 1 << 20, 303);
}
FL_SCENARIO("splice-pipe-4k-nonblock", FL_SC_REDIRECTS, sp_pipe_4k)

/* A 1 MiB pipe (more than one call moves). */
static int sp_pipe_1m(int family)
{
	return sp_fill_drain_scenario(family, 1 << 20, 1, 0, 8 << 20, 304);
}
FL_SCENARIO("splice-pipe-1m-nonblock", FL_SC_REDIRECTS, sp_pipe_1m)

/* ------------------------------------------- blocking splice, a drainer */

/* Reads a pipe until it sees EOF (its writer closed), checking the bytes. */
struct sp_drainer {
	pthread_t th;
	int p0;
	struct sp_check k;
	long long total;
};

static void *sp_drainer_fn(void *arg)
{
	struct sp_drainer *d = arg;
	uint8_t buf[65536];
	ssize_t r;

	while ((r = read(d->p0, buf, sizeof(buf))) > 0) {
		sp_check(&d->k, buf, (size_t)r);
		d->total += r;
	}
	return NULL;
}

/* A blocking splice into a one-page pipe that another thread empties: the
 * splicer waits for room each time, and every byte arrives once. */
static int sp_pipe_4k_blocking(int family)
{
	struct sp_writer w = { 0 };
	struct sp_drainer d = { .k = { .seed = 305, .bad = -1 } };
	long long spliced = 0;
	int c, s, p[2], err = 0;
	ssize_t r;

	if (sp_pair(family, &c, &s) || sp_pipe(p, 4096, 0))
		return -1;
	d.p0 = p[0];
	pthread_create(&d.th, NULL, sp_drainer_fn, &d);
	sp_writer_start(&w, c, 305, 2 << 20, 1);
	for (;;) {
		r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_MOVE);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? errno : 0;
			break;
		}
		spliced += r;
	}
	close(p[1]);
	pthread_join(d.th, NULL);
	fl_trace("blocking splice into a 4 KiB pipe: spliced %lld, the other thread read %lld, "
		 "first wrong byte %lld, ended by %s", spliced, d.total, (long long)d.k.bad,
		 err ? fl_errname(err) : "EOF (0)");
	sp_writer_join(&w);
	close(p[0]);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("splice-pipe-4k-blocking", FL_SC_REDIRECTS, sp_pipe_4k_blocking)

/* ------------------------------------------------------- full pipes */

/* Empties the filler of a full pipe after a pause, flagging it first. */
struct sp_unfill {
	pthread_t th;
	int p0;
	size_t n;
	volatile int done;
};

static void *sp_unfill_fn(void *arg)
{
	struct sp_unfill *u = arg;

	fl_sc_sleep_ms(150);
	__atomic_store_n(&u->done, 1, __ATOMIC_SEQ_CST);
	sp_discard(u->p0, u->n);
	return NULL;
}

/* Waits until the socket has something to read (up to 3 s). */
static void sp_wait_readable(int s)
{
	fl_sc_readable_within(s, 3000);
}

/*
 * A pipe of `size` bytes filled with `fill` bytes by write(): full when
 * every buffer is in use, even with a byte of room. With bytes waiting in
 * the socket: a non-blocking splice gives EAGAIN; a blocking one waits
 * until another thread empties the pipe, then moves bytes, which are the
 * stream's next ones.
 */
static void sp_full_case(int s, int size, size_t fill, struct sp_check *k)
{
	struct sp_unfill u = { 0 };
	int p[2];
	ssize_t r;
	long long got;

	if (sp_pipe(p, size, 0) || sp_fill(p[1], fill)) {
		fl_trace("%d/%d: setup failed", (int)fill, size);
		return;
	}
	sp_wait_readable(s);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("pipe of %d holding %zu: splice(SPLICE_F_NONBLOCK) -> %s", size, fill,
		 r > 0 ? "bytes" : fl_ret(r));
	if (r > 0) { /* wrong: keep the stream's bytes checked, refill */
		sp_discard(p[0], fill);
		sp_drain(p[0], k);
		sp_fill(p[1], fill);
	}
	fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
	r = splice(s, NULL, p[1], NULL, 65536, 0);
	fl_trace("pipe of %d holding %zu, O_NONBLOCK: splice -> %s", size, fill,
		 r > 0 ? "bytes" : fl_ret(r));
	if (r > 0) {
		sp_discard(p[0], fill);
		sp_drain(p[0], k);
		sp_fill(p[1], fill);
	}
	fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) & ~O_NONBLOCK);
	u.p0 = p[0];
	u.n = fill;
	pthread_create(&u.th, NULL, sp_unfill_fn, &u);
	r = splice(s, NULL, p[1], NULL, 65536, 0);
	fl_trace("pipe of %d holding %zu: blocking splice -> %s, after the pipe was emptied: %s",
		 size, fill, r > 0 ? "bytes" : fl_ret(r),
		 __atomic_load_n(&u.done, __ATOMIC_SEQ_CST) ? "yes" : "no");
	pthread_join(u.th, NULL);
	got = sp_drain(p[0], k);
	fl_trace("  the bytes it moved: %s", got > 0 ? (k->bad < 0 ? "ok" : "wrong") : "none");
	close(p[0]);
	close(p[1]);
}

static int sp_full(int family)
{
	struct sp_check k = { .seed = 306, .bad = -1 };
	struct sp_writer w = { 0 };
	struct sp_unfill u = { 0 };
	int c, s, p[2];
	ssize_t r;

	if (sp_pair(family, &c, &s))
		return -1;
	sp_writer_start(&w, c, 306, 1 << 20, 1);
	sp_full_case(s, 4096, 4095, &k);
	sp_full_case(s, 4096, 4096, &k);
	sp_full_case(s, 65536, 65535, &k);
	sp_full_case(s, 65536, 65536, &k);
	/* The rest by splice into an empty pipe, then EOF with a full pipe:
	 * still EAGAIN (splice looks at the pipe first), and a blocking
	 * splice waits for room before it reports EOF. */
	if (sp_pipe(p, 65536, 0))
		return -1;
	for (;;) {
		r = splice(s, NULL, p[1], NULL, 65536, 0);
		if (r <= 0)
			break;
		sp_drain(p[0], &k);
	}
	fl_trace("the rest: up to offset %llu, first wrong byte %lld, ended by %s",
		 (unsigned long long)k.off, (long long)k.bad, fl_ret(r));
	sp_writer_join(&w);
	sp_fill(p[1], 65536);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("at EOF, full pipe: splice(SPLICE_F_NONBLOCK) -> %s", fl_ret(r));
	u.p0 = p[0];
	u.n = 65536;
	pthread_create(&u.th, NULL, sp_unfill_fn, &u);
	r = splice(s, NULL, p[1], NULL, 65536, 0);
	fl_trace("at EOF, full pipe: blocking splice -> %s, after the pipe was emptied: %s",
		 fl_ret(r), __atomic_load_n(&u.done, __ATOMIC_SEQ_CST) ? "yes" : "no");
	pthread_join(u.th, NULL);
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("splice-full-pipe", FL_SC_REDIRECTS, sp_full)

/* ---------------------------------------------- waiting for the socket */

/*
 * SPLICE_F_NONBLOCK (and an O_NONBLOCK pipe) leave a blocking socket
 * blocking: splice waits for the first byte. An O_NONBLOCK socket gives
 * EAGAIN, SO_RCVTIMEO ends the wait with EAGAIN, EOF gives 0.
 */
static int sp_waits(int family)
{
	struct sp_check k = { .seed = 307, .bad = -1 };
	struct sp_writer w = { 0 };
	int c, s, p[2];
	ssize_t r;

	if (sp_pair(family, &c, &s) || sp_pipe(p, 0, 0))
		return -1;
	w.delay_ms = 150;
	sp_writer_start(&w, c, 307, 1000, 0);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("empty blocking socket, SPLICE_F_NONBLOCK: -> %s, after the writer started: %s",
		 r > 0 ? "bytes" : fl_ret(r), __atomic_load_n(&w.started, __ATOMIC_SEQ_CST) ? "yes" : "no");
	pthread_join(w.th, NULL);
	sp_drain(p[0], &k);
	while (r > 0 && k.off < 1000) {
		r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
		sp_drain(p[0], &k);
	}
	fl_trace("  1000 bytes: up to offset %llu, first wrong byte %lld", (unsigned long long)k.off,
		 (long long)k.bad);

	/* An O_NONBLOCK pipe, same. */
	sp_nonblock(p[1]);
	w = (struct sp_writer){ .delay_ms = 150, .off = 1000 };
	sp_writer_start(&w, c, 307, 1000, 0);
	r = splice(s, NULL, p[1], NULL, 65536, 0);
	fl_trace("empty blocking socket, O_NONBLOCK pipe: -> %s, after the writer started: %s",
		 r > 0 ? "bytes" : fl_ret(r), __atomic_load_n(&w.started, __ATOMIC_SEQ_CST) ? "yes" : "no");
	pthread_join(w.th, NULL);
	sp_drain(p[0], &k);
	while (r > 0 && k.off < 2000) {
		r = splice(s, NULL, p[1], NULL, 65536, 0);
		sp_drain(p[0], &k);
	}
	fl_trace("  1000 more: up to offset %llu, first wrong byte %lld",
		 (unsigned long long)k.off, (long long)k.bad);

	/* A receive timeout ends the wait. */
	sp_timeo(s, SO_RCVTIMEO, 200);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("empty socket, SO_RCVTIMEO 200 ms: -> %s", fl_ret(r));
	/* An O_NONBLOCK socket does not wait. */
	sp_nonblock(s);
	r = splice(s, NULL, p[1], NULL, 65536, 0);
	fl_trace("empty O_NONBLOCK socket: -> %s", fl_ret(r));
	shutdown(c, SHUT_WR);
	fl_sc_sleep_ms(50);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("after the peer's SHUT_WR: -> %s", fl_ret(r));
	r = splice(s, NULL, p[1], NULL, 0, 0);
	fl_trace("len 0 -> %s", fl_ret(r));
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("splice-waits-for-data", FL_SC_REDIRECTS, sp_waits)

/* ---------------------------------------------------------- no reader */

static volatile sig_atomic_t sp_sigpipes;

static void sp_on_sigpipe(int sig)
{
	(void)sig;
	sp_sigpipes++;
}

/* A pipe whose reading end is closed: EPIPE and SIGPIPE, with or without
 * bytes in the socket, and the bytes stay in the socket for a read. */
static int sp_no_reader(int family)
{
	struct sigaction sa = { .sa_handler = sp_on_sigpipe }, old;
	int64_t bad = -1;
	int c, s, p[2];
	ssize_t r, n;

	if (sp_pair(family, &c, &s) || sp_pipe(p, 0, 0))
		return -1;
	sigaction(SIGPIPE, &sa, &old);
	close(p[0]);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("no reader, empty socket: splice(SPLICE_F_NONBLOCK) -> %s, SIGPIPE %d", fl_ret(r),
		 (int)sp_sigpipes);
	sp_nonblock(s);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("no reader, empty O_NONBLOCK socket: splice(SPLICE_F_NONBLOCK) -> %s, SIGPIPE %d",
		 fl_ret(r), (int)sp_sigpipes);
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
	if (fl_sc_write_pattern(c, 0, 100000, 308))
		return -1;
	sp_wait_readable(s);
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	fl_trace("no reader, bytes in the socket: splice(SPLICE_F_NONBLOCK) -> %s, SIGPIPE %d",
		 fl_ret(r), (int)sp_sigpipes);
	r = splice(s, NULL, p[1], NULL, 65536, 0);
	fl_trace("no reader, bytes in the socket: blocking splice -> %s, SIGPIPE %d", fl_ret(r),
		 (int)sp_sigpipes);
	shutdown(c, SHUT_WR);
	n = fl_sc_read_pattern(s, 0, 100000, 308, &bad);
	fl_trace("then read() %s bytes, first wrong byte %lld", fl_ret(n), (long long)bad);
	sigaction(SIGPIPE, &old, NULL);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("splice-no-reader", FL_SC_REDIRECTS, sp_no_reader)

/* ------------------------------------------------- a pipe's read end */

/* A pipe's read end as the target: EBADF with or without bytes in the
 * socket, with or without SPLICE_F_NONBLOCK, and the bytes stay in the
 * socket for a read. */
static int sp_read_end(int family)
{
	static const unsigned int flags[2] = { SPLICE_F_NONBLOCK, 0 };
	struct sp_check k = { .seed = 309, .bad = -1 };
	int64_t bad = -1;
	int c, s, p[2], i;
	ssize_t r, n;

	if (sp_pair(family, &c, &s) || sp_pipe(p, 0, 0))
		return -1;
	sp_nonblock(s);
	for (i = 0; i < 2; i++) {
		r = splice(s, NULL, p[0], NULL, 65536, flags[i]);
		fl_trace("read end, empty socket: splice(%s) -> %s",
			 flags[i] ? "SPLICE_F_NONBLOCK" : "0", fl_ret(r));
	}
	if (fl_sc_write_pattern(c, 0, 100000, 309))
		return -1;
	sp_wait_readable(s);
	for (i = 0; i < 2; i++) {
		r = splice(s, NULL, p[0], NULL, 65536, flags[i]);
		fl_trace("read end, bytes in the socket: splice(%s) -> %s",
			 flags[i] ? "SPLICE_F_NONBLOCK" : "0", fl_ret(r));
	}
	r = splice(s, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK);
	sp_drain(p[0], &k);
	fl_trace("then into the write end: splice(SPLICE_F_NONBLOCK) -> %s, first wrong byte %lld",
		 r > 0 ? "bytes" : fl_ret(r), (long long)k.bad);
	shutdown(c, SHUT_WR);
	/* The rest follows what the pipe took. */
	n = fl_sc_read_pattern(s, k.off, 100000 - (size_t)k.off, 309, &bad);
	fl_trace("then read() the rest: %s, first wrong byte %lld", n > 0 ? "bytes" : fl_ret(n),
		 (long long)bad);
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("splice-read-end", FL_SC_REDIRECTS, sp_read_end)

/* ------------------------------------ bytes spliced before the switch */

/*
 * A pipe that already holds bytes spliced from TCP, before the socket was
 * enrolled: such bytes take a buffer each however few they are. The shim
 * switches a connection once it moved FASTLOCAL_ENROLL_AFTER bytes; this
 * runs in a child with the default (4096) whatever the suite's setting:
 * 3000 + 2000 bytes spliced on TCP, then 4 MiB more through the same pipe,
 * never emptied before splice says it is full.
 */
static int sp_switch_child(int argc, char **argv)
{
	struct sp_writer w = { 0 };
	int c, s, p[2], family;
	ssize_t r1, r2;

	if (argc < 1)
		return 2;
	family = atoi(argv[0]) == 6 ? AF_INET6 : AF_INET;
	if (sp_pair(family, &c, &s) || sp_pipe(p, 65536, 0))
		return 3;
	if (fl_sc_write_pattern(c, 0, 5000, 309))
		return 3;
	while (fl_sc_readable_within(s, 3000)) {
		int n = 0;

		/* All 5000 there (FIONREAD of a not yet enrolled socket is TCP's). */
		if (!ioctl(s, FIONREAD, &n) && n >= 5000)
			break;
		fl_sc_sleep_ms(5);
	}
	r1 = splice(s, NULL, p[1], NULL, 3000, 0);
	r2 = splice(s, NULL, p[1], NULL, 65536, 0);
	fl_trace("before the switch: splice 3000 -> %s, the rest -> %s", fl_ret(r1), fl_ret(r2));
	w.off = 5000;
	sp_writer_start(&w, c, 309, 4 << 20, 1);
	/* The check starts at 0: the 5000 bytes still in the pipe come first. */
	sp_fill_drain(s, p, SPLICE_F_NONBLOCK | SPLICE_F_MOVE, 0, 309,
		      "5000 spliced before, then 4 MiB");
	sp_writer_join(&w);
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}
FL_CHILD("splice-switch", sp_switch_child)

extern char **environ;

static int sp_switch(int family)
{
	char fam[4], **env;
	char *argv[] = { (char *)fl_sc_self(), "--child", "splice-switch", fam, NULL };
	size_t n = 0, i, j = 0;
	pid_t pid;
	int st;

	snprintf(fam, sizeof(fam), "%d", family == AF_INET6 ? 6 : 4);
	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return -1;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], "FASTLOCAL_ENROLL_AFTER=", 23))
			env[j++] = environ[i];
	env[j++] = "FASTLOCAL_ENROLL_AFTER=4096";
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execve(fl_sc_self(), argv, env);
		_exit(127);
	}
	free(env);
	alarm(SP_WATCHDOG_S + 5);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	fl_trace("child: %s %d", WIFEXITED(st) ? "exit" : "signal",
		 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 0;
}
FL_SCENARIO("splice-after-tcp-splice", FL_SC_REDIRECTS, sp_switch)

/* ------------------------------------------------ after a long peek */

/*
 * A reader with a small receive buffer (128 KiB, a budget of 64 KiB: the
 * writer's 64 KiB messages fit it one at a time, docs/kernel.md#rmem-shared), so
 * that the writer's bytes queue up in the redirected queue and then,
 * under flow control, in TCP's. It
 * peeks far ahead with SO_PEEK_OFF (the shim then holds the redirected
 * bytes itself, to reach TCP's queue behind them), and only then splices
 * everything: the bytes held come first, then the socket's.
 */
static int sp_after_peek(int family)
{
	struct sp_check k = { .seed = 311, .bad = -1 };
	struct sp_writer w = { 0 };
	uint8_t buf[16384];
	long long peeked = 0;
	int c, s, p[2], off = 0;
	ssize_t r;

	if (sp_pair(family, &c, &s) || sp_pipe(p, 0, 0))
		return -1;
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &(int){ 131072 }, sizeof(int));
	sp_writer_start(&w, c, 311, 1 << 20, 1);
	fl_sc_sleep_ms(300); /* the writer fills what it can */
	setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off));
	while (peeked < 200000) {
		r = recv(s, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		if (r <= 0)
			break;
		sp_check(&k, buf, (size_t)r);
		peeked += r;
	}
	fl_trace("peeked ahead with SO_PEEK_OFF: first wrong byte %lld", (long long)k.bad);
	off = -1;
	setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off));
	sp_fill_drain(s, p, SPLICE_F_NONBLOCK, 0, 311, "then splice everything");
	sp_writer_join(&w);
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("splice-after-peek-ahead", FL_SC_REDIRECTS, sp_after_peek)

/* ---------------------------------------------------- a one-thread pump */

/*
 * socket -> pipe -> socket in one thread driven by poll(), with O_NONBLOCK
 * sockets, a blocking pipe and SPLICE_F_NONBLOCK: haproxy's splice loop.
 * The pump drains its pipe only itself, so a splice that blocks on the
 * pipe stalls it for good. 16 MiB, checked by the final reader.
 */
struct sp_reader {
	pthread_t th;
	int fd;
	struct sp_check k;
	long long total;
	ssize_t last;
	int err;
};

static void *sp_reader_fn(void *arg)
{
	struct sp_reader *r = arg;
	uint8_t buf[65536];

	while ((r->last = read(r->fd, buf, sizeof(buf))) > 0) {
		sp_check(&r->k, buf, (size_t)r->last);
		r->total += r->last;
	}
	r->err = errno;
	return NULL;
}

static int sp_pump(int family)
{
	const size_t total = 16 << 20;
	struct sp_writer w = { 0 };
	struct sp_reader rd = { .k = { .seed = 310, .bad = -1 } };
	long long inpipe = 0, moved = 0;
	int a, a2, b1, b, p[2], eof = 0, err = 0, full = 0;
	ssize_t r;

	if (sp_pair(family, &a, &a2) || sp_pair(family, &b1, &b) || sp_pipe(p, 0, 0))
		return -1;
	sp_nonblock(a2);
	sp_nonblock(b1);
	rd.fd = b;
	pthread_create(&rd.th, NULL, sp_reader_fn, &rd);
	sp_writer_start(&w, a, 310, total, 1);
	while (!eof || inpipe) {
		struct pollfd pf[2] = { { .fd = a2, .events = eof || full ? 0 : POLLIN },
					{ .fd = b1, .events = inpipe ? POLLOUT : 0 } };

		if (poll(pf, 2, 3000) <= 0) {
			err = ETIMEDOUT;
			break;
		}
		if (!eof && !full && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			r = splice(a2, NULL, p[1], NULL, 1 << 20, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (r > 0)
				inpipe += r;
			else if (r == 0)
				eof = 1;
			else if (errno == EAGAIN)
				full = inpipe > 0; /* the socket is readable: the pipe is full */
			else {
				err = errno;
				break;
			}
		}
		if (inpipe) {
			/* At most 1000 bytes at a time, as to a peer whose window
			 * is small: the pipe's buffers are often taken in part,
			 * and a buffer with a few bytes left still holds a slot. */
			r = splice(p[0], NULL, b1, NULL, inpipe < 1000 ? (size_t)inpipe : 1000,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (r > 0) {
				inpipe -= r;
				moved += r;
				full = 0;
			} else if (r < 0 && errno != EAGAIN) {
				err = errno;
				break;
			}
		}
	}
	shutdown(b1, SHUT_WR);
	pthread_join(rd.th, NULL);
	fl_trace("pump: moved %lld of %zu, ended by %s", moved, total,
		 err ? fl_errname(err) : "EOF");
	errno = rd.err;
	fl_trace("reader: %lld bytes, first wrong byte %lld, ended by %s", rd.total,
		 (long long)rd.k.bad, fl_ret(rd.last));
	sp_writer_join(&w);
	close(p[0]);
	close(p[1]);
	close(a);
	close(a2);
	close(b1);
	close(b);
	return 0;
}
FL_SCENARIO("splice-pump-nonblock", FL_SC_REDIRECTS, sp_pump)
