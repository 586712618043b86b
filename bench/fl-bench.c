// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-bench - throughput, round-trip time, request rate and connection churn
 * over loopback, every byte verified. A plain socket program: whether it
 * runs over TCP, raw redirect or fastlocal is decided by how bench/run.sh
 * starts it.
 *
 *   fl-bench stream   --size S [--seconds T] [--split] [--rbuf B]
 *   fl-bench pingpong --size S [--iters N] [--seconds T] [--poll]
 *   fl-bench rr       --size S --conns N [--seconds T]     (fl-rr.c)
 *   fl-bench churn    --size S [--seconds T]               (fl-churn.c)
 *
 * Every mode takes --unix (AF_UNIX instead of TCP) and --nodelay, and prints
 * one line of key=value pairs. A wrong, lost or extra byte exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fl-common.h"

/* ------------------------------------------------------------- stream */

struct fl_stream {
	int fd;
	const struct fl_opts *o;
	uint64_t bytes;
};

static void *fl_stream_writer(void *arg)
{
	struct fl_stream *w = arg;
	uint64_t pos = 0;
	double t0 = flb_now();

	if (w->o->split)
		flb_pin(0);
	for (;;) {
		flb_write_all(w->fd, fl_pat + pos % PERIOD, w->o->size);
		pos += w->o->size;
		/* The clock is read once a MiB, not once a write. */
		if ((pos & ((1 << 20) - 1)) < w->o->size && flb_now() - t0 >= w->o->seconds)
			break;
	}
	shutdown(w->fd, SHUT_WR);
	w->bytes = pos;
	return NULL;
}

int fl_stream(const struct fl_opts *o)
{
	struct fl_stream w = { .o = o };
	size_t cap = o->rbuf ? o->rbuf : 64 << 10; /* what applications typically read into */
	uint8_t *buf = malloc(cap);
	uint64_t pos = 0;
	pthread_t th;
	double t0, secs;
	int c, s;

	flb_pair(o, &c, &s);
	w.fd = c;
	if (o->split)
		flb_pin(1);
	t0 = flb_now();
	pthread_create(&th, NULL, fl_stream_writer, &w);
	for (;;) {
		ssize_t r = read(s, buf, cap);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			flb_die("read");
		if (r == 0)
			break;
		flb_check(buf, (size_t)r, pos);
		pos += (uint64_t)r;
	}
	pthread_join(th, NULL);
	secs = flb_now() - t0;
	if (pos != w.bytes) {
		fprintf(stderr, "fl-bench: read %llu of %llu bytes\n", (unsigned long long)pos,
			(unsigned long long)w.bytes);
		return 1;
	}
	printf("bytes=%llu seconds=%.3f mbps=%.1f\n", (unsigned long long)pos, secs,
	       (double)pos / secs / 1e6);
	return 0;
}

/* ------------------------------------------------------------- ping-pong */

struct fl_echo {
	int fd;
	const struct fl_opts *o;
	long msgs;
};

