// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-rr.c - "fl-bench rr": request/response rate over N concurrent
 * connections, as a typical event-driven server and client would do it.
 *
 * One client thread keeps one request of --size bytes outstanding on each of
 * --conns connections; one server thread answers each whole request with a
 * response of the same size. Both wait in epoll (level-triggered) and read
 * with MSG_DONTWAIT, so 64 connections cost two threads, not 128, on a
 * 2-core machine. Each direction of each connection is verified as its own
 * stream. The rate is whole transactions a second over the client's run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "fl-common.h"

struct fl_rr_conn {
	int fd;
	size_t got;       /* bytes of the current message received */
	uint64_t rx, tx;  /* stream offsets each way */
	int done;         /* client: stopped asking */
};

struct fl_rr_server {
	const struct fl_opts *o;
	int l;
	long msgs;
};

/*
 * Reads what is there of the current message on c into buf. Returns 1 when
 * the message is whole, 0 when more is to come, -1 on EOF between messages.
 */
static int fl_rr_read(struct fl_rr_conn *c, uint8_t *buf, size_t size)
{
	ssize_t r = recv(c->fd, buf, size - c->got, MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r < 0)
		flb_die("recv");
	if (r == 0) {
		if (c->got) {
			fprintf(stderr, "fl-bench: EOF inside a message\n");
			exit(1);
		}
		return -1;
	}
	flb_check(buf, (size_t)r, c->rx);
	c->rx += (uint64_t)r;
	c->got += (size_t)r;
	if (c->got < size)
		return 0;
	c->got = 0;
	return 1;
}

static void fl_rr_send(struct fl_rr_conn *c, size_t size)
{
	flb_write_all(c->fd, fl_pat + c->tx % PERIOD, size);
	c->tx += size;
}

static void fl_epoll_add(int ep, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		flb_die("epoll_ctl");
}

/* Accepts --conns connections and echoes whole messages until all close. */
static void *fl_rr_serve(void *arg)
{
	struct fl_rr_server *sv = arg;
	const struct fl_opts *o = sv->o;
	struct fl_rr_conn *conns = calloc((size_t)o->conns, sizeof(*conns));
	uint8_t *buf = malloc(o->size);
	struct epoll_event ev[64];
	long accepted = 0, open = 0;
	int ep = epoll_create1(0), i, n;

	if (ep < 0 || !conns || !buf)
		flb_die("server setup");
	fl_epoll_add(ep, sv->l, NULL);
	while (accepted < o->conns || open > 0) {
		n = epoll_wait(ep, ev, 64, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			flb_die("epoll_wait");
		for (i = 0; i < n; i++) {
			struct fl_rr_conn *c = ev[i].data.ptr;
			int r;

			if (!c) {
				int fd = accept(sv->l, NULL, NULL);

				if (fd < 0)
					flb_die("accept");
				flb_accepted(o, fd);
				c = &conns[accepted++];
				c->fd = fd;
				open++;
				fl_epoll_add(ep, fd, c);
				if (accepted == o->conns)
					epoll_ctl(ep, EPOLL_CTL_DEL, sv->l, NULL);
				continue;
			}
			r = fl_rr_read(c, buf, o->size);
			if (r > 0) {
				fl_rr_send(c, o->size);
				sv->msgs++;
			} else if (r < 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				close(c->fd);
				open--;
			}
		}
	}
	close(ep);
	free(buf);
	free(conns);
	return NULL;
}

int fl_rr(const struct fl_opts *o)
{
	struct fl_rr_server sv = { .o = o };
	struct fl_rr_conn *conns = calloc((size_t)o->conns, sizeof(*conns));
	uint8_t *buf = malloc(o->size);
	struct sockaddr_storage a;
	struct epoll_event ev[64];
	long i, active = o->conns, txns = 0;
	double t0, secs;
	socklen_t len;
	pthread_t th;
	int ep = epoll_create1(0), n, k;

	if (ep < 0 || !conns || !buf)
		flb_die("client setup");
	sv.l = flb_listen(o, &a, &len);
	pthread_create(&th, NULL, fl_rr_serve, &sv);
	for (i = 0; i < o->conns; i++) {
		conns[i].fd = flb_connect(o, &a, len);
		fl_epoll_add(ep, conns[i].fd, &conns[i]);
	}
	t0 = flb_now();
	for (i = 0; i < o->conns; i++)
		fl_rr_send(&conns[i], o->size);
	while (active > 0) {
		n = epoll_wait(ep, ev, 64, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			flb_die("epoll_wait");
		for (k = 0; k < n; k++) {
			struct fl_rr_conn *c = ev[k].data.ptr;
			int r = fl_rr_read(c, buf, o->size);

			if (r < 0) {
				fprintf(stderr, "fl-bench: server closed early\n");
				return 1;
			}
			if (r == 0)
				continue;
			txns++;
			if (flb_now() - t0 < o->seconds) {
				fl_rr_send(c, o->size);
				continue;
			}
			/* Time is up: this connection asks no more and says so. */
			c->done = 1;
			active--;
			epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
			shutdown(c->fd, SHUT_WR);
		}
	}
	secs = flb_now() - t0;
	pthread_join(th, NULL);
	if (sv.msgs != txns) {
		fprintf(stderr, "fl-bench: server answered %ld, client counted %ld\n", sv.msgs, txns);
		return 1;
	}
	for (i = 0; i < o->conns; i++)
		close(conns[i].fd);
	close(sv.l);
	printf("conns=%ld transactions=%ld seconds=%.3f tps=%.1f\n", o->conns, txns, secs,
	       (double)txns / secs);
	return 0;
}
