// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rx_trunc.c - recv(MSG_TRUNC) discards as TCP's does (rx_trunc.h). */
#include "rx_trunc.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "base/libc.h"
#include "rx_retry.h"

ssize_t fl_rx_recv_trunc(int fd, size_t len, int flags)
{
	char scratch[16384];
	size_t done = 0;
	struct fl_retry start;
	ssize_t r;

	fl_rx_retry_init(&start);
	while (done < len) {
		size_t k = len - done < sizeof(scratch) ? len - done : sizeof(scratch);

		do
			r = libc_recv(fd, scratch, k, (flags & ~(MSG_TRUNC | MSG_WAITALL)) |
						      (done ? MSG_DONTWAIT : 0));
		while (r < 0 && errno == EAGAIN && !done && fl_rx_retry_eagain(fd, flags, &start));
		if (r <= 0) {
			if (done && !(flags & MSG_WAITALL))
				break;
			if (r < 0 && errno == EAGAIN && done) {
				/* MSG_WAITALL: wait for the rest as TCP would. */
				if (!fl_rx_retry_eagain(fd, flags & ~MSG_DONTWAIT, &start))
					break;
				struct pollfd p = { .fd = fd, .events = POLLIN };

				libc_poll(&p, 1, 100);
				continue;
			}
			return done ? (ssize_t)done : r;
		}
		done += (size_t)r;
		if (!(flags & MSG_WAITALL) && (size_t)r < k)
			break; /* what was there is gone; TCP returns then too */
	}
	return (ssize_t)done;
}
