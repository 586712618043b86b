// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* broker_loop.c - the broker's event loop. */
#include "broker_loop.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "cli.h"
#include "../common/clock.h"

/* Connections accepted and not yet answered, at most; when full, the oldest
 * is dropped for the newest (its caller stays on TCP). */
#define FL_PENDING_MAX 64
/* A request must arrive within this long after connect; a shim sends it at
 * once, so only a caller that says nothing is ever cut off. */
#define FL_REQUEST_MS 200

struct fl_pending {
	int fd;
	long long deadline_ms;
};

static void fl_drop(struct fl_pending *p, int *n, int i)
{
	close(p[i].fd);
	p[i] = p[--*n];
}

/* Accepts every waiting connection (the listener is non-blocking). */
static void fl_accept_all(int listener, struct fl_pending *p, int *n)
{
	int c, i, oldest;

	while ((c = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		if (*n == FL_PENDING_MAX) {
			for (oldest = 0, i = 1; i < *n; i++)
				if (p[i].deadline_ms < p[oldest].deadline_ms)
					oldest = i;
			fl_drop(p, n, oldest);
		}
		p[*n].fd = c;
		p[*n].deadline_ms = fl_clock_ns(CLOCK_MONOTONIC) / 1000000 + FL_REQUEST_MS;
		(*n)++;
	}
	if (errno == EMFILE || errno == ENFILE) {
		/* Out of fds: drop the oldest so that the next accept can work. */
		if (*n)
			fl_drop(p, n, 0);
		else
			usleep(100000);
	} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		   errno != ECONNABORTED) {
		fl_err("daemon", "accept: %s", strerror(errno));
	}
}

void fl_broker_loop(struct fl_broker *b, int listener, volatile sig_atomic_t *stop)
{
	struct fl_pending p[FL_PENDING_MAX];
	struct pollfd pfd[FL_PENDING_MAX + 1];
	long long now, wait;
	int n = 0, i, k, r;

	while (!*stop) {
		now = fl_clock_ns(CLOCK_MONOTONIC) / 1000000;
		wait = 1000;
		pfd[0] = (struct pollfd){ .fd = listener, .events = POLLIN };
		for (i = 0; i < n; i++) {
			pfd[i + 1] = (struct pollfd){ .fd = p[i].fd, .events = POLLIN };
			if (p[i].deadline_ms - now < wait)
				wait = p[i].deadline_ms - now;
		}
		r = poll(pfd, (nfds_t)n + 1, wait < 0 ? 0 : (int)wait);
		if (r < 0)
			continue; /* EINTR: a signal; *stop says whether to go on */
		/* Answer the ready ones (from the end: fl_drop moves the last
		 * entry into the freed place), then expire the silent ones. */
		for (k = n; k-- > 0;) {
			if (!pfd[k + 1].revents)
				continue;
			fl_broker_serve(b, p[k].fd);
			fl_drop(p, &n, k);
		}
		now = fl_clock_ns(CLOCK_MONOTONIC) / 1000000;
		for (k = n; k-- > 0;)
			if (p[k].deadline_ms <= now)
				fl_drop(p, &n, k);
		if (pfd[0].revents)
			fl_accept_all(listener, p, &n);
	}
	while (n)
		fl_drop(p, &n, n - 1);
}
