// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* conformance.c - the scenario registry, main() and the shared helpers. */
#include "conformance.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static struct fl_scenario *fl_sc_head;
static struct fl_child *fl_child_head;
static const char *fl_self_path;
static const struct fl_scenario *fl_sc_running; /* set once in main, before the run */

void fl_sc_register(struct fl_scenario *sc)
{
	struct fl_scenario **pp = &fl_sc_head;

	/* Sorted by name, so that listings are stable. */
	while (*pp && strcmp((*pp)->name, sc->name) < 0)
		pp = &(*pp)->next;
	sc->next = *pp;
	*pp = sc;
}

void fl_child_register(struct fl_child *ch)
{
	ch->next = fl_child_head;
	fl_child_head = ch;
}

void fl_trace(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

const char *fl_errname(int err)
{
	static const struct { int e; const char *n; } names[] = {
		{ EAGAIN, "EAGAIN" }, { EINTR, "EINTR" }, { EPIPE, "EPIPE" },
		{ ECONNRESET, "ECONNRESET" }, { ENOTCONN, "ENOTCONN" }, { EBADF, "EBADF" },
		{ EINVAL, "EINVAL" }, { EFAULT, "EFAULT" }, { ECONNREFUSED, "ECONNREFUSED" },
		{ ETIMEDOUT, "ETIMEDOUT" }, { EINPROGRESS, "EINPROGRESS" }, { EISCONN, "EISCONN" },
		{ ENOTSOCK, "ENOTSOCK" }, { EOPNOTSUPP, "EOPNOTSUPP" }, { ESPIPE, "ESPIPE" },
		{ EALREADY, "EALREADY" }, { ECONNABORTED, "ECONNABORTED" }, { EMSGSIZE, "EMSGSIZE" },
	};
	static __thread char buf[16];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == err)
			return names[i].n;
	snprintf(buf, sizeof(buf), "E%d", err);
	return buf;
}

const char *fl_ret(ssize_t r)
{
	static __thread char buf[4][32];
	static __thread int k;
	char *b = buf[k++ & 3];

	if (r >= 0)
		snprintf(b, 32, "%zd", r);
	else
		snprintf(b, 32, "-1 %s", fl_errname(errno));
	return b;
}

const void *fl_sc_arg(void)
{
	return fl_sc_running ? fl_sc_running->arg : NULL;
}

const char *fl_sc_self(void)
{
	return fl_self_path;
}

static int fl_sc_addr(int family, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		in6->sin6_addr = in6addr_loopback;
		*len = sizeof(*in6);
	}
	return 0;
}

int fl_sc_listen(int family, int *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l = socket(family, SOCK_STREAM, 0), one = 1;

	if (l < 0)
		return -1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	fl_sc_addr(family, 0, &ss, &len);
	if (bind(l, (struct sockaddr *)&ss, len) || listen(l, 64) ||
	    getsockname(l, (struct sockaddr *)&ss, &len)) {
		close(l);
		return -1;
	}
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
					  ((struct sockaddr_in6 *)&ss)->sin6_port);
	return l;
}

int fl_sc_connect(int family, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int c = socket(family, SOCK_STREAM, 0);

	fl_sc_addr(family, port, &ss, &len);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len)) {
		if (c >= 0)
			close(c);
		return -1;
	}
	return c;
}

/*
 * The warm-up (conformance.h). Its own I/O loops, not fl_sc_*_pattern:
 * a scenario may warm up a non-blocking socket, so EAGAIN waits in poll
 * (3 s at most: a stall fails the warm-up, it never hangs it).
 */
size_t fl_sc_warmup_bytes(void)
{
	static long n = -1;
	const char *v;

	if (n < 0) {
		v = getenv("FL_SC_WARMUP");
		n = v && *v ? strtol(v, NULL, 10) : 0;
		if (n < 0 || n > (1L << 24))
			n = 0;
	}
	return (size_t)n;
}

/* n bytes of the warm-up's pattern (seed) through fd: 0 or -1 (errno). */
static int fl_sc_warm_io(int fd, int writing, size_t n, uint64_t seed)
{
	uint8_t buf[4096], want[4096];
	size_t done = 0;

	while (done < n) {
		size_t k = n - done < sizeof(buf) ? n - done : sizeof(buf);
		struct pollfd p = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
		ssize_t r;

		if (writing) {
			fl_sc_fill(buf, done, k, seed);
			r = send(fd, buf, k, MSG_NOSIGNAL);
		} else {
			r = recv(fd, buf, k, 0);
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			if (poll(&p, 1, 3000) != 1) {
				errno = ETIMEDOUT;
				return -1;
			}
			continue;
		}
		if (r <= 0) {
			if (!r)
				errno = ECONNRESET; /* EOF in the middle: "reset" will do */
			return -1;
		}
		if (!writing) {
			fl_sc_fill(want, done, (size_t)r, seed);
			if (memcmp(buf, want, (size_t)r)) {
				errno = EILSEQ;
				return -1;
			}
		}
		done += (size_t)r;
	}
	return 0;
}

