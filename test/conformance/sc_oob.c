// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_oob.c - TCP urgent data: send(MSG_OOB), recv(MSG_OOB), POLLPRI, select's
 * exception set, SIGURG, SIOCATMARK / sockatmark(), SO_OOBINLINE, and the
 * normal stream around the mark.
 *
 * The sender writes a filler whose byte at stream position p is
 * 'a' + p % 26 and urgent bytes in upper case. The receiver describes the
 * normal stream it read as runs: "1000 ^ 500" is 1000 filler bytes, one
 * position missing (the urgent byte, taken out of band), 500 more; an
 * upper-case letter is an urgent byte that stayed in band; "?" a byte that
 * is neither. The receiver only looks once everything it waits for has
 * arrived (POLLPRI, or POLLRDHUP after the sender's shutdown), so TCP's own
 * runs are deterministic.
 *
 * The "redirected" variants first move 8 KiB each way and back (the default
 * configuration enrolls a connection once it moved 4096 bytes), so that the
 * bytes in front of the urgent byte travel by redirect under the shim.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

#include "conformance.h"

/* ------------------------------------------------------------ helpers */

struct oob_conn {
	int c, s;      /* c sends the urgent bytes, s receives them */
	uint64_t pos;  /* c's next stream position */
	char run[512]; /* s's description of the normal stream so far */
	size_t runlen;
	uint64_t rpos;  /* the stream position s expects next */
	size_t filler;  /* filler bytes in the current run */
	uint64_t total; /* normal bytes s read */
};

static void oob_guard(int fd)
{
	struct timeval tv = { 3, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void oob_fill(uint8_t *b, uint64_t pos, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)('a' + (pos + i) % 26);
}

static int oob_write_all(int fd, const uint8_t *b, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = send(fd, b + done, n - done, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* n filler bytes from fd at stream position *pos. */
static int oob_send_filler(int fd, uint64_t *pos, size_t n)
{
	uint8_t b[8192];

	while (n) {
		size_t k = n < sizeof(b) ? n : sizeof(b);

		oob_fill(b, *pos, k);
		if (oob_write_all(fd, b, k))
			return -1;
		*pos += k;
		n -= k;
	}
	return 0;
}

static void oob_run_put(struct oob_conn *k, const char *tok)
{
	size_t n = strlen(tok);

	if (k->runlen + n + 2 >= sizeof(k->run))
		return;
	if (k->runlen)
		k->run[k->runlen++] = ' ';
	memcpy(k->run + k->runlen, tok, n);
	k->runlen += n;
	k->run[k->runlen] = 0;
}

static void oob_run_flush(struct oob_conn *k)
{
	char tok[32];

	if (k->filler) {
		snprintf(tok, sizeof(tok), "%zu", k->filler);
		oob_run_put(k, tok);
		k->filler = 0;
	}
}

/* Adds the bytes s read to the description of the normal stream. */
static void oob_account(struct oob_conn *k, const uint8_t *b, size_t n)
{
	char tok[4];
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t want = (uint8_t)('a' + k->rpos % 26);

		k->total++;
		if (b[i] == want) {
			k->filler++;
			k->rpos++;
			continue;
		}
		oob_run_flush(k);
		if (b[i] >= 'A' && b[i] <= 'Z') {
			snprintf(tok, sizeof(tok), "%c", b[i]);
			oob_run_put(k, tok);
			k->rpos++;
		} else if (b[i] == (uint8_t)('a' + (k->rpos + 1) % 26)) {
			oob_run_put(k, "^"); /* one position taken out of band */
			k->rpos += 2;
			k->filler++;
		} else {
			oob_run_put(k, "?");
			k->rpos++;
		}
	}
}

/* Reads exactly n normal bytes at s (fewer at EOF or error). */
static size_t oob_read(struct oob_conn *k, size_t n)
{
	uint8_t b[4096];
	size_t got = 0;

	while (got < n) {
		size_t want = n - got < sizeof(b) ? n - got : sizeof(b);
		ssize_t r = read(k->s, b, want);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		oob_account(k, b, (size_t)r);
		got += (size_t)r;
	}
	return got;
}

/* Reads until EOF. */
static size_t oob_read_to_eof(struct oob_conn *k)
{
	return oob_read(k, (size_t)-1);
}

static int oob_inq(int fd)
{
	int v = -1;

	return ioctl(fd, FIONREAD, &v) ? -1 : v;
}

static int oob_atmark(int fd)
{
	int v = -1;

	return ioctl(fd, SIOCATMARK, &v) ? -1 : v;
}

/* Reads the normal stream up to the mark, as a telnet server discards
 * data on an interrupt: "while (!sockatmark(s)) read(s, ...)". Returns the
 * count, which TCP fixes (every read stops at the mark). */
static size_t oob_read_to_mark(struct oob_conn *k)
{
	uint8_t b[4096];
	size_t got = 0;
	int i, m;

	for (i = 0; i < 10000; i++) {
		ssize_t r;

		m = sockatmark(k->s);
		if (m != 0)
			break;
		r = read(k->s, b, sizeof(b));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		oob_account(k, b, (size_t)r);
		got += (size_t)r;
	}
	return got;
}

/* Waits until s shows any of `want` within ms; the revents asked for. */
static int oob_poll(int fd, short want, int ms)
{
	struct pollfd p = { .fd = fd, .events = want };
	double end = fl_sc_now() + ms / 1000.0;
	int r;

	for (;;) {
		int left = (int)((end - fl_sc_now()) * 1000);

		r = poll(&p, 1, left > 0 ? left : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 1)
			return p.revents & want;
		return 0;
	}
}

static const char *oob_revents(int rev)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s%s%s%s", rev & POLLIN ? " POLLIN" : "",
		 rev & POLLPRI ? " POLLPRI" : "", rev & POLLRDHUP ? " POLLRDHUP" : "",
		 rev ? "" : " none");
	return buf + 1;
}

/* select() with s in the exception set only: 1 if it is there at once. */
static int oob_select_except(int fd)
{
	struct timeval tv = { 0, 0 };
	fd_set ex;

	FD_ZERO(&ex);
	FD_SET(fd, &ex);
	return select(fd + 1, NULL, NULL, &ex, &tv) == 1 && FD_ISSET(fd, &ex);
}

/* select() with s in the read set only: 1 if it is there at once. */
static int oob_select_read(int fd)
{
	struct timeval tv = { 0, 0 };
	fd_set rd;

	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	return select(fd + 1, &rd, NULL, NULL, &tv) == 1 && FD_ISSET(fd, &rd);
}

/* send(1 byte, MSG_OOB) of the letter ch, by the call named `how`. */
static void oob_send_urgent(struct oob_conn *k, char ch, const char *how)
{
	struct iovec v = { &ch, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
	ssize_t w;

	if (!strcmp(how, "sendto"))
		w = sendto(k->c, &ch, 1, MSG_OOB | MSG_NOSIGNAL, NULL, 0);
	else if (!strcmp(how, "sendmsg"))
		w = sendmsg(k->c, &m, MSG_OOB | MSG_NOSIGNAL);
	else
		w = send(k->c, &ch, 1, MSG_OOB | MSG_NOSIGNAL);
	fl_trace("c: %s('%c', MSG_OOB) -> %s", how, ch, fl_ret(w));
	if (w == 1)
		k->pos++;
}

/* recv(MSG_OOB | extra) into a buffer of len; traces the result and the byte. */
static ssize_t oob_recv_urgent(struct oob_conn *k, int extra, size_t len, const char *what)
{
	char b[8] = { 0 };
	ssize_t r = recv(k->s, b, len, MSG_OOB | extra);

	if (r == 1)
		fl_trace("s: %s -> 1 '%c'", what, b[0]);
	else
		fl_trace("s: %s -> %s", what, fl_ret(r));
	return r;
}

/* The connected pair; with warm set, 8 KiB each way and back first, all
 * of it read, so that both ends are enrolled and the gate is open. */
static int oob_setup(int family, struct oob_conn *k, int warm)
{
	uint64_t back = 0;
	uint8_t b[8192];

	memset(k, 0, sizeof(*k));
	if (fl_sc_pair(family, &k->c, &k->s))
		return -1;
	oob_guard(k->c);
	oob_guard(k->s);
	if (!warm)
		return 0;
	if (oob_send_filler(k->c, &k->pos, 8192) || oob_read(k, 8192) != 8192)
		return -1;
	if (oob_send_filler(k->s, &back, 8192))
		return -1;
	for (size_t got = 0; got < 8192;) {
		ssize_t r = read(k->c, b, sizeof(b));

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	if (oob_send_filler(k->c, &k->pos, 100) || oob_read(k, 100) != 100)
		return -1;
	if (oob_send_filler(k->s, &back, 100) || read(k->c, b, 100) != 100)
		return -1;
	return 0;
}

static void oob_trace_stream(struct oob_conn *k)
{
	oob_run_flush(k);
	fl_trace("s: normal stream: %llu bytes: %s", (unsigned long long)k->total, k->run);
}

static void oob_close(struct oob_conn *k)
{
	close(k->c);
	close(k->s);
}

/* SIGURG handler runs (F_SETOWN to this process). */
static volatile sig_atomic_t oob_sigurg;

static void oob_on_sigurg(int sig)
{
	(void)sig;
	oob_sigurg++;
}

static void oob_sigurg_on(int fd, struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = oob_on_sigurg;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGURG, &sa, old);
	oob_sigurg = 0;
	fl_trace("s: F_SETOWN -> %s", fl_ret(fcntl(fd, F_SETOWN, getpid())));
}

/* Until the first SIGURG has run, at most a second (it is sent when the
 * urgent pointer arrives, so it is there once POLLPRI is). */
static void oob_wait_sigurg(void)
{
	int i;

	for (i = 0; i < 1000 && !oob_sigurg; i++)
		fl_sc_sleep_ms(1);
}

/* -------------------------------------------------------------- scenarios */

/* 1000 normal bytes, 1 urgent byte, 500 normal bytes; the receiver sees
 * POLLPRI and the exception set, takes the urgent byte out of band, reads
 * up to the mark (1000 bytes), the rest, and EOF. */
static int oob_basic(int family, int warm)
{
	struct oob_conn k;
	int m;

	if (oob_setup(family, &k, warm))
		return -1;
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	fl_trace("s: 1000 bytes readable within 1 s: %s",
		 oob_poll(k.s, POLLIN, 1000) ? "yes" : "no");
	fl_trace("s: SIOCATMARK before any urgent byte -> %d", oob_atmark(k.s));
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB) before any urgent byte");
	fl_trace("s: exception set before any urgent byte: %d", oob_select_except(k.s));
	oob_send_urgent(&k, 'U', "send");
	fl_trace("s: poll(POLLIN|POLLPRI) -> %s",
		 oob_revents(oob_poll(k.s, POLLPRI, 1000) ? oob_poll(k.s, POLLIN | POLLPRI, 0) : 0));
	fl_trace("s: exception set: %d", oob_select_except(k.s));
	fl_trace("s: SIOCATMARK with 1000 bytes in front of the mark -> %d", oob_atmark(k.s));
	fl_trace("s: FIONREAD -> %d", oob_inq(k.s));
	oob_recv_urgent(&k, MSG_PEEK, 1, "recv(MSG_OOB|MSG_PEEK)");
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB) again");
	oob_recv_urgent(&k, MSG_DONTWAIT, 1, "recv(MSG_OOB|MSG_DONTWAIT) again");
	fl_trace("s: poll(POLLIN|POLLPRI) after the urgent byte -> %s",
		 oob_revents(oob_poll(k.s, POLLIN | POLLPRI, 0)));
	fl_trace("s: exception set after the urgent byte: %d", oob_select_except(k.s));
	fl_trace("s: FIONREAD after the urgent byte -> %d", oob_inq(k.s));
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	m = oob_atmark(k.s);
	fl_trace("s: SIOCATMARK -> %d, sockatmark -> %d", m, sockatmark(k.s));
	fl_trace("s: FIONREAD at the mark -> %d", oob_inq(k.s));
	fl_trace("s: readable at the mark with nothing behind it: %s",
		 oob_poll(k.s, POLLIN, 100) ? "yes" : "no");
	if (oob_send_filler(k.c, &k.pos, 500))
		return -1;
	shutdown(k.c, SHUT_WR);
	fl_trace("s: readable after 500 more: %s", oob_poll(k.s, POLLIN, 1000) ? "yes" : "no");
	fl_trace("s: POLLRDHUP within 1 s: %s", oob_poll(k.s, POLLRDHUP, 1000) ? "yes" : "no");
	fl_trace("s: FIONREAD at the mark with 500 behind it -> %d", oob_inq(k.s));
	fl_trace("s: read to EOF: %zu bytes", oob_read_to_eof(&k));
	fl_trace("s: SIOCATMARK at EOF -> %d", oob_atmark(k.s));
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB) at EOF");
	oob_trace_stream(&k);
	oob_close(&k);
	return 0;
}

