// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-bench - throughput and round-trip time over one loopback connection,
 * every byte verified. A plain socket program: whether it runs over TCP,
 * raw redirect or fastlocal is decided by how bench/run.sh starts it.
 *
 *   fl-bench stream   --size S [--seconds T] [--unix] [--nodelay]
 *   fl-bench pingpong --size S [--iters N]   [--unix] [--nodelay]
 *
 * Verification costs almost nothing: the stream is a fixed table of random
 * bytes repeated with a period that is not a power of two, so a lost,
 * duplicated or shifted byte breaks a memcmp against the table.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#define PERIOD ((1 << 20) + 7) /* bytes before the pattern repeats */

static uint8_t *fl_pat; /* 2 * PERIOD: any slice up to PERIOD is contiguous */

struct fl_opts {
	int pingpong, is_unix, nodelay, split; /* split: writer on CPU 0, reader on CPU 1 */
	size_t size, rbuf;
	double seconds;
	long iters;
};

static double fl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fl_die(const char *what)
{
	fprintf(stderr, "fl-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fl_pattern_init(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t i;

	fl_pat = malloc(2 * (size_t)PERIOD);
	if (!fl_pat)
		fl_die("malloc");
	for (i = 0; i < PERIOD; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fl_pat[i] = fl_pat[i + PERIOD] = (uint8_t)x;
	}
}

/* A connected pair: client c, server s. */
static void fl_pair(const struct fl_opts *o, int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l, one = 1, sv[2];

	if (o->is_unix) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			fl_die("socketpair");
		*c = sv[0];
		*s = sv[1];
		return;
	}
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, len) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		fl_die("listen");
	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&a, len))
		fl_die("connect");
	*s = accept(l, NULL, NULL);
	if (*s < 0)
		fl_die("accept");
	close(l);
	if (o->nodelay) {
		setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
}

static void fl_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			fl_die("write");
		p += w;
		n -= (size_t)w;
	}
}

