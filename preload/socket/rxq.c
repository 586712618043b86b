// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rxq.c - the held receive bytes of an enrolled socket, and SO_PEEK_OFF (rxq.h). */
#include "rxq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "base/libc.h"
#include "base/fault.h"
#include "base/log.h"

void fl_rxq_init(struct fl_rxq *q)
{
	pthread_mutex_init(&q->lock, NULL);
	q->buf = NULL;
	q->len = q->off = 0;
	q->peek_off = -1;
	q->inline_forced = false;
}

void fl_rxq_reset(struct fl_rxq *q)
{
	pthread_mutex_lock(&q->lock);
	free(q->buf);
	q->buf = NULL;
	q->off = 0;
	__atomic_store_n(&q->len, 0, __ATOMIC_RELEASE);
	q->peek_off = -1;
	q->inline_forced = false;
	pthread_mutex_unlock(&q->lock);
}

bool fl_rxq_active(const struct fl_rxq *q)
{
	return q && (__atomic_load_n(&q->len, __ATOMIC_ACQUIRE) || q->peek_off >= 0);
}

size_t fl_rxq_held(struct fl_rxq *q)
{
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->len - q->off;
	pthread_mutex_unlock(&q->lock);
	return n;
}

int fl_rxq_fill_locked(int fd, struct fl_rxq *q, const char *why)
{
	int redirected = 0;
	uint8_t *nb;
	ssize_t r;

	if (libc_ioctl(fd, FIONREAD, &redirected) || redirected <= 0)
		return 0;
	nb = realloc(q->buf, q->len + (size_t)redirected);
	if (!nb)
		return -1;
	q->buf = nb;
	r = libc_recv(fd, q->buf + q->len, (size_t)redirected, MSG_DONTWAIT);
	if (r > 0) {
		__atomic_store_n(&q->len, q->len + (size_t)r, __ATOMIC_RELEASE);
		fl_debug("fd %d: %zd redirected bytes held %s", fd, r, why);
	}
	return r < 0 ? -1 : 0;
}

void fl_rxq_set_inline(int fd, int on)
{
	int saved = errno;

	libc_setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &on, sizeof(on));
	errno = saved;
}

void fl_rxq_unforce_locked(int fd, struct fl_rxq *q)
{
	if (!q->inline_forced)
		return;
	fl_rxq_set_inline(fd, 0);
	q->inline_forced = false;
}

bool fl_rxq_drop_locked(struct fl_rxq *q, size_t n)
{
	q->off += n;
	if (q->off != q->len)
		return false;
	free(q->buf);
	q->buf = NULL;
	q->off = 0;
	__atomic_store_n(&q->len, 0, __ATOMIC_RELEASE);
	return true;
}

bool fl_rxq_append_locked(struct fl_rxq *q, const void *p, size_t n)
{
	uint8_t *nb = realloc(q->buf, q->len + n);

	if (!nb)
		return false;
	q->buf = nb;
	memcpy(q->buf + q->len, p, n);
	__atomic_store_n(&q->len, q->len + n, __ATOMIC_RELEASE);
	return true;
}

void fl_rxq_read_done_locked(struct fl_rxq *q, size_t n)
{
	if (q->peek_off >= 0)
		q->peek_off = (size_t)q->peek_off > n ? q->peek_off - (int)n : 0;
}

void fl_rxq_read_done(struct fl_rxq *q, size_t n)
{
	pthread_mutex_lock(&q->lock);
	fl_rxq_read_done_locked(q, n);
	pthread_mutex_unlock(&q->lock);
}

ssize_t fl_rxq_give(struct fl_rxq *q, size_t len, fl_rxq_put_fn put, void *ctx)
{
	size_t held;
	ssize_t took = 0;

	pthread_mutex_lock(&q->lock);
	held = q->len - q->off;
	if (held) {
		took = put(ctx, q->buf + q->off, len < held ? len : held);
		if (took > 0) {
			fl_rxq_drop_locked(q, (size_t)took);
			fl_rxq_read_done_locked(q, (size_t)took);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return took;
}

void fl_rxq_set_peek_off(struct fl_rxq *q, int v)
{
	int saved = errno;

	pthread_mutex_lock(&q->lock);
	q->peek_off = v < 0 ? -1 : v;
	fl_fault_lock_hold(); /* tests only (fault.h) */
	pthread_mutex_unlock(&q->lock);
	errno = saved;
}

int fl_rxq_peek_off(struct fl_rxq *q)
{
	int v;

	pthread_mutex_lock(&q->lock);
	v = q->peek_off;
	pthread_mutex_unlock(&q->lock);
	return v;
}

bool fl_rxq_inline_forced(struct fl_rxq *q)
{
	bool f;

	pthread_mutex_lock(&q->lock);
	f = q->inline_forced;
	pthread_mutex_unlock(&q->lock);
	return f;
}

bool fl_rxq_set_oobinline(struct fl_rxq *q, int on)
{
	bool handled;

	pthread_mutex_lock(&q->lock);
	handled = q->inline_forced;
	/* On: the application's own from now on (the kernel has it already).
	 * Off: it is, for the application; the kernel keeps it until q is
	 * empty. */
	if (handled && on)
		q->inline_forced = false;
	pthread_mutex_unlock(&q->lock);
	return handled;
}
