// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-churn.c - "fl-bench churn": connections a second when each one carries
 * a single request/response: connect, write --size bytes, read --size bytes
 * back, close. This is where a per-connection cost (fastlocal's enrollment
 * at connect and accept, its bookkeeping at close) shows, since no data
 * volume hides it.
 *
 * The server thread accepts, reads and checks the request, answers, and
 * closes after the client's close (so TIME_WAIT falls on the client's side,
 * as for a typical client, and loopback reuses those ports: tcp_tw_reuse).
 * The client stops the server with one last connection that sends nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fl-common.h"

struct fl_churn_server {
	const struct fl_opts *o;
	int l;
	long served;
};

static void *fl_churn_serve(void *arg)
{
	struct fl_churn_server *sv = arg;
	uint8_t *buf = malloc(sv->o->size);

	for (;;) {
		uint64_t pos = 0;
		int fd = accept(sv->l, NULL, NULL);
		ssize_t r;

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			flb_die("accept");
		flb_accepted(sv->o, fd);
		r = read(fd, buf, sv->o->size);
		if (r < 0)
			flb_die("read");
		if (r == 0) { /* the client's stop signal */
			close(fd);
			break;
		}
		flb_check(buf, (size_t)r, pos);
		pos += (uint64_t)r;
		flb_read_check(fd, buf, sv->o->size - (size_t)r, &pos);
		flb_write_all(fd, fl_pat, sv->o->size);
		r = read(fd, buf, 1);
		if (r != 0) {
			fprintf(stderr, "fl-bench: %s after the request\n", r > 0 ? "extra bytes" : "read error");
			exit(1);
		}
		close(fd);
		sv->served++;
	}
	free(buf);
	return NULL;
}

int fl_churn(const struct fl_opts *o)
{
	struct fl_churn_server sv = { .o = o };
	uint8_t *buf = malloc(o->size);
	struct sockaddr_storage a;
	long n = 0;
	double t0, secs;
	socklen_t len;
	pthread_t th;

	sv.l = flb_listen(o, &a, &len);
	pthread_create(&th, NULL, fl_churn_serve, &sv);
	t0 = flb_now();
	do {
		uint64_t pos = 0;
		int c = flb_connect(o, &a, len);

		flb_write_all(c, fl_pat, o->size);
		flb_read_check(c, buf, o->size, &pos);
		close(c);
		n++;
	} while (flb_now() - t0 < o->seconds);
	secs = flb_now() - t0;
	close(flb_connect(o, &a, len));
	pthread_join(th, NULL);
	close(sv.l);
	if (sv.served != n) {
		fprintf(stderr, "fl-bench: server served %ld of %ld connections\n", sv.served, n);
		return 1;
	}
	printf("conns=%ld seconds=%.3f cps=%.1f\n", n, secs, (double)n / secs);
	free(buf);
	return 0;
}
