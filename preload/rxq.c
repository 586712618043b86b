// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rxq.c - bytes taken out of an enrolled socket early, and SO_PEEK_OFF. */
#include "rxq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "compat.h"
#include "fastlocal.h"
#include "libc.h"
#include "log.h"

struct fl_rxq {
	pthread_mutex_t lock; /* guards everything below */
	uint64_t gen;         /* the socket: its slot's generation */
	uint8_t *buf;         /* held bytes are buf[off, len) */
	size_t len, off;
	int peek_off;         /* emulated SO_PEEK_OFF, -1: off */
};

/*
 * Owned by this file: one state per slot, made on first need and reused
 * (a new generation resets it), never freed, so a pointer stays valid.
 * Published with a CAS; the state's own lock guards its contents.
 */
static struct fl_rxq *fl_rxqs[FL_SLOTS_MAX];

struct fl_rxq *fl_rxq_get(uint32_t slot, uint64_t gen, bool create)
{
	struct fl_rxq *q, *expect = NULL;

	/* By index in the slot's domain: a process only ever has slots of
	 * its own one domain (slot.h), so the index alone is unique. */
	slot = FL_SLOT_IDX(slot);
	q = __atomic_load_n(&fl_rxqs[slot], __ATOMIC_ACQUIRE);
	if (!q && create) {
		q = calloc(1, sizeof(*q));
		if (!q)
			return NULL;
		pthread_mutex_init(&q->lock, NULL);
		q->peek_off = -1;
		q->gen = gen;
		if (!__atomic_compare_exchange_n(&fl_rxqs[slot], &expect, q, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			free(q);
			q = expect;
		}
	}
	if (!q)
		return NULL;
	if (__atomic_load_n(&q->gen, __ATOMIC_ACQUIRE) != gen) {
		if (!create)
			return NULL;
		/* The slot belongs to a new socket: start afresh. */
		pthread_mutex_lock(&q->lock);
		free(q->buf);
		q->buf = NULL;
		q->len = q->off = 0;
		q->peek_off = -1;
		__atomic_store_n(&q->gen, gen, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&q->lock);
	}
	return q;
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

/* Moves the redirected queue's bytes into q (they are older than anything
 * in TCP's queue). Called with q->lock held. */
static int fl_rxq_fill(int fd, struct fl_rxq *q)
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
		fl_debug("fd %d: %zd redirected bytes held so that a peek reaches TCP's queue",
			 fd, r);
	}
	return r < 0 ? -1 : 0;
}

/* Peeks len bytes from offset at of the unread stream. Called locked. */
static ssize_t fl_rxq_peek_at(int fd, struct fl_rxq *q, uint8_t *buf, size_t at, size_t len)
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
		if (fl_compat_inq(fd, &inq) || (size_t)inq <= (r > 0 ? (size_t)r : 0) ||
		    fl_rxq_fill(fd, q))
			break;
	}
	if (!done && r < 0)
		return -1;
	return (ssize_t)done;
}

ssize_t fl_rxq_peek(int fd, struct fl_rxq *q, void *buf, size_t len, int flags)
{
	ssize_t n;
	size_t at;

	(void)flags;
	pthread_mutex_lock(&q->lock);
	at = q->peek_off >= 0 ? (size_t)q->peek_off : 0;
	n = fl_rxq_peek_at(fd, q, buf, at, len);
	if (n > 0 && q->peek_off >= 0)
		q->peek_off += (int)n;
	pthread_mutex_unlock(&q->lock);
	return n;
}

ssize_t fl_rxq_recv(int fd, struct fl_rxq *q, void *buf, size_t len, int flags)
{
	size_t held, take;
	ssize_t r;

	if (flags & MSG_PEEK) {
		/* A blocking peek waits for a first byte, as TCP's does. */
		if (!(flags & MSG_DONTWAIT) && !fl_rxq_held(q)) {
			r = libc_recv(fd, buf, 1, MSG_PEEK | (flags & MSG_DONTWAIT));
			if (r <= 0)
				return r;
		}
		return fl_rxq_peek(fd, q, buf, len, flags);
	}
	pthread_mutex_lock(&q->lock);
	held = q->len - q->off;
	take = len < held ? len : held;
	if (take) {
		memcpy(buf, q->buf + q->off, take);
		q->off += take;
		if (q->off == q->len) {
			free(q->buf);
			q->buf = NULL;
			q->off = 0;
			__atomic_store_n(&q->len, 0, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&q->lock);
	r = (ssize_t)take;
	if (take < len && (!take || (flags & MSG_WAITALL))) {
		/* Nothing held (or MSG_WAITALL): the kernel for the rest. */
		ssize_t k = (flags & MSG_WAITALL) && fl_compat_on() ?
				    fl_compat_recv_waitall(fd, (char *)buf + take, len - take, flags,
							   NULL, NULL) :
				    libc_recv(fd, (char *)buf + take, len - take,
					      flags | (take ? MSG_DONTWAIT : 0));

		if (k > 0)
			r += k;
		else if (!take)
			r = k;
	}
	if (r > 0)
		fl_rxq_read_done(q, (size_t)r);
	return r;
}

/* Called with q->lock held: n bytes were read, the peek offset moves back. */
static void fl_rxq_read_done_locked(struct fl_rxq *q, size_t n)
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
			q->off += (size_t)took;
			if (q->off == q->len) {
				free(q->buf);
				q->buf = NULL;
				q->off = 0;
				__atomic_store_n(&q->len, 0, __ATOMIC_RELEASE);
			}
			fl_rxq_read_done_locked(q, (size_t)took);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return took;
}

void fl_rxq_set_peek_off(struct fl_rxq *q, int v)
{
	pthread_mutex_lock(&q->lock);
	q->peek_off = v < 0 ? -1 : v;
	pthread_mutex_unlock(&q->lock);
}

int fl_rxq_peek_off(struct fl_rxq *q)
{
	int v;

	pthread_mutex_lock(&q->lock);
	v = q->peek_off;
	pthread_mutex_unlock(&q->lock);
	return v;
}
