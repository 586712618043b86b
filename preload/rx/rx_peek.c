// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_peek.c - MSG_PEEK across both receive queues (rx_peek.h). */
#include "rx_peek.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "common/clock.h"
#include "base/libc.h"
#include "rx_inq.h"
#include "socket/rxq.h"

/* Peeks len bytes from offset at of the unread stream. Called locked. */
static ssize_t fl_rx_peek_at(int fd, struct fl_rxq *q, uint8_t *buf, size_t at, size_t len)
{
	size_t held = q->len - q->off, done = 0, need, kat;
	uint8_t small[4096], *tmp;
	int tries, inq = 0;
	ssize_t r = 0;

	for (tries = 0; tries < 2; tries++) {
		held = q->len - q->off;
		done = 0;
		if (at < held) {
			done = len < held - at ? len : held - at;
			memcpy(buf, q->buf + q->off + at, done);
		}
		if (done == len)
			return (ssize_t)len;
		/* TCP's peek stops at the mark once it has copied something. */
		if (done && fl_rx_atmark(fd))
			return (ssize_t)done;
		kat = at + done - held; /* where the rest starts in the kernel's bytes */
		need = kat + (len - done);
		tmp = need <= sizeof(small) ? small : malloc(need);
		if (!tmp)
			return done ? (ssize_t)done : (errno = ENOMEM, -1);
		r = libc_recv(fd, tmp, need, MSG_PEEK | MSG_DONTWAIT);
		if (r > (ssize_t)kat) {
			memcpy(buf + done, tmp + kat, (size_t)r - kat);
			done += (size_t)r - kat;
		}
		if (tmp != small)
			free(tmp);
		if (done == len)
			break;
		/* Short: if the kernel holds more than its peek showed, the rest
		 * is in TCP's queue behind the redirected one. */
		if (fl_rx_inq(fd, &inq) || (size_t)inq <= (r > 0 ? (size_t)r : 0) ||
		    fl_rxq_fill_locked(fd, q, "so that a peek reaches TCP's queue"))
			break;
	}
	if (!done && r < 0)
		return -1;
	return (ssize_t)done;
}

ssize_t fl_rx_peek(int fd, struct fl_rxq *q, void *buf, size_t len)
{
	ssize_t n;
	size_t at;

	pthread_mutex_lock(&q->lock);
	at = q->peek_off >= 0 ? (size_t)q->peek_off : 0;
	n = fl_rx_peek_at(fd, q, buf, at, len);
	if (n > 0 && q->peek_off >= 0)
		q->peek_off += (int)n;
	pthread_mutex_unlock(&q->lock);
	return n;
}

ssize_t fl_rx_peek_waitall(int fd, struct fl_rxq *q, void *buf, size_t len, int flags)
{
	size_t want = len + (q && fl_rxq_peek_off(q) > 0 ? (size_t)fl_rxq_peek_off(q) : 0);
	struct timeval tv = { 0, 0 };
	socklen_t tl = sizeof(tv);
	struct timespec nap = { 0, 1000000 };
	double start = fl_clock_s(CLOCK_MONOTONIC), timeo = 0;
	int have = 0, fl = libc_fcntl(fd, F_GETFL, NULL);
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };

	if (fl >= 0 && (fl & O_NONBLOCK))
		return libc_recv(fd, buf, len, flags & ~MSG_WAITALL);
	if (!libc_getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &tl))
		timeo = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
	for (;;) {
		if (fl_rx_inq(fd, &have) == 0 &&
		    (size_t)have + (q ? fl_rxq_held(q) : 0) >= want)
			break;
		/* Nothing more will come once the peer stopped sending. */
		if (libc_poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			break;
		if (timeo && fl_clock_s(CLOCK_MONOTONIC) - start >= timeo)
			break;
		if (!have) {
			/* Wait for the first byte in the kernel, as a peek would. */
			if (libc_poll(&p, 1, timeo ? 10 : 100) < 0 && errno == EINTR)
				return -1;
			continue;
		}
		if (nanosleep(&nap, NULL) && errno == EINTR)
			break; /* a signal: TCP returns what it has */
	}
	if (q)
		return fl_rx_peek(fd, q, buf, len);
	return libc_recv(fd, buf, len, (flags & ~MSG_WAITALL) | MSG_DONTWAIT);
}