/* Reads exactly n bytes at stream offset *pos and checks them. */
static void fl_read_check(int fd, uint8_t *buf, size_t n, uint64_t *pos)
{
	while (n) {
		ssize_t r = read(fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			fl_die(r ? "read" : "read: early EOF");
		if (memcmp(buf, fl_pat + *pos % PERIOD, (size_t)r)) {
			fprintf(stderr, "fl-bench: wrong bytes at offset %llu\n",
				(unsigned long long)*pos);
			exit(1);
		}
		*pos += (uint64_t)r;
		n -= (size_t)r;
	}
}

/* ------------------------------------------------------------- stream */

struct fl_stream {
	int fd;
	const struct fl_opts *o;
	volatile int stop;
	uint64_t bytes;
	double secs;
};

static void fl_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *fl_stream_writer(void *arg)
{
	struct fl_stream *w = arg;
	uint64_t pos = 0;
	double t0 = fl_now();

	if (w->o->split)
		fl_pin(0);
	while (!w->stop) {
		fl_write_all(w->fd, fl_pat + pos % PERIOD, w->o->size);
		pos += w->o->size;
		if ((pos & ((1 << 20) - 1)) < w->o->size && fl_now() - t0 >= w->o->seconds)
			break;
	}
	shutdown(w->fd, SHUT_WR);
	w->bytes = pos;
	return NULL;
}

static int fl_stream(const struct fl_opts *o)
{
	struct fl_stream w = { .o = o };
	size_t cap = o->rbuf ? o->rbuf : 64 << 10; /* what applications typically read into */
	uint8_t *buf = malloc(cap);
	uint64_t pos = 0;
	pthread_t th;
	double t0;
	int c, s;

	fl_pair(o, &c, &s);
	w.fd = c;
	if (o->split)
		fl_pin(1);
	t0 = fl_now();
	pthread_create(&th, NULL, fl_stream_writer, &w);
	for (;;) {
		ssize_t r = read(s, buf, cap);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fl_die("read");
		if (r == 0)
			break;
		if (memcmp(buf, fl_pat + pos % PERIOD, (size_t)r)) {
			fprintf(stderr, "fl-bench: wrong bytes at offset %llu\n", (unsigned long long)pos);
			return 1;
		}
		pos += (uint64_t)r;
	}
	pthread_join(th, NULL);
	w.secs = fl_now() - t0;
	if (pos != w.bytes) {
		fprintf(stderr, "fl-bench: read %llu of %llu bytes\n", (unsigned long long)pos,
			(unsigned long long)w.bytes);
		return 1;
	}
	printf("bytes=%llu seconds=%.3f mbps=%.1f\n", (unsigned long long)pos, w.secs,
	       (double)pos / w.secs / 1e6);
	return 0;
}

/* ------------------------------------------------------------- ping-pong */

struct fl_echo {
	int fd;
	const struct fl_opts *o;
};

static void *fl_echo_server(void *arg)
{
	struct fl_echo *e = arg;
	uint8_t *buf = malloc(e->o->size);
	uint64_t pos = 0;
	long i;

	for (i = 0; i < e->o->iters; i++) {
		uint64_t at = pos;

		fl_read_check(e->fd, buf, e->o->size, &pos);
		fl_write_all(e->fd, fl_pat + at % PERIOD, e->o->size);
	}
	free(buf);
	return NULL;
}

static int fl_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int fl_pingpong(const struct fl_opts *o)
{
	struct fl_echo e = { .o = o };
	uint8_t *buf = malloc(o->size);
	double *rtt = malloc(sizeof(double) * (size_t)o->iters), t0, sum = 0;
	uint64_t out = 0, in = 0;
	pthread_t th;
	long i;
	int c, s;

	fl_pair(o, &c, &s);
	e.fd = s;
	pthread_create(&th, NULL, fl_echo_server, &e);
	for (i = 0; i < o->iters; i++) {
		t0 = fl_now();
		fl_write_all(c, fl_pat + out % PERIOD, o->size);
		out += o->size;
		fl_read_check(c, buf, o->size, &in);
		rtt[i] = (fl_now() - t0) * 1e6;
		sum += rtt[i];
	}
	pthread_join(th, NULL);
	qsort(rtt, (size_t)o->iters, sizeof(double), fl_cmp_double);
	printf("iters=%ld mean_us=%.2f p50_us=%.2f p99_us=%.2f p999_us=%.2f\n", o->iters,
	       sum / (double)o->iters, rtt[o->iters / 2], rtt[o->iters * 99 / 100],
	       rtt[o->iters * 999 / 1000]);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "iters", required_argument, NULL, 'n' },
		{ "unix", no_argument, NULL, 'u' },
		{ "nodelay", no_argument, NULL, 'd' },
		{ "split", no_argument, NULL, 'S' },
		{ "rbuf", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct fl_opts o = { .size = 64, .seconds = 1.0, .iters = 20000 };
	int ch;

	if (argc < 2 || (strcmp(argv[1], "stream") && strcmp(argv[1], "pingpong"))) {
		fprintf(stderr, "usage: fl-bench stream|pingpong --size S [--seconds T] [--iters N] "
			"[--unix] [--nodelay]\n");
		return 2;
	}
	o.pingpong = !strcmp(argv[1], "pingpong");
	optind = 2;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 's': o.size = strtoul(optarg, NULL, 10); break;
		case 't': o.seconds = atof(optarg); break;
		case 'n': o.iters = atol(optarg); break;
		case 'u': o.is_unix = 1; break;
		case 'd': o.nodelay = 1; break;
		case 'S': o.split = 1; break;
		case 'r': o.rbuf = strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (!o.size || o.size > PERIOD || o.iters < 1) {
		fprintf(stderr, "fl-bench: --size must be 1..%d and --iters positive\n", PERIOD);
		return 2;
	}
	fl_pattern_init();
	return o.pingpong ? fl_pingpong(&o) : fl_stream(&o);
}
