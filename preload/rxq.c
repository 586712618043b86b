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
#include "slot.h"

struct fl_rxq {
	pthread_mutex_t lock; /* guards everything below */
	uint64_t gen;         /* the socket: its slot's generation */
	uint32_t slot;        /* and its slot */
	uint8_t *buf;         /* held bytes are buf[off, len) */
	size_t len, off;
	int peek_off;         /* emulated SO_PEEK_OFF, -1: off */
	bool inline_forced;   /* SO_OOBINLINE is on for the shim, not the
			       * application (fl_rxq_recv_oob says why) */
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
	uint32_t ref = slot;

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
		q->slot = ref;
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
		q->inline_forced = false;
		q->slot = ref;
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
static int fl_rxq_fill(int fd, struct fl_rxq *q, const char *why)
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

static void fl_rxq_set_inline(int fd, int on)
{
	int saved = errno;

	libc_setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &on, sizeof(on));
	errno = saved;
}

/* The held bytes are gone (or the socket is being read through the kernel
 * again): SO_OOBINLINE goes back to what the application has. Locked. */
static void fl_rxq_unforce(int fd, struct fl_rxq *q)
{
	if (!q->inline_forced)
		return;
	fl_rxq_set_inline(fd, 0);
	q->inline_forced = false;
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
		/* TCP's peek stops at the mark once it has copied something. */
		if (done && fl_compat_atmark(fd))
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
		if (fl_compat_inq(fd, &inq) || (size_t)inq <= (r > 0 ? (size_t)r : 0) ||
		    fl_rxq_fill(fd, q, "so that a peek reaches TCP's queue"))
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
			/* From here on reads reach the kernel: as TCP reads. */
			fl_rxq_unforce(fd, q);
		}
	}
	pthread_mutex_unlock(&q->lock);
	r = (ssize_t)take;
	/* MSG_WAITALL too stops at the mark once it has bytes (tcp_recvmsg). */
	if (take < len && (!take || ((flags & MSG_WAITALL) && !fl_compat_atmark(fd)))) {
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

/* ------------------------------------------------------------- urgent data */

/* Where TCP would put a one-byte answer of recv(MSG_OOB): the first byte of
 * the caller's buffer, or none (a zero-length read). */
static bool fl_first_byte(const struct msghdr *msg, struct iovec *one)
{
	size_t i;

	for (i = 0; msg->msg_iov && i < msg->msg_iovlen; i++) {
		if (msg->msg_iov[i].iov_len) {
			one->iov_base = msg->msg_iov[i].iov_base;
			one->iov_len = 1;
			return true;
		}
	}
	return false;
}

/*
 * The answer of a recv(MSG_OOB|MSG_DONTWAIT) that found both queues empty:
 * tcp_bpf's own EAGAIN, or TCP's (urgent data announced, not here yet).
 * TCP's own answer with nothing queued is EINVAL (no urgent data: with an
 * empty queue the urgent byte cannot be pending), or EAGAIN when the
 * announced urgent byte is the next one to come (SIOCATMARK says so). An
 * urgent byte announced further ahead is not told apart: EINVAL
 * (docs/semantics.md).
 */
static ssize_t fl_oob_nothing(int fd)
{
	errno = fl_compat_atmark(fd) ? EAGAIN : EINVAL;
	return -1;
}

ssize_t fl_rxq_recv_oob(int fd, struct fl_rxq *q, struct msghdr *msg, int flags)
{
	struct iovec one, scratch;
	struct msghdr m;
	char dummy;
	bool empty, blinded = false, asked_tcp = false;
	int tries, inl = 0;
	socklen_t olen = sizeof(inl);
	ssize_t r;

	pthread_mutex_lock(&q->lock);
	/* SO_OOBINLINE set by the application: TCP refuses at once (and never
	 * looks at its queues); the redirect path would hand out normal bytes. */
	if (!q->inline_forced && !libc_getsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &inl, &olen) &&
	    inl) {
		pthread_mutex_unlock(&q->lock);
		errno = EINVAL;
		return -1;
	}
	empty = !fl_first_byte(msg, &one);
	if (empty) {
		/* TCP takes the byte and reports MSG_TRUNC; tcp_bpf would
		 * return 0 at once: ask for one byte ourselves. */
		scratch.iov_base = &dummy;
		scratch.iov_len = 1;
		one = scratch;
	}
	/* TCP answers a recv(MSG_OOB) from the urgent byte it keeps aside;
	 * the redirect path serves its own queue first whenever it holds
	 * bytes. So those bytes move into q first (the normal stream is then
	 * read from q, in order), and the call reaches tcp_recvmsg. */
	if (q->inline_forced)
		fl_rxq_set_inline(fd, 0); /* TCP refuses MSG_OOB with it on */
	for (tries = 0;; tries++) {
		if (fl_rxq_fill(fd, q, "so that recv(MSG_OOB) reaches TCP's urgent byte")) {
			r = -1;
			errno = ENOMEM;
			break;
		}
		m = *msg;
		m.msg_iov = &one;
		m.msg_iovlen = 1;
		m.msg_flags = 0;
		/* TCP never blocks here; tcp_bpf would wait for a message. */
		r = libc_recvmsg(fd, &m, flags | MSG_DONTWAIT);
		if (r >= 0 && (m.msg_flags & MSG_OOB)) {
			/* TCP's answer (tcp_recv_urg marks it MSG_OOB). */
			if (empty) {
				r = 0;
				m.msg_flags |= MSG_TRUNC;
			}
			msg->msg_flags = m.msg_flags;
			msg->msg_namelen = m.msg_namelen;
			msg->msg_controllen = m.msg_controllen;
			break;
		}
		if (r > 0) {
			/* A redirected message came in between: a normal byte,
			 * the next one of the stream. It is the stream's. */
			if (!(flags & MSG_PEEK)) {
				uint8_t *nb = realloc(q->buf, q->len + 1);

				if (!nb) {
					/* Cannot be held: the byte would be lost. */
					fl_log(FL_LOG_ERROR, "fd %d: out of memory holding a byte "
					       "taken while looking for urgent data", fd);
					r = -1;
					errno = ENOMEM;
					break;
				}
				q->buf = nb;
				memcpy(q->buf + q->len, one.iov_base, 1);
				__atomic_store_n(&q->len, q->len + 1, __ATOMIC_RELEASE);
			}
			if (tries >= 16 && !blinded) {
				/* The peer keeps redirecting faster than we take:
				 * its bytes go over TCP from now on (and this loop
				 * ends once the redirected queue is empty). */
				fl_slot_blind(q->slot, q->gen, "recv(MSG_OOB) raced redirected bytes");
				blinded = true;
			}
			continue;
		}
		if (r == 0) {
			msg->msg_flags = m.msg_flags;
			break; /* TCP's: shut down, urgent byte announced only */
		}
		if (errno == EAGAIN && !asked_tcp && !fl_compat_tcp_queue_empty(fd)) {
			/* TCP's queue holds bytes: either this EAGAIN is TCP's
			 * (urgent byte announced, not here yet), or they came
			 * after tcp_bpf looked. Asked once more, TCP answers. */
			asked_tcp = true;
			continue;
		}
		if (errno == EAGAIN && !asked_tcp)
			r = fl_oob_nothing(fd);
		break;
	}
	/*
	 * IMPORTANT: while q holds bytes the kernel does not see, the kernel's
	 * idea of the urgent mark is wrong: its next byte is the urgent one,
	 * so a socket whose only other bytes are in q would not poll readable
	 * (at the mark TCP asks for one byte more than the urgent one), and a
	 * later urgent byte would make the kernel skip this one, where TCP
	 * (whose reader is still before the mark) keeps it in the stream.
	 * SO_OOBINLINE turns both rules off; the shim's reads never reach the
	 * kernel while q holds bytes, and it is turned off again before they
	 * do (fl_rxq_unforce), so the application never sees it.
	 */
	if (q->len > q->off) {
		fl_rxq_set_inline(fd, 1);
		if (!q->inline_forced)
			fl_debug("fd %d: %zu bytes held: SO_OOBINLINE on for the kernel until "
				 "they are read", fd, q->len - q->off);
		q->inline_forced = true;
	} else {
		q->inline_forced = false;
	}
	pthread_mutex_unlock(&q->lock);
	return r;
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
