// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-common.c - the verification pattern, sockets and exact I/O that every
 * fl-bench workload uses.
 *
 * Verification costs almost nothing: each direction of a connection is a
 * fixed table of random bytes repeated with a period that is not a power of
 * two, so a lost, duplicated or shifted byte breaks a memcmp against it.
 */
#include "fl-common.h"
#include "../common/clock.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>

uint8_t *fl_pat;

double flb_now(void)
{
	return fl_clock_s(CLOCK_MONOTONIC);
}

void flb_die(const char *what)
{
	fprintf(stderr, "fl-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

void flb_pattern_init(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t i;

	fl_pat = malloc(2 * (size_t)PERIOD);
	if (!fl_pat)
		flb_die("malloc");
	for (i = 0; i < PERIOD; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fl_pat[i] = fl_pat[i + PERIOD] = (uint8_t)x;
	}
}

void flb_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int flb_listen(const struct fl_opts *o, struct sockaddr_storage *addr, socklen_t *len)
{
	int l;

	memset(addr, 0, sizeof(*addr));
	if (o->is_unix) {
		struct sockaddr_un *u = (struct sockaddr_un *)addr;

		/* Abstract: nothing to unlink, nothing left behind on a crash. */
		u->sun_family = AF_UNIX;
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				   (size_t)snprintf(u->sun_path + 1, sizeof(u->sun_path) - 1,
						    "fl-bench-%d", (int)getpid()));
		l = socket(AF_UNIX, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)addr, *len) || listen(l, 1024))
			flb_die("listen");
		return l;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)addr;

	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*len = sizeof(*a);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)a, *len) || listen(l, 1024) ||
	    getsockname(l, (struct sockaddr *)a, len))
		flb_die("listen");
	return l;
}

void flb_accepted(const struct fl_opts *o, int fd)
{
	int one = 1;

	if (o->nodelay && !o->is_unix)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int flb_connect(const struct fl_opts *o, const struct sockaddr_storage *addr, socklen_t len)
{
	int c = socket(o->is_unix ? AF_UNIX : AF_INET, SOCK_STREAM, 0);

	if (c < 0 || connect(c, (const struct sockaddr *)addr, len))
		flb_die("connect");
	flb_accepted(o, c);
	return c;
}

void flb_pair(const struct fl_opts *o, int *c, int *s)
{
	struct sockaddr_storage a;
	socklen_t len;
	int l, sv[2];

	if (o->is_unix) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			flb_die("socketpair");
		*c = sv[0];
		*s = sv[1];
		return;
	}
	l = flb_listen(o, &a, &len);
	*c = flb_connect(o, &a, len);
	*s = accept(l, NULL, NULL);
	if (*s < 0)
		flb_die("accept");
	flb_accepted(o, *s);
	close(l);
}

void flb_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			flb_die("write");
		p += w;
		n -= (size_t)w;
	}
}

void flb_check(const uint8_t *buf, size_t n, uint64_t pos)
{
	if (memcmp(buf, fl_pat + pos % PERIOD, n)) {
		fprintf(stderr, "fl-bench: wrong bytes at offset %llu\n", (unsigned long long)pos);
		exit(1);
	}
}

void flb_read_check(int fd, uint8_t *buf, size_t n, uint64_t *pos)
{
	while (n) {
		ssize_t r = read(fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			flb_die(r ? "read" : "read: early EOF");
		flb_check(buf, (size_t)r, *pos);
		*pos += (uint64_t)r;
		n -= (size_t)r;
	}
}
