// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-stream - verified loopback streams between a client and a server that
 * live in this process. A plain socket program: it knows nothing about
 * fastlocal, so running it under "fastlocal run" (or not) is what decides
 * whether it is accelerated. Used by "make demo" and by the tests.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fltest.h"

static const char fl_stream_help[] =
	"Usage: fl-stream [OPTIONS]\n"
	"\n"
	"Streams --bytes (default 256M) in writes of --size bytes (default 64K) from\n"
	"a client to a server over TCP in this process, verifies every byte read, and\n"
	"prints: bytes=N seconds=S mbps=M\n"
	"\n"
	"  --bytes N[K|M|G]  bytes per direction and connection\n"
	"  --size N[K|M]     bytes per write()\n"
	"  --both            stream in both directions at once\n"
	"  --conns N         N connections at once (default 1)\n"
	"  --family 4|6      IPv4 (default) or IPv6\n"
	"  --addr ADDR       listen and connect here (default loopback)\n"
	"  --port P          listening port (default any)\n"
	"  --cport P         bind the clients to ports P, P+1, ... (default any)\n"
	"  --seed N          pattern seed, so that parallel runs differ\n";

static unsigned long long fl_parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; end++; break;
	default: break;
	}
	return *end ? 0 : v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "both", no_argument, NULL, 'B' },
		{ "conns", required_argument, NULL, 'n' },
		{ "family", required_argument, NULL, 'f' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "cport", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct fl_t_addr addr = { .family = AF_INET };
	unsigned long long total = 256ULL << 20, seed = 42;
	size_t wsize = 64 << 10, conns = 1, i, nst;
	struct fl_t_stream *st;
	int both = 0, c, *cfd, *sfd, r;
	double secs = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': total = fl_parse_size(optarg); break;
		case 's': wsize = (size_t)fl_parse_size(optarg); break;
		case 'B': both = 1; break;
		case 'n': conns = strtoul(optarg, NULL, 10); break;
		case 'f': addr.family = !strcmp(optarg, "6") ? AF_INET6 : AF_INET; break;
		case 'a': addr.addr = optarg; break;
		case 'p': addr.port = (uint16_t)atoi(optarg); break;
		case 'c': addr.cport = (uint16_t)atoi(optarg); break;
		case 'S': seed = strtoull(optarg, NULL, 10); break;
		case 'h': fputs(fl_stream_help, stdout); return 0;
		default: fputs(fl_stream_help, stderr); return 2;
		}
	}
	if (!total || !wsize || !conns || conns > 4096) {
		fprintf(stderr, "fl-stream: --bytes, --size and --conns (1..4096) must be positive\n");
		return 2;
	}
	cfd = calloc(conns, sizeof(int));
	sfd = calloc(conns, sizeof(int));
	nst = conns * (both ? 2 : 1);
	st = calloc(nst, sizeof(*st));
	if (!cfd || !sfd || !st)
		return 1;
	if (fl_t_tcp_pairs(&addr, conns, cfd, sfd)) {
		fprintf(stderr, "fl-stream: cannot connect %zu pairs: %s\n", conns, strerror(errno));
		return 1;
	}
	for (i = 0; i < conns; i++) {
		st[i] = (struct fl_t_stream){ .wfd = cfd[i], .rfd = sfd[i], .total = total,
					      .wsize = wsize, .seed = seed + 2 * i };
		if (both)
			st[conns + i] = (struct fl_t_stream){ .wfd = sfd[i], .rfd = cfd[i],
							      .total = total, .wsize = wsize,
							      .seed = seed + 2 * i + 1 };
	}
	r = fl_t_stream_run(st, nst);
	for (i = 0; i < nst; i++) {
		if (st[i].error || st[i].bad_offset >= 0 || st[i].received != st[i].total)
			fprintf(stderr, "fl-stream: stream %zu broken: received %llu of %llu, first bad "
				"byte %lld, errno %d\n", i, (unsigned long long)st[i].received,
				(unsigned long long)st[i].total, (long long)st[i].bad_offset,
				st[i].error);
		if (st[i].seconds > secs)
			secs = st[i].seconds;
	}
	if (r)
		return 1;
	printf("bytes=%llu seconds=%.3f mbps=%.0f\n", total * nst, secs,
	       (double)(total * nst) / secs / 1e6);
	for (i = 0; i < conns; i++) {
		close(cfd[i]);
		close(sfd[i]);
	}
	free(cfd);
	free(sfd);
	free(st);
	return 0;
}
