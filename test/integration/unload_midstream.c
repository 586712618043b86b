// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unload_midstream - nothing is lost when fastlocal is unloaded under live
 * traffic or when a writer dies (docs/kernel.md#loss, #psock-holds).
 *
 * The shim holds the sockhash for as long as the process lives, so the
 * kernel keeps the map, the program and every queued byte after the pins
 * are gone; new connections simply stop being enrolled.
 *
 * Both are about connections already redirecting: each pair is warmed up
 * first (fl_t_warmup), which enrolls it in the default configuration.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "fltest.h"
#include "fltest_netns.h"

#define MiB (1024ULL * 1024ULL)
#define PAIRS 8

static int fl_unload_status = -1;

static void fl_unload(void *arg)
{
	(void)arg;
	fl_unload_status = fl_t_sh("'%s' unload >/dev/null", fl_t_cli());
}

static int test_unload_while_streaming_loses_nothing(void)
{
	struct fl_t_stream st[2 * PAIRS];
	int c[PAIRS], s[PAIRS], i;
	uint64_t seg0, segs, red0;

	memset(st, 0, sizeof(st));
	red0 = fl_t_status_u64("redirected_bytes");
	for (i = 0; i < PAIRS; i++) {
		FL_T_CHECK(fl_t_tcp_pair(i % 2 ? AF_INET6 : AF_INET, &c[i], &s[i]) == 0 &&
			   fl_t_warmup(c[i], s[i]) == 0, "no pair");
		st[2 * i] = (struct fl_t_stream){ .wfd = c[i], .rfd = s[i], .total = 32 * MiB,
						  .wsize = 16384, .seed = 10 + (uint64_t)i };
		st[2 * i + 1] = (struct fl_t_stream){ .wfd = s[i], .rfd = c[i], .total = 32 * MiB,
						      .wsize = 1000, .seed = 20 + (uint64_t)i };
	}
	/* Warm up so that every pair is redirecting, then unload mid-stream. */
	st[0].hook_at = 8 * MiB;
	st[0].hook = fl_unload;
	seg0 = fl_t_tcp_outsegs();
	FL_T_CHECK(fl_t_stream_run(st, 2 * PAIRS) == 0, "a stream lost or reordered bytes");
	segs = fl_t_tcp_outsegs() - seg0;
	FL_T_CHECK(fl_unload_status == 0, "fastlocal unload failed mid-stream");
	FL_T_CHECK(fl_t_sh("'%s' status >/dev/null", fl_t_cli()) == 3,
		   "status does not say 'not loaded' after unload");
	printf("  %d pairs, %d MiB in all, %llu TCP segments after starting\n", PAIRS,
	       PAIRS * 64, (unsigned long long)segs);
	/* Still redirected after the unload: TCP carried (almost) nothing. */
	FL_T_CHECK(segs < 200, "%llu TCP segments: the pairs fell back to TCP",
		   (unsigned long long)segs);
	for (i = 0; i < PAIRS; i++) {
		close(c[i]);
		close(s[i]);
	}
	(void)red0;
	return 0;
}

/* After unload, a new connection in this process (which still holds the
 * old maps) is not enrolled: sockops is detached, so it has no ISN record. */
static int test_new_connections_after_unload_stay_on_tcp(void)
{
	struct fl_t_stream st = { .total = 4 * MiB, .wsize = 65536, .seed = 77 };
	uint64_t seg0 = fl_t_tcp_outsegs();
	int c, s;

	FL_T_CHECK_EQ(fl_t_sh("'%s' status >/dev/null", fl_t_cli()), 3, "still loaded?");
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no pair");
	st.wfd = c;
	st.rfd = s;
	FL_T_CHECK(fl_t_stream_run(&st, 1) == 0, "stream not byte-exact");
	FL_T_CHECK_GT(fl_t_tcp_outsegs() - seg0, 40, "the new connection did not use TCP");
	close(c);
	close(s);
	FL_T_CHECK_EQ(fl_t_sh("'%s' load >/dev/null", fl_t_cli()), 0, "reload failed");
	return 0;
}

/*
 * A writer that dies (SIGKILL, no close) after its writes returned loses
 * none of them: they sit in the reader's queue, then the reader sees EOF.
 * The dead socket's slot is given back by sockops when the socket closes.
 */
static int test_killed_writer_loses_nothing(void)
{
	struct fl_t_stream st = { .total = 16 * MiB, .wsize = 65536, .seed = 99 };
	uint64_t red0 = fl_t_status_u64("redirected_bytes"), slots0 = fl_t_status_u64("slots_used");
	int c, s, pfd[2], status;
	pid_t pid;
	char b;

	/* IMPORTANT: redirecting before the writer starts: over TCP its 16 MiB
	 * would block in write() on a reader that reads only after it died. */
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0 && fl_t_warmup(c, s) == 0 && pipe(pfd) == 0,
		   "setup");
	pid = fork();
	FL_T_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		uint8_t *buf = malloc(st.total);

		close(s);
		fl_t_pattern(buf, 0, st.total, st.seed);
		for (uint64_t off = 0; off < st.total;) {
			ssize_t w = write(c, buf + off, st.total - off);

			if (w <= 0)
				_exit(3);
			off += (uint64_t)w;
		}
		(void)!write(pfd[1], "w", 1); /* all written; now die without closing */
		pause();
		_exit(0);
	}
	close(c);
	FL_T_CHECK(read(pfd[0], &b, 1) == 1, "the writer did not finish");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* Read everything and then EOF. */
	{
		uint8_t *in = malloc(st.total + 1);
		uint64_t got = 0;
		ssize_t r;

		while ((r = read(s, in + got, st.total + 1 - got)) > 0)
			got += (uint64_t)r;
		FL_T_CHECK(r == 0, "no clean EOF after the data (read returned %zd)", r);
		FL_T_CHECK(got == st.total, "read %llu of %llu bytes", (unsigned long long)got,
			   (unsigned long long)st.total);
		FL_T_CHECK_LT(fl_t_pattern_check(in, 0, got, st.seed), 0, "bytes changed");
		free(in);
	}
	close(s);
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") - red0 >= st.total,
		   "the writer's bytes were not redirected");
	usleep(100 * 1000);
	FL_T_CHECK(fl_t_status_u64("slots_used") <= slots0,
		   "slots in use went from %llu to %llu: the dead socket's slot leaked",
		   (unsigned long long)slots0, (unsigned long long)fl_t_status_u64("slots_used"));
	close(pfd[0]);
	close(pfd[1]);
	return 0;
}

int main(void)
{
	if (fl_t_private_netns()) {
		perror("unload_midstream: cannot create a private network namespace");
		return 1;
	}
	FL_T_RUN("a writer killed after writing loses nothing and leaks no slot",
		 test_killed_writer_loses_nothing);
	FL_T_RUN("unload while 8 pairs stream both ways loses no byte",
		 test_unload_while_streaming_loses_nothing);
	FL_T_RUN("after unload new connections are not enrolled",
		 test_new_connections_after_unload_stay_on_tcp);
	return fl_t_exit_status();
}
