// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fl-stream - one verified loopback stream, plain or with both ends enrolled.
 *
 * Used by "make demo" and by the tests. Client and server live in this
 * process (two threads); every byte read is checked against the pattern.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fltest.h"

static const char fl_stream_help[] =
	"Usage: fl-stream [--enroll] [--bytes N[K|M|G]] [--size N[K|M]] [--family 4|6]\n"
	"\n"
	"Streams N bytes (default 256M) in writes of --size bytes (default 64K) from a\n"
	"client to a server over loopback, verifies every byte, and prints\n"
	"  bytes=N seconds=S mbps=M\n"
	"--enroll puts both ends in the fastlocal sockhash (the pins in\n"
	"$FASTLOCAL_PIN_DIR) through the shim's fastlocal_enroll_fd.\n";

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

/* The shim next to this executable, unless FL_TEST_LIB says otherwise. */
static void fl_default_lib(void)
{
	char exe[PATH_MAX], lib[PATH_MAX + 32];
	ssize_t n;

	if (getenv("FL_TEST_LIB"))
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(lib, sizeof(lib), "%s/libfastlocal.so", dirname(exe));
	setenv("FL_TEST_LIB", lib, 0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "enroll", no_argument, NULL, 'e' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "family", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct fl_t_stream st = { .total = 256ULL << 20, .wsize = 64 << 10, .seed = 42 };
	int enroll = 0, family = AF_INET, c, cfd, sfd, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'e': enroll = 1; break;
		case 'b': st.total = fl_parse_size(optarg); break;
		case 's': st.wsize = (size_t)fl_parse_size(optarg); break;
		case 'f': family = !strcmp(optarg, "6") ? AF_INET6 : AF_INET; break;
		case 'h': fputs(fl_stream_help, stdout); return 0;
		default: fputs(fl_stream_help, stderr); return 2;
		}
	}
	if (!st.total || !st.wsize) {
		fprintf(stderr, "fl-stream: --bytes and --size must be positive sizes\n");
		return 2;
	}
	if (fl_t_tcp_pair(family, &cfd, &sfd)) {
		fprintf(stderr, "fl-stream: cannot make a loopback pair: %s\n", strerror(errno));
		return 1;
	}
	if (enroll) {
		fl_t_enroll_fn fn;

		fl_default_lib();
		fn = fl_t_enroll();
		if (!fn) {
			fprintf(stderr, "fl-stream: cannot load the shim\n");
			return 1;
		}
		if ((r = fn(cfd)) || (r = fn(sfd))) {
			fprintf(stderr, "fl-stream: enrolling failed: %s\n", strerror(-r));
			return 1;
		}
	}
	st.wfd = cfd;
	st.rfd = sfd;
	r = fl_t_stream_run(&st, 1);
	if (r) {
		fprintf(stderr, "fl-stream: stream broken: received %llu of %llu, first bad byte %lld, "
			"errno %d\n", (unsigned long long)st.received, (unsigned long long)st.total,
			(long long)st.bad_offset, st.error);
		return 1;
	}
	printf("bytes=%llu seconds=%.3f mbps=%.0f\n", (unsigned long long)st.total, st.seconds,
	       (double)st.total / st.seconds / 1e6);
	return 0;
}
