// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_oob.c - recv(MSG_OOB) reaches TCP's urgent byte (rx_oob.h). */
#include "rx_oob.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/libc.h"
#include "base/log.h"
#include "rx_inq.h"
#include "socket/rxq.h"
#include "kernel/slot.h"

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
	errno = fl_rx_atmark(fd) ? EAGAIN : EINVAL;
	return -1;
}

ssize_t fl_rx_oob_recv(int fd, uint32_t slot, uint64_t gen, struct fl_rxq *q, struct msghdr *msg,
		       int flags)
{
	struct iovec one, scratch;
	struct msghdr m;
	char dummy;
	bool empty, blinded = false, asked_tcp = false;
	int tries, inl = 0;
	socklen_t olen = sizeof(inl);
	ssize_t r;

	fl_rx_inq_urgent_seen(); /* FIONREAD counts the exact way from now on */
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
		if (fl_rxq_fill_locked(fd, q, "so that recv(MSG_OOB) reaches TCP's urgent byte")) {
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
				if (!fl_rxq_append_locked(q, one.iov_base, 1)) {
					/* Cannot be held: the byte would be lost. */
					fl_log(FL_LOG_ERROR, "fd %d: out of memory holding a byte "
					       "taken while looking for urgent data", fd);
					r = -1;
					errno = ENOMEM;
					break;
				}
			}
			if (tries >= 16 && !blinded) {
				/* The peer keeps redirecting faster than we take:
				 * its bytes go over TCP from now on (and this loop
				 * ends once the redirected queue is empty). */
				fl_slot_blind(slot, gen, "recv(MSG_OOB) raced redirected bytes");
				blinded = true;
			}
			continue;
		}
		if (r == 0) {
			msg->msg_flags = m.msg_flags;
			break; /* TCP's: shut down, urgent byte announced only */
		}
		if (errno == EAGAIN && !asked_tcp && !fl_rx_tcp_queue_empty(fd)) {
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
	 * do (fl_rxq_unforce_locked), so the application never sees it.
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
