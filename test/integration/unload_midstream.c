// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unload_midstream - "fastlocal unload" while enrolled pairs stream loses no
 * byte: the shim holds the sockhash, so the kernel keeps the map, the
 * program and every queued byte until the sockets close.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fltest.h"
#include "fltest_netns.h"

#define MiB (1024ULL * 1024ULL)
#define PAIRS 4

static int fl_unload_status = -1;

static void fl_unload(void *arg)
{
	(void)arg;
	fl_unload_status = fl_t_sh("'%s' unload >/dev/null", fl_t_cli());
}

static int test_unload_while_streaming_loses_nothing(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	struct fl_t_stream st[2 * PAIRS];
	int c[PAIRS], s[PAIRS], i;
	uint64_t seg0, segs;

	FL_T_CHECK(enroll, "cannot load the shim");
	memset(st, 0, sizeof(st));
	for (i = 0; i < PAIRS; i++) {
		FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c[i], &s[i]) == 0, "no loopback pair");
		FL_T_CHECK(enroll(c[i]) == 0 && enroll(s[i]) == 0, "enrolling pair %d failed", i);
		st[2 * i] = (struct fl_t_stream){ .wfd = c[i], .rfd = s[i], .total = 32 * MiB,
						  .wsize = 16384, .seed = 10 + (uint64_t)i };
		st[2 * i + 1] = (struct fl_t_stream){ .wfd = s[i], .rfd = c[i], .total = 32 * MiB,
						      .wsize = 1000, .seed = 20 + (uint64_t)i };
	}
	/* The first stream's writer unloads a quarter of the way through. */
	st[0].hook_at = 8 * MiB;
	st[0].hook = fl_unload;
	seg0 = fl_t_tcp_outsegs();
	FL_T_CHECK(fl_t_stream_run(st, 2 * PAIRS) == 0, "a stream lost or reordered bytes");
	segs = fl_t_tcp_outsegs() - seg0;
	FL_T_CHECK(fl_unload_status == 0, "fastlocal unload failed mid-stream");
	FL_T_CHECK(fl_t_status_u64("enrolled_sockets") == 0 && fl_t_sh("'%s' status >/dev/null",
		   fl_t_cli()) == 3, "status does not say 'not loaded' after unload");
	/* Still redirected after the unload: TCP carried (almost) nothing. */
	printf("  %d pairs, 256 MiB in all, %llu TCP segments\n", PAIRS, (unsigned long long)segs);
	FL_T_CHECK(segs < 100, "%llu TCP segments: the pairs fell back to TCP",
		   (unsigned long long)segs);
	for (i = 0; i < PAIRS; i++) {
		close(c[i]);
		close(s[i]);
	}
	return 0;
}

int main(void)
{
	if (fl_t_private_netns()) {
		perror("unload_midstream: cannot create a private network namespace");
		return 1;
	}
	FL_T_RUN("unload while 4 enrolled pairs stream both ways loses no byte",
		 test_unload_while_streaming_loses_nothing);
	return fl_t_exit_status();
}
