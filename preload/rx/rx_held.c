// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_held.c - reads served from the held bytes first (rx_held.h). */
#include "rx_held.h"

#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include "base/config.h"
#include "base/libc.h"
#include "rx_inq.h"
#include "rx_peek.h"
#include "rx_waitall.h"
#include "socket/rxq.h"

ssize_t fl_rx_held_recv(int fd, struct fl_rxq *q, void *buf, size_t len, int flags)
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
		return fl_rx_peek(fd, q, buf, len);
	}
	pthread_mutex_lock(&q->lock);
	held = q->len - q->off;
	take = len < held ? len : held;
	if (take) {
		memcpy(buf, q->buf + q->off, take);
		if (fl_rxq_drop_locked(q, take))
			/* From here on reads reach the kernel: as TCP reads. */
			fl_rxq_unforce_locked(fd, q);
	}
	pthread_mutex_unlock(&q->lock);
	r = (ssize_t)take;
	/* MSG_WAITALL too stops at the mark once it has bytes (tcp_recvmsg). */
	if (take < len && (!take || ((flags & MSG_WAITALL) && !fl_rx_atmark(fd)))) {
		/* Nothing held (or MSG_WAITALL): the kernel for the rest. */
		ssize_t k = (flags & MSG_WAITALL) && fl_compat_on() ?
				    fl_rx_recv_waitall(fd, (char *)buf + take, len - take, flags,
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