/* --poll: waits in poll() until fd is readable, as a poll loop does. */
static void fl_wait_readable(const struct fl_opts *o, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (o->poll && poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			flb_die("poll");
}

/* Echoes whole messages until the client shuts its side down. */
static void *fl_echo_server(void *arg)
{
	struct fl_echo *e = arg;
	uint8_t *buf = malloc(e->o->size);
	uint64_t pos = 0;

	for (;;) {
		uint64_t at = pos;
		ssize_t r;

		fl_wait_readable(e->o, e->fd);
		r = read(e->fd, buf, e->o->size); /* EOF is only legal here, between messages */

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			flb_die("read");
		if (r == 0)
			break;
		flb_check(buf, (size_t)r, pos);
		pos += (uint64_t)r;
		flb_read_check(e->fd, buf + r, e->o->size - (size_t)r, &pos);
		flb_write_all(e->fd, fl_pat + at % PERIOD, e->o->size);
		e->msgs++;
	}
	free(buf);
	return NULL;
}

static int fl_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int fl_pingpong(const struct fl_opts *o)
{
	struct fl_echo e = { .o = o };
	uint8_t *buf = malloc(o->size);
	double *rtt = malloc(sizeof(double) * (size_t)o->iters), start, t0, sum = 0;
	uint64_t out = 0, in = 0;
	pthread_t th;
	long i, n;
	int c, s;

	flb_pair(o, &c, &s);
	e.fd = s;
	pthread_create(&th, NULL, fl_echo_server, &e);
	start = flb_now();
	for (i = 0; i < o->iters; i++) {
		t0 = flb_now();
		flb_write_all(c, fl_pat + out % PERIOD, o->size);
		out += o->size;
		fl_wait_readable(o, c);
		flb_read_check(c, buf, o->size, &in);
		rtt[i] = (flb_now() - t0) * 1e6;
		sum += rtt[i];
		if (o->seconds > 0 && flb_now() - start >= o->seconds) { /* the time cap */
			i++;
			break;
		}
	}
	n = i;
	shutdown(c, SHUT_WR);
	pthread_join(th, NULL);
	if (e.msgs != n) {
		fprintf(stderr, "fl-bench: echoed %ld of %ld messages\n", e.msgs, n);
		return 1;
	}
	qsort(rtt, (size_t)n, sizeof(double), fl_cmp_double);
	printf("iters=%ld mean_us=%.2f p50_us=%.2f p99_us=%.2f p999_us=%.2f\n", n,
	       sum / (double)n, rtt[n / 2], rtt[n * 99 / 100], rtt[n * 999 / 1000]);
	return 0;
}

/* ------------------------------------------------------------- main */

static const char fl_usage[] =
	"usage: fl-bench stream|pingpong|rr|churn --size S [--seconds T] [--iters N] [--conns N]\n"
	"                [--unix] [--nodelay] [--split] [--rbuf B] [--poll]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "iters", required_argument, NULL, 'n' },
		{ "conns", required_argument, NULL, 'c' },
		{ "unix", no_argument, NULL, 'u' },
		{ "nodelay", no_argument, NULL, 'd' },
		{ "split", no_argument, NULL, 'S' },
		{ "rbuf", required_argument, NULL, 'r' },
		{ "poll", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const struct {
		const char *name;
		int (*fn)(const struct fl_opts *o);
	} modes[] = {
		{ "stream", fl_stream }, { "pingpong", fl_pingpong },
		{ "rr", fl_rr }, { "churn", fl_churn },
	};
	/* seconds < 0: not given; stream, rr and churn then run 1 s, and
	 * ping-pong runs its --iters without a time cap. */
	struct fl_opts o = { .size = 64, .seconds = -1, .iters = 20000, .conns = 1 };
	size_t m;
	int ch;

	for (m = 0; argc >= 2 && m < sizeof(modes) / sizeof(modes[0]); m++)
		if (!strcmp(argv[1], modes[m].name))
			break;
	if (argc < 2 || m == sizeof(modes) / sizeof(modes[0])) {
		fputs(fl_usage, stderr);
		return 2;
	}
	optind = 2;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 's': o.size = strtoul(optarg, NULL, 10); break;
		case 't': o.seconds = atof(optarg); break;
		case 'n': o.iters = atol(optarg); break;
		case 'c': o.conns = atol(optarg); break;
		case 'u': o.is_unix = 1; break;
		case 'd': o.nodelay = 1; break;
		case 'S': o.split = 1; break;
		case 'r': o.rbuf = strtoul(optarg, NULL, 10); break;
		case 'p': o.poll = 1; break;
		case 'h': fputs(fl_usage, stdout); return 0;
		default: return 2;
		}
	}
	if (!o.size || o.size > PERIOD || o.iters < 1 || o.conns < 1 || o.conns > 4096) {
		fprintf(stderr, "fl-bench: --size must be 1..%d, --iters positive, --conns 1..4096\n",
			PERIOD);
		return 2;
	}
	if (o.seconds < 0 && modes[m].fn != fl_pingpong)
		o.seconds = 1.0;
	flb_pattern_init();
	return modes[m].fn(&o);
}
