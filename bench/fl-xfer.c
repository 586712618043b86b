// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-xfer - a verified transfer between two processes, through whatever is
 * in between (a proxy): a plain socket program.
 *
 *   fl-xfer serve PORT BYTES   accept one connection, send BYTES of the
 *                              pattern, close
 *   fl-xfer fetch PORT BYTES   connect, read until EOF, check every byte
 *                              and that exactly BYTES came
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "fltest.h"

static int fl_serve(int port, uint64_t bytes)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static uint8_t buf[1 << 16];
	uint64_t off = 0;
	int l = socket(AF_INET, SOCK_STREAM, 0), c, one = 1;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4)) {
		perror("fl-xfer serve");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0)
		return 1;
	while (off < bytes) {
		size_t n = bytes - off < sizeof(buf) ? (size_t)(bytes - off) : sizeof(buf), done = 0;

		fl_t_pattern(buf, off, n, 77);
		while (done < n) {
			ssize_t w = write(c, buf + done, n - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				perror("fl-xfer serve: write");
				return 1;
			}
			done += (size_t)w;
		}
		off += n;
	}
	close(c);
	close(l);
	return 0;
}

static int fl_fetch(int port, uint64_t bytes)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static uint8_t buf[1 << 16];
	uint64_t got = 0;
	int c = socket(AF_INET, SOCK_STREAM, 0);
	double t0 = fl_t_now();

	if (connect(c, (struct sockaddr *)&a, sizeof(a))) {
		perror("fl-xfer fetch: connect");
		return 1;
	}
	for (;;) {
		ssize_t r = read(c, buf, sizeof(buf));
		int64_t bad;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			perror("fl-xfer fetch: read");
			return 1;
		}
		if (r == 0)
			break;
		bad = fl_t_pattern_check(buf, got, (size_t)r, 77);
		if (bad >= 0) {
			fprintf(stderr, "fl-xfer fetch: wrong byte at offset %lld\n", (long long)bad);
			return 1;
		}
		got += (uint64_t)r;
	}
	printf("bytes=%llu seconds=%.3f\n", (unsigned long long)got, fl_t_now() - t0);
	if (got != bytes) {
		fprintf(stderr, "fl-xfer fetch: %llu bytes, expected %llu\n", (unsigned long long)got,
			(unsigned long long)bytes);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: fl-xfer serve|fetch PORT BYTES\n");
		return 2;
	}
	if (!strcmp(argv[1], "serve"))
		return fl_serve(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	if (!strcmp(argv[1], "fetch"))
		return fl_fetch(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	return 2;
}
