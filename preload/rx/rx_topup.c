// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_topup.c - a short read goes on into TCP's queue (rx_topup.h). */
#include "rx_topup.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/libc.h"
#include "kernel/slot.h"
#include "rx_inq.h"

/* iovecs of the rest of a readv/recvmsg buffer that one top-up fills at
 * most (a stack copy); a longer rest is filled that far. */
#define FL_TOPUP_IOV 64

static size_t fl_iov_total(const struct iovec *iov, size_t cnt)
{
	size_t i, t = 0;

	for (i = 0; i < cnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* The rest of iov past its first skip bytes, into out (at most
 * FL_TOPUP_IOV); returns how many iovecs. */
static int fl_iov_rest(const struct iovec *iov, size_t cnt, size_t skip, struct iovec *out)
{
	size_t i;
	int k = 0;

	for (i = 0; i < cnt && k < FL_TOPUP_IOV; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		out[k].iov_base = (char *)iov[i].iov_base + skip;
		out[k].iov_len = iov[i].iov_len - skip;
		skip = 0;
		k++;
	}
	return k;
}

ssize_t fl_rx_top_up(int fd, uint32_t slot, const struct iovec *iov, size_t cnt, ssize_t n)
{
	struct iovec rest[FL_TOPUP_IOV];
	struct msghdr m = { 0 };
	ssize_t more;
	int saved;

	if (n <= 0 || (size_t)n >= fl_iov_total(iov, cnt))
		return n;
	/* Free in the common case, from the slots (slot.h says when). */
	if (fl_slot_tcp_behind(slot, (uint64_t)n) == FL_BEHIND_NO)
		return n;
	saved = errno;
	/*
	 * IMPORTANT: only when TCP's queue holds something. A read of an
	 * empty queue with an error pending takes the error (sock_error
	 * clears sk_err): TCP's own read, having copied bytes, leaves it for
	 * the next call, and so must this one. A queue that holds only the
	 * FIN gives 0 here and again on the next call, as TCP would. Nor at
	 * TCP's urgent mark: TCP's read stops there once it has bytes, but a
	 * new call would start at the mark and read across it (oob-urgent-*
	 * scenarios).
	 */
	if (!fl_rx_tcp_queue_empty(fd) && !fl_rx_atmark(fd)) {
		m.msg_iov = rest;
		m.msg_iovlen = (size_t)fl_iov_rest(iov, cnt, (size_t)n, rest);
		more = libc_recvmsg(fd, &m, MSG_DONTWAIT);
		if (more > 0)
			n += more;
	}
	errno = saved;
	return n;
}