static int oob_basic_tcp(int family)
{
	return oob_basic(family, 0);
}
FL_SCENARIO("oob-urgent", 0, oob_basic_tcp)

static int oob_basic_redirected(int family)
{
	return oob_basic(family, 1);
}
FL_SCENARIO("oob-urgent-redirected", FL_SC_REDIRECTS, oob_basic_redirected)

/* The receiver waits for the mark first (the classic discard loop), then
 * takes the urgent byte; recvmsg reports MSG_OOB in msg_flags; SIGURG
 * reaches the owner set with F_SETOWN. Bytes follow the urgent one before
 * the receiver looks. */

static int oob_mark_first(int family)
{
	struct sigaction old;
	struct oob_conn k;
	char b[4] = { 0 };
	struct iovec v = { b, sizeof(b) };
	struct msghdr msg = { .msg_iov = &v, .msg_iovlen = 1 };
	ssize_t r;

	if (oob_setup(family, &k, 1))
		return -1;
	oob_sigurg_on(k.s, &old);
	if (oob_send_filler(k.c, &k.pos, 3000))
		return -1;
	oob_send_urgent(&k, 'M', "send");
	if (oob_send_filler(k.c, &k.pos, 2000))
		return -1;
	shutdown(k.c, SHUT_WR);
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	fl_trace("s: POLLRDHUP within 1 s: %s", oob_poll(k.s, POLLRDHUP, 1000) ? "yes" : "no");
	oob_wait_sigurg();
	fl_trace("s: SIGURG delivered %d time(s)", (int)oob_sigurg);
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	fl_trace("s: FIONREAD -> %d", oob_inq(k.s));
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	fl_trace("s: FIONREAD -> %d", oob_inq(k.s));
	fl_trace("s: poll(POLLIN|POLLPRI) at the mark -> %s",
		 oob_revents(oob_poll(k.s, POLLIN | POLLPRI, 0)));
	r = recvmsg(k.s, &msg, MSG_OOB);
	fl_trace("s: recvmsg(MSG_OOB) -> %s '%c', msg_flags MSG_OOB %d MSG_TRUNC %d", fl_ret(r),
		 r == 1 ? b[0] : '-', !!(msg.msg_flags & MSG_OOB), !!(msg.msg_flags & MSG_TRUNC));
	fl_trace("s: SIOCATMARK after taking it -> %d", oob_atmark(k.s));
	fl_trace("s: FIONREAD -> %d", oob_inq(k.s));
	fl_trace("s: read to EOF: %zu bytes", oob_read_to_eof(&k));
	fl_trace("s: SIOCATMARK at EOF -> %d", oob_atmark(k.s));
	oob_trace_stream(&k);
	sigaction(SIGURG, &old, NULL);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-urgent-mark-first", FL_SC_REDIRECTS, oob_mark_first)

/* After the urgent byte is taken, the bytes in front of the mark must stay
 * readable to every kind of wait (one read per wakeup, as a level-triggered
 * loop does), and at the mark, with nothing behind it, the socket is not
 * readable until more bytes come. */
static int oob_readiness(int family)
{
	struct oob_conn k;
	uint8_t b[600];
	ssize_t r;
	size_t got = 0;
	int rounds = 0;

	if (oob_setup(family, &k, 1))
		return -1;
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	oob_send_urgent(&k, 'R', "send");
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	fl_trace("s: FIONREAD -> %d", oob_inq(k.s));
	/* 600-byte reads: TCP gives 600, then the 400 up to the mark. */
	while (got < 1000 && rounds++ < 10) {
		fl_trace("s: readable (poll): %s, (select): %s",
			 oob_poll(k.s, POLLIN, 500) ? "yes" : "no",
			 oob_select_read(k.s) ? "yes" : "no");
		r = recv(k.s, b, sizeof(b), MSG_DONTWAIT);
		fl_trace("s: recv(600, MSG_DONTWAIT) -> %s", fl_ret(r));
		if (r <= 0)
			break;
		oob_account(&k, b, (size_t)r);
		got += (size_t)r;
	}
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	fl_trace("s: readable at the mark with nothing behind it: %s",
		 oob_poll(k.s, POLLIN, 100) ? "yes" : "no");
	r = recv(k.s, b, sizeof(b), MSG_DONTWAIT);
	fl_trace("s: recv(600, MSG_DONTWAIT) at the mark -> %s", fl_ret(r));
	if (oob_send_filler(k.c, &k.pos, 10))
		return -1;
	fl_trace("s: readable after 10 more: %s", oob_poll(k.s, POLLIN, 1000) ? "yes" : "no");
	fl_trace("s: read 10: %zu", oob_read(&k, 10));
	oob_trace_stream(&k);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-urgent-readiness", FL_SC_REDIRECTS, oob_readiness)

/* Peeks around the mark: a peek stops at the mark as a read does, and
 * MSG_WAITALL does too. */
static int oob_peek(int family)
{
	struct oob_conn k;
	uint8_t b[4000];
	ssize_t r;

	if (oob_setup(family, &k, 1))
		return -1;
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	oob_send_urgent(&k, 'P', "send");
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	r = recv(k.s, b, sizeof(b), MSG_PEEK);
	fl_trace("s: recv(4000, MSG_PEEK) -> %s", fl_ret(r));
	r = recv(k.s, b, sizeof(b), MSG_WAITALL);
	fl_trace("s: recv(4000, MSG_WAITALL) -> %s", fl_ret(r));
	if (r > 0)
		oob_account(&k, b, (size_t)r);
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	r = recv(k.s, b, 10, MSG_PEEK);
	fl_trace("s: recv(10, MSG_PEEK) at the mark -> %s", fl_ret(r));
	fl_trace("s: read 1000: %zu", oob_read(&k, 1000));
	oob_trace_stream(&k);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-urgent-peek", FL_SC_REDIRECTS, oob_peek)

/* SO_OOBINLINE: the urgent byte stays in the stream at the mark, and
 * recv(MSG_OOB) fails with EINVAL. */
static int oob_inline(int family)
{
	struct oob_conn k;
	int one = 1;

	if (oob_setup(family, &k, 1))
		return -1;
	fl_trace("s: SO_OOBINLINE 1 -> %s",
		 fl_ret(setsockopt(k.s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one))));
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	oob_send_urgent(&k, 'I', "send");
	if (oob_send_filler(k.c, &k.pos, 500))
		return -1;
	shutdown(k.c, SHUT_WR);
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	fl_trace("s: POLLRDHUP within 1 s: %s", oob_poll(k.s, POLLRDHUP, 1000) ? "yes" : "no");
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	fl_trace("s: FIONREAD -> %d", oob_inq(k.s));
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	fl_trace("s: FIONREAD -> %d", oob_inq(k.s));
	fl_trace("s: read to EOF: %zu bytes", oob_read_to_eof(&k));
	oob_trace_stream(&k);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-urgent-inline", FL_SC_REDIRECTS, oob_inline)

/* Three urgent bytes in a row, by send, sendto and sendmsg: TCP keeps only
 * the last one out of band. The receiver reads up to the first mark before
 * the next two come: the kernel then drops the first urgent byte when the
 * second is announced (it is at that mark), and the second stays in the
 * stream once the third is announced. (With the bytes in front of the
 * first mark unread and redirected, fastlocal differs: docs/semantics.md.) */
static int oob_several(int family)
{
	struct oob_conn k;

	if (oob_setup(family, &k, 1))
		return -1;
	if (oob_send_filler(k.c, &k.pos, 100))
		return -1;
	oob_send_urgent(&k, 'A', "send");
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	if (oob_send_filler(k.c, &k.pos, 100))
		return -1;
	oob_send_urgent(&k, 'B', "sendto");
	if (oob_send_filler(k.c, &k.pos, 100))
		return -1;
	oob_send_urgent(&k, 'C', "sendmsg");
	if (oob_send_filler(k.c, &k.pos, 100))
		return -1;
	shutdown(k.c, SHUT_WR);
	fl_trace("s: POLLRDHUP within 1 s: %s", oob_poll(k.s, POLLRDHUP, 1000) ? "yes" : "no");
	fl_trace("s: poll(POLLIN|POLLPRI) -> %s", oob_revents(oob_poll(k.s, POLLIN | POLLPRI, 0)));
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	fl_trace("s: read to EOF: %zu bytes", oob_read_to_eof(&k));
	oob_trace_stream(&k);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-urgent-several", FL_SC_REDIRECTS, oob_several)

/* One large send(MSG_OOB): only its last byte is urgent (TCP sets the
 * urgent pointer once, at the end of the call), whatever path carries the
 * rest of it. */
static int oob_large(int family)
{
	static uint8_t b[20000];
	struct sigaction old;
	struct oob_conn k;
	ssize_t w;

	if (oob_setup(family, &k, 1))
		return -1;
	oob_sigurg_on(k.s, &old);
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	oob_fill(b, k.pos, sizeof(b));
	b[sizeof(b) - 1] = 'L';
	w = send(k.c, b, sizeof(b), MSG_OOB | MSG_NOSIGNAL);
	fl_trace("c: send(20000, MSG_OOB) -> %s", fl_ret(w));
	if (w > 0)
		k.pos += (uint64_t)w;
	if (oob_send_filler(k.c, &k.pos, 100))
		return -1;
	shutdown(k.c, SHUT_WR);
	fl_trace("s: POLLRDHUP within 1 s: %s", oob_poll(k.s, POLLRDHUP, 1000) ? "yes" : "no");
	fl_trace("s: poll(POLLIN|POLLPRI) -> %s", oob_revents(oob_poll(k.s, POLLIN | POLLPRI, 0)));
	oob_wait_sigurg();
	fl_trace("s: SIGURG delivered %d time(s)", (int)oob_sigurg);
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	fl_trace("s: read to EOF: %zu bytes", oob_read_to_eof(&k));
	oob_trace_stream(&k);
	sigaction(SIGURG, &old, NULL);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-urgent-large-send", FL_SC_REDIRECTS, oob_large)

/* An urgent byte right after connect (on TCP in the default configuration,
 * before enrollment), then 8 KiB, then another one: both behave as TCP's. */
static int oob_before_enroll(int family)
{
	struct oob_conn k;

	if (oob_setup(family, &k, 0))
		return -1;
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	oob_send_urgent(&k, 'E', "send");
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	if (oob_send_filler(k.c, &k.pos, 8192))
		return -1;
	fl_trace("s: read 8192: %zu", oob_read(&k, 8192));
	if (oob_send_filler(k.c, &k.pos, 8192))
		return -1;
	fl_trace("s: read 8192: %zu", oob_read(&k, 8192));
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	oob_send_urgent(&k, 'F', "send");
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	fl_trace("s: SIOCATMARK -> %d", oob_atmark(k.s));
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB)");
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	if (oob_send_filler(k.c, &k.pos, 100))
		return -1;
	shutdown(k.c, SHUT_WR);
	fl_trace("s: read to EOF: %zu bytes", oob_read_to_eof(&k));
	oob_trace_stream(&k);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-urgent-before-enroll", 0, oob_before_enroll)

/* recv(MSG_OOB) without urgent data never blocks and never returns normal
 * bytes: EINVAL, on an idle connection and with bytes queued; a zero-length
 * recv(MSG_OOB) takes an urgent byte and reports MSG_TRUNC. */
static int oob_none(int family)
{
	struct oob_conn k;
	char b[4];
	struct iovec v = { b, 0 };
	struct msghdr msg = { .msg_iov = &v, .msg_iovlen = 1 };
	ssize_t r;

	if (oob_setup(family, &k, 1))
		return -1;
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB) on an idle connection");
	oob_recv_urgent(&k, MSG_DONTWAIT, 1, "recv(MSG_OOB|MSG_DONTWAIT) on an idle connection");
	oob_recv_urgent(&k, 0, 0, "recv(MSG_OOB, len 0) on an idle connection");
	if (oob_send_filler(k.c, &k.pos, 1000))
		return -1;
	fl_trace("s: 1000 bytes readable within 1 s: %s",
		 oob_poll(k.s, POLLIN, 1000) ? "yes" : "no");
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB) with 1000 bytes queued");
	oob_recv_urgent(&k, MSG_PEEK, 1, "recv(MSG_OOB|MSG_PEEK) with 1000 bytes queued");
	oob_recv_urgent(&k, 0, 0, "recv(MSG_OOB, len 0) with 1000 bytes queued");
	oob_send_urgent(&k, 'Z', "send");
	fl_trace("s: POLLPRI within 1 s: %s", oob_poll(k.s, POLLPRI, 1000) ? "yes" : "no");
	r = recvmsg(k.s, &msg, MSG_OOB | MSG_PEEK);
	fl_trace("s: recvmsg(MSG_OOB|MSG_PEEK, len 0) -> %s, msg_flags MSG_OOB %d MSG_TRUNC %d",
		 fl_ret(r), !!(msg.msg_flags & MSG_OOB), !!(msg.msg_flags & MSG_TRUNC));
	msg.msg_flags = 0;
	r = recvmsg(k.s, &msg, MSG_OOB);
	fl_trace("s: recvmsg(MSG_OOB, len 0) -> %s, msg_flags MSG_OOB %d MSG_TRUNC %d", fl_ret(r),
		 !!(msg.msg_flags & MSG_OOB), !!(msg.msg_flags & MSG_TRUNC));
	oob_recv_urgent(&k, 0, 1, "recv(MSG_OOB) after that");
	fl_trace("s: read up to the mark: %zu bytes", oob_read_to_mark(&k));
	if (oob_send_filler(k.c, &k.pos, 10))
		return -1;
	shutdown(k.c, SHUT_WR);
	fl_trace("s: read to EOF: %zu bytes", oob_read_to_eof(&k));
	oob_trace_stream(&k);
	oob_close(&k);
	return 0;
}
FL_SCENARIO("oob-recv-without-urgent", FL_SC_REDIRECTS, oob_none)