/*
 * IMPORTANT: the request/answer round leaves both ends in TCP's interactive
 * ("pingpong") mode, in which an ACK waits up to 40 ms for data to ride on;
 * such a late ACK releases a segment held by MSG_MORE, TCP_CORK or Nagle,
 * so plain TCP's own timing classes would change (measured: a MSG_MORE send
 * became readable within 50 ms). A quick-ACK request leaves that mode.
 */
static int fl_sc_warm_done(int fd, int err)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
	if (err)
		fl_trace("warm-up failed: %s", fl_errname(errno));
	return err ? -1 : 0;
}

int fl_sc_warmup_client(int c)
{
	size_t n = fl_sc_warmup_bytes();

	if (!n)
		return 0;
	return fl_sc_warm_done(c, fl_sc_warm_io(c, 1, n, 901) || fl_sc_warm_io(c, 0, n, 902));
}

int fl_sc_warmup_server(int s)
{
	size_t n = fl_sc_warmup_bytes();

	if (!n)
		return 0;
	return fl_sc_warm_done(s, fl_sc_warm_io(s, 0, n, 901) || fl_sc_warm_io(s, 1, n, 902));
}

int fl_sc_warmup(int c, int s)
{
	size_t n = fl_sc_warmup_bytes();
	int err;

	if (!n)
		return 0;
	/* The two halves interleaved in one thread: the client's request,
	 * the server's read of it, its answer, the client's read. */
	err = fl_sc_warm_io(c, 1, n, 901) || fl_sc_warm_io(s, 0, n, 901) ||
	      fl_sc_warm_io(s, 1, n, 902) || fl_sc_warm_io(c, 0, n, 902);
	fl_sc_warm_done(s, 0);
	return fl_sc_warm_done(c, err);
}

int fl_sc_pair_cold(int family, int *c, int *s)
{
	int port, l = fl_sc_listen(family, &port);

	if (l < 0)
		return -1;
	*c = fl_sc_connect(family, port);
	*s = *c >= 0 ? accept(l, NULL, NULL) : -1;
	close(l);
	if (*s < 0) {
		if (*c >= 0)
			close(*c);
		return -1;
	}
	return 0;
}

int fl_sc_pair(int family, int *c, int *s)
{
	if (fl_sc_pair_cold(family, c, s))
		return -1;
	if (fl_sc_warmup(*c, *s)) {
		close(*c);
		close(*s);
		return -1;
	}
	return 0;
}

static uint64_t fl_sc_word(uint64_t i, uint64_t seed)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ (seed * 0xbf58476d1ce4e5b9ULL);
}

void fl_sc_fill(uint8_t *buf, uint64_t off, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t pos = off + i;

		buf[i] = (uint8_t)(fl_sc_word(pos >> 3, seed) >> (8 * (pos & 7)));
	}
}

int fl_sc_write_pattern(int fd, uint64_t off, size_t n, uint64_t seed)
{
	uint8_t buf[65536];

	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf), done = 0;

		fl_sc_fill(buf, off, k, seed);
		while (done < k) {
			ssize_t w = write(fd, buf + done, k - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -1;
			done += (size_t)w;
		}
		off += k;
		n -= k;
	}
	return 0;
}

ssize_t fl_sc_read_pattern(int fd, uint64_t off, size_t n, uint64_t seed, int64_t *bad)
{
	uint8_t buf[65536], want[65536];
	size_t got = 0;

	*bad = -1;
	while (got < n) {
		size_t k = n - got < sizeof(buf) ? n - got : sizeof(buf), i;
		ssize_t r = read(fd, buf, k);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return got ? (ssize_t)got : -1;
		if (r == 0)
			break;
		fl_sc_fill(want, off + got, (size_t)r, seed);
		for (i = 0; i < (size_t)r && *bad < 0; i++)
			if (buf[i] != want[i])
				*bad = (int64_t)(off + got + i);
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int fl_sc_readable_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

double fl_sc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void fl_sc_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int fl_usage(void)
{
	fprintf(stderr, "usage: conformance list | conformance SCENARIO 4|6 | "
		"conformance --child NAME ARGS...\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct fl_scenario *sc;
	struct fl_child *ch;

	fl_self_path = argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "--child")) {
		for (ch = fl_child_head; ch; ch = ch->next)
			if (!strcmp(ch->name, argv[2]))
				return ch->fn(argc - 3, argv + 3);
		fprintf(stderr, "conformance: no child mode '%s'\n", argv[2]);
		return 2;
	}
	if (argc == 2 && !strcmp(argv[1], "list")) {
		for (sc = fl_sc_head; sc; sc = sc->next)
			printf("%s %s%s\n", sc->name, sc->flags & FL_SC_REDIRECTS ? "redirects" : "-",
			       sc->flags & FL_SC_SLOW ? " slow" : "");
		return 0;
	}
	if (argc != 3 || (strcmp(argv[2], "4") && strcmp(argv[2], "6")))
		return fl_usage();
	for (sc = fl_sc_head; sc; sc = sc->next)
		if (!strcmp(sc->name, argv[1])) {
			fl_sc_running = sc;
			return sc->fn(argv[2][0] == '4' ? AF_INET : AF_INET6) ? 3 : 0;
		}
	fprintf(stderr, "conformance: no scenario '%s'\n", argv[1]);
	return 2;
}
